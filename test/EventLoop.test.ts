import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import {
  HOLD_BACK_STEPS,
  nextIoTurn,
  REQUEST_GRACE_MS,
  RequestWait,
  SLICE_MS,
  sliced,
  URGENT_SLICE_MS,
} from "../src/platform/EventLoop.js"

/** A step that outlasts a slice (of `sliceMs`), so that each item ends one; records the items done. */
const slowStep =
  (done: Array<number>, sliceMs = SLICE_MS) =>
  (item: number) => {
    const started = performance.now()
    let spins = 0
    while (performance.now() - started < sliceMs * 1.5) spins++
    done.push(item)
    return spins >= 0
  }

/** Turns of the event loop: the forked loop goes as far as it can without the clock moving. */
const letRun = Effect.repeatN(nextIoTurn, 20)

const items = [1, 2, 3]

describe("sliced", () => {
  it.effect("runs every slice at once when no request waits, one waited long, or the work is urgent", () =>
    Effect.gen(function* () {
      // The test clock never moves here: a slice that held back would never finish.
      for (const wait of [() => 0, () => REQUEST_GRACE_MS, () => 60_000]) {
        const done: Array<number> = []
        const passed = yield* sliced(items, slowStep(done)).pipe(Effect.locally(RequestWait, wait))
        expect(passed).toBe(true)
        expect(done).toEqual(items)
      }
      // Work someone waits for does not hold back, even for a young request.
      const urgent: Array<number> = []
      const passed = yield* sliced(items, slowStep(urgent, URGENT_SLICE_MS), () => true).pipe(
        Effect.locally(RequestWait, () => 1),
      )
      expect(passed).toBe(true)
      expect(urgent).toEqual(items)
      // Nor does the last slice: what waits for the loop's end gets it at once.
      const single: Array<number> = []
      expect(yield* sliced([1], slowStep(single)).pipe(Effect.locally(RequestWait, () => 1))).toBe(true)
      expect(single).toEqual([1])
      // Outside the server's background work, no request is ever waiting.
      const done: Array<number> = []
      expect(yield* sliced(items, slowStep(done))).toBe(true)
      expect(done).toEqual(items)
    }),
  )

  it.effect("holds back while a request younger than the grace waits, a bounded number of 1 ms steps", () =>
    Effect.gen(function* () {
      const done: Array<number> = []
      const fiber = yield* sliced(items, slowStep(done)).pipe(
        Effect.locally(RequestWait, () => 1),
        Effect.fork,
      )
      yield* letRun
      expect(done).toEqual([1])
      for (let step = 1; step < HOLD_BACK_STEPS; step++) {
        yield* TestClock.adjust("1 millis")
        yield* letRun
        expect(done).toEqual([1])
      }
      // The last step: the slice runs anyway, however long requests keep coming.
      yield* TestClock.adjust("1 millis")
      yield* letRun
      expect(done).toEqual([1, 2])
      // And so on to the end, one millisecond at a time.
      for (let step = 0; step < 10 * HOLD_BACK_STEPS && Option.isNone(yield* Fiber.poll(fiber)); step++) {
        yield* TestClock.adjust("1 millis")
        yield* letRun
      }
      expect(yield* Fiber.join(fiber)).toBe(true)
      expect(done).toEqual(items)
    }),
  )
})
