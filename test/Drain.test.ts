/**
 * After end of input the server answers what it has read: it waits while the client keeps
 * taking answers, and gives up on requests, or a client, that make no progress (real timers,
 * short stall window).
 */
import { PassThrough } from "node:stream"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { drain } from "../src/mcp/Serve.js"
import { LineTransport } from "../src/mcp/Transport.js"
import { heldOutput } from "./support/streams.js"

const STALL_MS = 80

describe("drain after end of input", () => {
  it.live("is done at once when nothing is pending", () =>
    Effect.gen(function* () {
      const outcome = yield* drain({ whenIdle: () => Promise.resolve(), lastFlushed: 0 }, STALL_MS)
      expect(outcome).toBe("drained")
    }),
  )

  it.live("waits past the stall window while answers keep going out", () =>
    Effect.gen(function* () {
      const transport = { lastFlushed: performance.now(), whenIdle: () => idle }
      // Answers every 20 ms for 5 stall windows, then idle.
      const ticking = setInterval(() => {
        transport.lastFlushed = performance.now()
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
      expect(yield* drain({ whenIdle: () => never, lastFlushed: 0 }, STALL_MS)).toBe("stalled")
    }),
  )

  /** A transport answering each request at once, on an output that takes lines when told. */
  const answering = async (count: number) => {
    const input = new PassThrough()
    const held = heldOutput()
    const transport = new LineTransport(input, held.output)
    transport.onmessage = (message) => {
      if ("id" in message && message.id !== undefined)
        void transport.send({ jsonrpc: "2.0", id: message.id, result: {} })
    }
    await transport.start()
    input.end(
      Array.from({ length: count }, (_, i) => `{"jsonrpc":"2.0","id":${i},"method":"ping"}\n`).join(""),
    )
    await new Promise((resolve) => setImmediate(resolve))
    return { transport, ...held }
  }

  it.live("delivers every answer to a client that reads slowly, past the stall window", () =>
    Effect.gen(function* () {
      const { transport, taken, take } = yield* Effect.promise(() => answering(10))
      // One answer taken every 20 ms: 10 answers take 2.5 stall windows.
      const reading = setInterval(take, 20)
      const outcome = yield* drain(transport, STALL_MS)
      clearInterval(reading)
      expect(outcome).toBe("drained")
      expect(taken.map((line) => line.id)).toEqual(Array.from({ length: 10 }, (_, i) => i))
    }),
  )

  it.live("gives up on a client that stopped reading", () =>
    Effect.gen(function* () {
      const { transport, taken, take } = yield* Effect.promise(() => answering(10))
      take()
      yield* Effect.promise(() => new Promise((resolve) => setImmediate(resolve)))
      take()
      expect(yield* drain(transport, STALL_MS)).toBe("stalled")
      expect(taken).toHaveLength(2)
      // The third answer is written, and waits for a reader that is gone.
      expect(transport.pending).toBe(1)
      expect(transport.unanswered).toBe(0)
    }),
  )
})
