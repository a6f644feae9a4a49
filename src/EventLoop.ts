/**
 * Yielding to Node's event loop. `Effect.yieldNow` gives way to other fibers only (it resumes
 * on a microtask), so long loops that must let requests and file-watch events through yield
 * with `nextIoTurn` instead, and `sliced` runs such a loop in short slices of time.
 */
import { Effect } from "effect"

/**
 * Lets the event loop run the I/O callbacks already due (a request that arrived, a file
 * watcher's events), then resumes.
 */
export const nextIoTurn: Effect.Effect<void> = Effect.async<void>((resume) => {
  const handle = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(handle))
})

/**
 * Work done between two yields, in ms: a request that arrives meanwhile waits at most about
 * this long per turn of the event loop it needs, per task in the background (right after
 * start-up: the search index, the watches, the check after them). A `get_skill` needs about
 * five turns: with 0.5 ms slices, requests in the first half second after `initialize` took
 * 9 to 13 ms (p50, 10,000 skills), with 0.2 ms about 5.5; at rest the background work then
 * took 740 ms against 580 to 760 ms.
 */
export const SLICE_MS = 0.2

/**
 * Runs `step` on each item in order, yielding to the event loop whenever a slice has taken
 * SLICE_MS. Stops at the first step that answers false, and answers whether every step passed.
 */
export const sliced = <A>(items: ReadonlyArray<A>, step: (item: A) => boolean): Effect.Effect<boolean> =>
  Effect.gen(function* () {
    let sliceStart = performance.now()
    for (const item of items) {
      if (!step(item)) return false
      if (performance.now() - sliceStart >= SLICE_MS) {
        yield* nextIoTurn
        sliceStart = performance.now()
      }
    }
    return true
  })
