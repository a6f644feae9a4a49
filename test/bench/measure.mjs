/**
 * Small helpers shared by the benchmark's parts (bench.mjs, http-bench.mjs): percentiles, and
 * waiting for a server process to be at rest.
 */
import * as fs from "node:fs"

export const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = sorted.length >> 1
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}
const percentile = (sorted, p) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]
export const percentiles = (values) => {
  const sorted = [...values].sort((a, b) => a - b)
  return { p50: percentile(sorted, 50), p95: percentile(sorted, 95), p99: percentile(sorted, 99) }
}
export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** CPU time (user + system, in clock ticks) a live process has used. */
export const cpuTicks = (pid) => {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ")
  return Number(fields[11]) + Number(fields[12])
}

/**
 * A server is at rest once it has used no CPU for this long (its start-up work in the
 * background is over); waited for at least SETTLE_MIN_MS and at most SETTLE_MAX_MS.
 */
const QUIET_MS = 500
const SETTLE_MIN_MS = 1_000
const SETTLE_MAX_MS = 30_000

/** Waits until the process has used no CPU for QUIET_MS. */
export const settle = async (pid) => {
  const started = performance.now()
  let last = cpuTicks(pid)
  let quietSince = started
  while (performance.now() - started < SETTLE_MAX_MS) {
    await sleep(100)
    const now = cpuTicks(pid)
    if (now !== last) {
      last = now
      quietSince = performance.now()
    } else if (performance.now() - quietSince >= QUIET_MS && performance.now() - started >= SETTLE_MIN_MS)
      return
  }
}
