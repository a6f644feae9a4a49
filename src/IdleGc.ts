/**
 * IdleGc: does the garbage collector's big work while nothing waits for the server.
 *
 * V8 grows its heap to absorb a flood of requests and, with no more allocation to trigger a
 * collection, keeps it; and what start-up work and bursts leave behind is collected by a full
 * collection later, in the middle of whatever request happens to be running then. At 10,000
 * skills, 400 requests made after 4 s at rest met such a collection in each of three runs (the
 * slowest took 13.6 to 16.5 ms); after one full collection made beforehand at rest, none did
 * (the slowest took 7.2 to 8.6 ms).
 *
 * So once the server is idle (no request came in since the last look, none is in flight, the
 * start-up work in the background is over, and the heap is not growing), one full collection
 * runs when it is worth it: after a burst of requests, or once the heap has grown by
 * GROWTH_BYTES since the last one (the start-up work counts as growth). The start-up work is
 * waited for by name, not only by the heap's growth: at 10,000 skills the collection had
 * come in a lull of it (the check after the watches, which allocates slowly), about 1.4 s
 * after start, and what the rest of it left made V8 collect again (2.5 to 8.2 ms) during the
 * 400 requests that followed in each of four runs; waiting for it by name, in two of six.
 * It never runs while requests are in flight, but one that arrives during it waits: a
 * collection took 25 to 32 ms at 10,000 skills (11 ms at 10). Looking costs a read of the
 * heap's size every CHECK_MS, idle or not. The first look after start-up also ends the faster
 * growth of the old generation during it (`endStartUp`).
 * Only the executable runs this (`serve({ idleGc: true })`): it acts on the whole process.
 */
import { setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"
import { endStartUp, userGaveNodeFlag } from "./HeapTuning.js"

const isFunction = (value: unknown): value is () => void => typeof value === "function"

/**
 * The isolate's `gc()`, obtained without the `--expose-gc` command-line flag; null if refused.
 * The flag is needed only while the context that hands it out is made, and is turned off again
 * at once: V8 records the flags in the launcher's code cache and rejects a cache made under
 * other flags than a start has (every start would then rewrite it).
 */
const collector = (): (() => void) | null => {
  try {
    setFlagsFromString("--expose-gc")
    const gc: unknown = runInNewContext("gc")
    return isFunction(gc) ? gc : null
  } catch {
    return null
  } finally {
    if (!userGaveNodeFlag(/--expose[-_]gc\b/)) setFlagsFromString("--no-expose-gc")
  }
}

/** `collector`'s answer, obtained once per process (`collector` makes a context each time). */
let obtained: (() => void) | null | undefined
const isolateGc = (): (() => void) | null => {
  if (obtained === undefined) obtained = collector()
  return obtained
}

/** Heap in use as the handshake completes from which `collectAtHandshake` collects. */
export const HANDSHAKE_BYTES = 32 * 1024 * 1024

/**
 * One full collection as the handshake completes (the client's `notifications/initialized`),
 * before the start-up work in the background begins, when the heap in use is at least
 * HANDSHAKE_BYTES; answers whether it collected. `collect` is the isolate's `gc()` by default.
 *
 * The start-up work (search index, watches, the check after them) allocates much, and at
 * 10,000 skills V8's next full collection came while it ran: requests made then, as mcpbench
 * makes 100 listings and then 100 `get_skill` calls back to back right after `initialize`,
 * waited while V8 marked on two busy cores (marking steps of up to 12 ms, calls of 12 to 34
 * ms). Where it landed moved with the old generation's growth during start-up
 * (src/HeapTuning.ts) and with the corpus. Medians over eight starts of each, p99 of the
 * listings / of the `get_skill` calls: on mcpbench's corpus, 5.6 / 10.0 ms at 45% and 8.1 / 6.1
 * at 100%; on the bench's, 9.4 / 6.1 at 100% and 5.9 / 5.7 at 60%, but at 60% 13.1 for the
 * listings when each was a query. Collected here, the start-up work begins with the garbage
 * gone and the growth during start-up (100%) as headroom: 5.2 / 5.4 and 5.2 / 5.6 ms, 5.6 / 4.5
 * with queries, the slowest call at most 9.5 ms (but the first query, which waits for the
 * search index). The collection took 17 to 18 ms at 10,000 skills (about 40 MB in use at
 * `initialize`) and 52 to 62 ms at 50,000 (144 MB), and the first request after the handshake
 * waits for it. Under HANDSHAKE_BYTES (15.5 MB at 10 skills, 18.6 at 1,000) the early requests
 * met no such collection, and one would cost 9 to 12 ms for nothing.
 */
export const collectAtHandshake = (
  heapUsed: () => number,
  collect: () => (() => void) | null = isolateGc,
): boolean => {
  if (heapUsed() < HANDSHAKE_BYTES) return false
  const gc = collect()
  if (gc === null) return false
  gc()
  return true
}

/** How often the server looks whether it is idle, in ms. */
export const CHECK_MS = 250
/** Requests after which an idle server collects garbage. */
export const BURST_REQUESTS = 256
/** Heap growth since the last collection after which an idle server collects garbage. */
export const GROWTH_BYTES = 8 * 1024 * 1024
/** Heap growth between two looks under which no work is running. */
export const CALM_BYTES = 1024 * 1024

export interface IdleGcState {
  /** Requests received so far (monotonic). */
  readonly received: () => number
  /** Requests not yet answered. */
  readonly pending: () => number
  /** Bytes in use on the JavaScript heap now. */
  readonly heapUsed: () => number
  /**
   * Whether start-up work in the background (search index, watches, their check) is still to
   * come or runs; the server starts it all once the handshake is done.
   */
  readonly startingUp: () => boolean
}

/**
 * Returns the look to run every CHECK_MS: it collects (and answers true) when the server is
 * idle and a collection is worth it (see above). `collect` answers the isolate's `gc()` by
 * default (obtained once per process), or null when it cannot be had.
 */
export const idleCollector = (
  state: IdleGcState,
  collect: () => (() => void) | null = isolateGc,
): (() => boolean) => {
  let collectedAt = 0
  /** Heap in use after the last collection; none yet: everything since the start is growth. */
  let baseline = 0
  let lastSeen = -1
  let lastHeap = Number.POSITIVE_INFINITY
  return () => {
    const received = state.received()
    const heap = state.heapUsed()
    const startingUp = state.startingUp()
    // Start-up is over: the old generation grows by 30% again (src/HeapTuning.ts), so the limit
    // the collection below sets is made with it.
    if (!startingUp) endStartUp()
    const idle = received === lastSeen && state.pending() === 0 && heap - lastHeap < CALM_BYTES && !startingUp
    lastSeen = received
    lastHeap = heap
    if (!idle || (received - collectedAt < BURST_REQUESTS && heap - baseline < GROWTH_BYTES)) return false
    const gc = collect()
    if (gc === null) return false
    gc()
    collectedAt = received
    baseline = state.heapUsed()
    lastHeap = baseline
    return true
  }
}
