/**
 * Yielding to Node's event loop. `Effect.yieldNow` gives way to other fibers only (it resumes
 * on a microtask), so long loops that must let requests and file-watch events through between
 * slices yield with `nextIoTurn` instead.
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
