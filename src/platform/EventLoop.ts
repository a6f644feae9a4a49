/**
 * Yielding to Node's event loop. `Effect.yieldNow` gives way to other fibers only (it resumes
 * on a microtask), so long loops that must let requests and file-watch events through yield
 * with `nextIoTurn` instead, and `sliced` runs such a loop in short slices of time.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"

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
 * How long the oldest request still unanswered has waited, in ms (0: none is waiting). The
 * server sets it on the fibers it forks for background work, and whatever those fork inherits
 * it; work forked from a request (the index build a first query starts, the check after the
 * watches a subscription completes) and every other fiber sees no request waiting.
 */
export const RequestWait = FiberRef.unsafeMake<() => number>(() => 0)

/**
 * A background slice holds back while the oldest unanswered request is younger than this: a
 * request at rest takes 1 to 3 ms. One that waits longer may be waiting for the background
 * work itself (the first query, for the search index; a request that needs the catalog's lock
 * while the check after the watches holds it), which then goes on at full speed.
 */
export const REQUEST_GRACE_MS = 10

/**
 * How many times a background slice holds back, 1 ms each, before it runs anyway: under a
 * steady stream of requests the background work still gets a slice every 2 ms or so, and
 * runs freely between requests (at 10,000 skills, with `get_skill` called back to back, the
 * watches were all in place after 1.1 s instead of 0.4 to 0.6 s).
 */
export const HOLD_BACK_STEPS = 2

const HOLD_BACK_STEP = Duration.millis(1)

/** Waits while a young request is unanswered, at most HOLD_BACK_STEPS times 1 ms. */
const holdBack = (requestWait: () => number): Effect.Effect<void> =>
  Effect.gen(function* () {
    for (let step = 0; step < HOLD_BACK_STEPS; step++) {
      const waited = requestWait()
      if (waited === 0 || waited >= REQUEST_GRACE_MS) return
      yield* Effect.sleep(HOLD_BACK_STEP)
    }
  })

/**
 * Slices of work someone waits for (the first query waits for the search index): long enough
 * that yielding costs little, short enough that other requests still get through.
 */
export const URGENT_SLICE_MS = 2

const never = () => false

/**
 * Runs `step` on each item in order, yielding to the event loop whenever a slice has taken
 * SLICE_MS (URGENT_SLICE_MS while `urgent()`), and holding back for requests in flight unless
 * urgent (see RequestWait). Stops at the first step that answers false, and answers whether
 * every step passed.
 */
export const sliced = <A>(
  items: ReadonlyArray<A>,
  step: (item: A) => boolean,
  urgent: () => boolean = never,
): Effect.Effect<boolean> =>
  Effect.gen(function* () {
    const requestWait = yield* FiberRef.get(RequestWait)
    let sliceStart = performance.now()
    let left = items.length
    for (const item of items) {
      left--
      if (!step(item)) return false
      const elapsed = performance.now() - sliceStart
      // No yield after the last item: what waits for the loop's end gets it at once.
      if (left > 0 && elapsed >= SLICE_MS && (elapsed >= URGENT_SLICE_MS || !urgent())) {
        yield* nextIoTurn
        if (!urgent()) yield* holdBack(requestWait)
        sliceStart = performance.now()
      }
    }
    return true
  })
