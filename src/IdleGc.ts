/**
 * IdleGc: gives memory back after a burst. V8 grows its heap to absorb a flood of requests
 * and, with no more allocation to trigger a collection, keeps it. Once the server has been
 * idle for a while after a burst, one full collection lets the heap shrink to its baseline.
 * The collection runs only then (never while requests are in flight), and costs a few ms.
 */
import { setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"

const isFunction = (value: unknown): value is () => void => typeof value === "function"

/** The isolate's `gc()`, obtained without the `--expose-gc` command-line flag; null if refused. */
const collector = (): (() => void) | null => {
  try {
    setFlagsFromString("--expose-gc")
    const gc: unknown = runInNewContext("gc")
    return isFunction(gc) ? gc : null
  } catch {
    return null
  }
}

/** Requests after which an idle server collects garbage. */
export const BURST_REQUESTS = 256

export interface IdleGcState {
  /** Requests received so far (monotonic). */
  readonly received: () => number
  /** Requests not yet answered. */
  readonly pending: () => number
}

/**
 * Returns a check to run periodically: it collects when at least BURST_REQUESTS requests
 * came in since the last collection, none arrived since the previous check and none is
 * in flight.
 */
export const idleCollector = (state: IdleGcState): (() => boolean) => {
  let gc: (() => void) | null | undefined
  let collectedAt = 0
  let lastSeen = 0
  return () => {
    const received = state.received()
    const quiet = received === lastSeen && state.pending() === 0
    lastSeen = received
    if (!quiet || received - collectedAt < BURST_REQUESTS) return false
    if (gc === undefined) gc = collector()
    if (gc === null) return false
    collectedAt = received
    gc()
    return true
  }
}
