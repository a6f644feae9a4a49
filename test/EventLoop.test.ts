import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { makeCalls, PAUSE_MS, SLICE_MS, sliced, whenCallsPause } from "../src/platform/EventLoop.js"

/** A step that outlasts a slice, so that each item ends one. */
const slowStep = (done: Array<number>) => (item: number) => {
  const started = performance.now()
  while (performance.now() - started < SLICE_MS * 1.5) {}
  done.push(item)
}

describe("sliced", () => {
  it.live("runs every step in order, and lets I/O callbacks due meanwhile run between slices", () =>
    Effect.gen(function* () {
      const done: Array<number> = []
      const seen: Array<number> = []
      // An I/O callback already due: it runs before the loop ends, not after it.
      setImmediate(() => seen.push(done.length))
      yield* sliced([1, 2, 3, 4], slowStep(done))
      expect(done).toEqual([1, 2, 3, 4])
      expect(seen).toHaveLength(1)
      expect(seen[0]).toBeLessThan(4)
    }),
  )
})

describe("sliced, with a wait between slices", () => {
  it.live("waits for `between` after each slice, before the next item", () =>
    Effect.gen(function* () {
      const order: Array<string> = []
      const done: Array<number> = []
      const step = slowStep(done)
      yield* sliced(
        [1, 2, 3],
        (item) => {
          step(item)
          order.push(`item ${item}`)
        },
        Effect.sync(() => order.push("between")),
      )
      // Each item outlasts a slice: a wait after each but the last.
      expect(order).toEqual(["item 1", "between", "item 2", "between", "item 3"])
    }),
  )
})

describe("whenCallsPause", () => {
  it("goes ahead at once when no call was ever made, or when `unless` holds; waits while a call is in flight", () => {
    const calls = makeCalls()
    expect(Exit.isSuccess(Effect.runSyncExit(whenCallsPause(calls)))).toBe(true)
    const ended = calls.begin()
    // Waiting: not done synchronously.
    expect(Exit.isSuccess(Effect.runSyncExit(whenCallsPause(calls)))).toBe(false)
    expect(Exit.isSuccess(Effect.runSyncExit(whenCallsPause(calls, () => true)))).toBe(true)
    ended()
    // Just ended: calls have not paused long enough yet.
    expect(Exit.isSuccess(Effect.runSyncExit(whenCallsPause(calls)))).toBe(false)
  })

  it.live("resumes once calls pause", () =>
    Effect.gen(function* () {
      const calls = makeCalls()
      calls.begin()() // a call made and ended just now
      yield* whenCallsPause(calls)
      expect(calls.quietFor()).toBeGreaterThanOrEqual(PAUSE_MS)
    }),
  )
})
