/**
 * Yielding to Node's event loop in long loops of work done in the background (the search index
 * of thousands of skills, thousands of file watches): `Effect.yieldNow` gives way to other fibers
 * only (it resumes on a microtask), so a request that arrived, or a file watcher's events, would
 * wait for the whole loop. `sliced` gives way to them every few milliseconds.
 */
import * as Effect from "effect/Effect"

/** Work done between two turns of the event loop, in ms. */
export const SLICE_MS = 2

/** Lets the event loop run the I/O callbacks already due, then resumes. */
const nextIoTurn: Effect.Effect<void> = Effect.async<void>((resume) => {
  const handle = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(handle))
})

/** Runs `step` on each item in order, giving way to the event loop whenever a slice has taken SLICE_MS. */
export const sliced = <A>(items: ReadonlyArray<A>, step: (item: A) => void): Effect.Effect<void> =>
  Effect.gen(function* () {
    let sliceStart = performance.now()
    for (let index = 0; index < items.length; index++) {
      step(items[index] as A)
      if (index + 1 < items.length && performance.now() - sliceStart >= SLICE_MS) {
        yield* nextIoTurn
        sliceStart = performance.now()
      }
    }
  })
