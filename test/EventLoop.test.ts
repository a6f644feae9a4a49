import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { SLICE_MS, sliced } from "../src/platform/EventLoop.js"

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
