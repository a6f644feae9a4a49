/**
 * After end of input the server answers what it has read: it waits while answers keep going
 * out, and gives up on requests that make no progress (real timers, short stall window).
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { drain } from "../src/mcp/Server.js"

const STALL_MS = 80

describe("drain after end of input", () => {
  it.live("is done at once when nothing is pending", () =>
    Effect.gen(function* () {
      const outcome = yield* drain({ whenIdle: () => Promise.resolve(), lastSent: 0 }, STALL_MS)
      expect(outcome).toBe("drained")
    }),
  )

  it.live("waits past the stall window while answers keep going out", () =>
    Effect.gen(function* () {
      const transport = { lastSent: performance.now(), whenIdle: () => idle }
      // Answers every 20 ms for 5 stall windows, then idle.
      const ticking = setInterval(() => {
        transport.lastSent = performance.now()
      }, 20)
      const idle = new Promise<void>((resolve) =>
        setTimeout(() => {
          clearInterval(ticking)
          resolve()
        }, STALL_MS * 5),
      )
      expect(yield* drain(transport, STALL_MS)).toBe("drained")
    }),
  )

  it.live("gives up once no answer has gone out for the stall window", () =>
    Effect.gen(function* () {
      const never = new Promise<void>(() => undefined)
      expect(yield* drain({ whenIdle: () => never, lastSent: 0 }, STALL_MS)).toBe("stalled")
    }),
  )
})
