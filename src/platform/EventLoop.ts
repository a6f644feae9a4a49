/**
 * Giving way to requests in work done in the background (the search index of thousands of skills,
 * thousands of file watches):
 * - `sliced` yields to Node's event loop every few milliseconds of a long loop: `Effect.yieldNow`
 *   gives way to other fibers only (it resumes on a microtask), so a request that arrived, or a
 *   file watcher's events, would wait for the whole loop;
 * - `whenCallsPause` holds work that can wait (the search index's build and its SKILL.md bodies,
 *   the check of folders newly watched) until calls pause: a host syncing the whole catalog, or an
 *   agent's burst of calls, is answered first.
 */
import * as Effect from "effect/Effect"

/** Work done between two turns of the event loop, in ms. */
export const SLICE_MS = 2

/** Lets the event loop run the I/O callbacks already due, then resumes. */
const nextIoTurn: Effect.Effect<void> = Effect.async<void>((resume) => {
  const handle = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(handle))
})

/**
 * Runs `step` on each item in order, giving way to the event loop whenever a slice has taken
 * SLICE_MS, and then waiting for `between` (if given) before the next slice.
 */
export const sliced = <A>(
  items: ReadonlyArray<A>,
  step: (item: A) => void,
  between: Effect.Effect<void> = Effect.void,
): Effect.Effect<void> =>
  Effect.gen(function* () {
    let sliceStart = performance.now()
    for (let index = 0; index < items.length; index++) {
      step(items[index] as A)
      if (index + 1 < items.length && performance.now() - sliceStart >= SLICE_MS) {
        yield* nextIoTurn
        yield* between
        sliceStart = performance.now()
      }
    }
  })

/**
 * The calls a server is answering: how many are in flight, and since when none has been. The
 * MCP boundary (src/mcp/Run.ts) counts every request it runs.
 */
export const makeCalls = () => {
  let inFlight = 0
  let lastEnded = Number.NEGATIVE_INFINITY
  return {
    /** A call begins; the function returned ends it (once). */
    begin: (): (() => void) => {
      inFlight++
      let ended = false
      return () => {
        if (ended) return
        ended = true
        inFlight--
        lastEnded = performance.now()
      }
    },
    /** How long no call has been in flight (ms), 0 while one is. */
    quietFor: (): number => (inFlight > 0 ? 0 : performance.now() - lastEnded),
  }
}
export type Calls = ReturnType<typeof makeCalls>

/**
 * Calls are paused once none has been in flight for this long (ms): the calls of a sync or of a
 * burst follow each other within a millisecond or two, an agent's come seconds apart.
 */
export const PAUSE_MS = 25
/**
 * Work waiting for a pause goes ahead anyway after this long (ms), so that it still advances,
 * a step at a time, under calls that never pause.
 */
export const MAX_PAUSE_WAIT_MS = 250

/**
 * Waits until calls pause (`PAUSE_MS` without one in flight), or `MAX_PAUSE_WAIT_MS` have passed,
 * or `unless` holds (checked as often as the calls: a call now waits for the work).
 */
export const whenCallsPause = (calls: Calls, unless: () => boolean = () => false): Effect.Effect<void> =>
  Effect.suspend(() => {
    if (calls.quietFor() >= PAUSE_MS || unless()) return Effect.void
    const since = performance.now()
    return Effect.async<void>((resume) => {
      let timer: NodeJS.Timeout | undefined
      const check = () => {
        const quiet = calls.quietFor()
        const waited = performance.now() - since
        if (quiet >= PAUSE_MS || waited >= MAX_PAUSE_WAIT_MS || unless()) return resume(Effect.void)
        // Checked again when a pause could be long enough, or when the wait is up.
        timer = setTimeout(check, Math.min(PAUSE_MS - quiet, MAX_PAUSE_WAIT_MS - waited)).unref()
      }
      check()
      return Effect.sync(() => clearTimeout(timer))
    })
  })
