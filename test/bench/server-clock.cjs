/**
 * The benchmark's clock inside a server (preloaded with `--require` through NODE_OPTIONS, in
 * the latency session only): when each chunk of input arrived on stdin and when each write to
 * stdout was made, in microseconds of the monotonic clock `process.hrtime` reads (the same
 * clock in every process of the machine, so the benchmark can match them with its own phases).
 * Written at exit, as JSON, to the file SKILLS_MCP_BENCH_CLOCK names.
 *
 * A request's time in the server is then the time from the moment its JavaScript got the
 * request to the write of its answer: parsing, handling, serialising. It leaves out the pipes,
 * the client's own parsing and checking, waiting for a core, and the server's own wait before
 * its JavaScript saw the request (a read to wake up for, a collection or a timer under way).
 * Nothing here parses or copies a message: a stamp per chunk and per write. The end of each of
 * the server's full collections is stamped too (a performance entry per collection).
 */
const fs = require("node:fs")
const { PerformanceObserver, constants } = require("node:perf_hooks")

const out = process.env.SKILLS_MCP_BENCH_CLOCK
if (out !== undefined && out !== "") {
  const now = () => Number(process.hrtime.bigint() / 1000n)
  const arrivals = []
  const writes = []
  const stdin = process.stdin
  const emit = stdin.emit
  stdin.emit = function (event, ...rest) {
    if (event === "data") arrivals.push(now())
    return emit.call(this, event, ...rest)
  }
  const write = process.stdout.write
  process.stdout.write = function (...rest) {
    writes.push(now())
    return write.apply(this, rest)
  }
  // When each of the server's full collections ended (its last pause), on the same clock.
  const origin = now() - performance.now() * 1000
  const fullGcs = []
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries())
      if (entry.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR)
        fullGcs.push(Math.round(origin + (entry.startTime + entry.duration) * 1000))
  }).observe({ entryTypes: ["gc"] })
  process.on("exit", () => {
    fs.writeFileSync(out, JSON.stringify({ arrivals, writes, fullGcs }))
  })
}
