#!/usr/bin/env node
/**
 * The benchmark (`npm run bench`; not part of `npm test`). Builds the bin, generates
 * deterministic corpora (10; 1,000; 10,000 skills; 50,000 with --with-50k) under the system's
 * temporary folder (kept between runs), drives a private copy of dist/bin.cjs over stdio with
 * the SDK's Client as an editor would, and prints one table, with the floors measured in the
 * same run:
 *   - a bare MCP SDK server (test/bench/bare-server.mjs, unbundled): spawn to `initialize`,
 *     and, for each corpus, the latency of its `get_skill` (one `readFile` per call);
 *   - a frontmatter-only scan of the same corpus in plain Node (test/bench/floor-scan.mjs).
 * The floors' starts and scans are interleaved with our warm starts, one of each in turn.
 * Each corpus is measured by a process of its own (this script with --one-size), so that its
 * client's heap holds nothing from the corpora measured before.
 * Every child gets a minimal environment (PATH, HOME, and for our server a private code-cache
 * folder): variables such as NODE_EXTRA_CA_CERTS add tens of milliseconds to every start.
 * "first start" has an empty code cache of its own and uses the build's (what a fresh HOME
 * sees): the median of the one that writes the cache the warm starts use (right after the
 * start with no code cache) and of one after each warm start, in an empty cache folder each
 * (six by default, three at 50,000 skills). "No code cache" runs with SKILLS_MCP_COMPILE_CACHE=0,
 * "warm" is the median of later starts, with the cache the first start wrote. Latencies are
 * measured once the server has finished its start-up work in the background (watches, search
 * index); "first tools/list" is the request right after `initialize` (while that work starts),
 * "first list_skills" the one after it. Under each latency, "in the server" is the same calls'
 * time from the moment the server's JavaScript got each one from stdin to the write of its
 * answer (stamped inside the server by test/bench/server-clock.cjs, preloaded in that session
 * only), with the number of calls when it is not the client's. What it leaves out: the pipes,
 * the client's own work, waiting for a core, and the server's own wait before its JavaScript
 * saw the request (a read to wake up for, a collection or a timer under way). Percentiles of
 * the two do not subtract: the slowest calls in the server need not be the slowest seen. The
 * client's own full collections that began during each series are counted: the calls they
 * overlap count them too. So are the server's that ended during each (its marking, in steps
 * between requests, came before).
 *
 * Usage: npm run bench [-- --sizes 10,1000,10000] [--with-50k] [--reps 5] [--iterations 200]
 *                      [--json results.json] [--node-flags=--heap-growing-percent=0]
 */
import { execFileSync, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { PerformanceObserver, constants as perfConstants } from "node:perf_hooks"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { ResultSchema } from "@modelcontextprotocol/sdk/types.js"
import { benchQueries, ensureCorpus, writeSkill } from "./corpus.mjs"

const PROJECT = fileURLToPath(new URL("../..", import.meta.url))
const HERE = path.join(PROJECT, "test", "bench")

const { values: options } = parseArgs({
  options: {
    sizes: { type: "string", default: "10,1000,10000" },
    "with-50k": { type: "boolean", default: false },
    reps: { type: "string", default: "5" },
    iterations: { type: "string", default: "200" },
    json: { type: "string" },
    "no-build": { type: "boolean", default: false },
    /** Node flags for our server, e.g. "--heap-growing-percent=0" for V8's heap defaults. */
    "node-flags": { type: "string", default: "" },
    /** Internal: measure this one corpus (generated already) and write its result to --json. */
    "one-size": { type: "string" },
  },
})
const SIZES = [
  ...options.sizes.split(",").map((size) => Number(size.trim())),
  ...(options["with-50k"] ? [50_000] : []),
]
const REPS = Number(options.reps)
const ITERATIONS = Number(options.iterations)
const WORK = path.join(os.tmpdir(), "skills-mcp-bench")
/** A private copy of the built bin: a build in the working tree meanwhile cannot change it. */
const BIN = path.join(WORK, "dist", "bin.cjs")
/**
 * A server is at rest once it has used no CPU for this long (its start-up work in the
 * background, watches, search index and the sweep after the watches, is over); waited for
 * at least SETTLE_MIN_MS and at most SETTLE_MAX_MS.
 */
const QUIET_MS = 500
const SETTLE_MIN_MS = 1_000
const SETTLE_MAX_MS = 30_000
const log = (message) => process.stderr.write(`[bench] ${message}\n`)

// ---------------------------------------------------------------------------------------
// Small helpers

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = sorted.length >> 1
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}
const percentile = (sorted, p) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]
const percentiles = (values) => {
  const sorted = [...values].sort((a, b) => a - b)
  return {
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    n: sorted.length,
  }
}
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const procField = (pid, file, name) => {
  const text = fs.readFileSync(`/proc/${pid}/${file}`, "utf8")
  const match = new RegExp(`^${name}:\\s+(\\d+)`, "m").exec(text)
  return match ? Number(match[1]) : Number.NaN
}
/** Peak resident memory of a live process, in MB. */
const peakRss = (pid) => procField(pid, "status", "VmHWM") / 1024
/** CPU time (user + system, in clock ticks) a live process has used. */
const cpuTicks = (pid) => {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ")
  return Number(fields[11]) + Number(fields[12])
}
/** Waits until the process has used no CPU for QUIET_MS; answers how long that took. */
const settle = async (pid) => {
  const started = performance.now()
  let last = cpuTicks(pid)
  let quietSince = performance.now()
  while (performance.now() - started < SETTLE_MAX_MS) {
    await sleep(100)
    const now = cpuTicks(pid)
    if (now !== last) {
      last = now
      quietSince = performance.now()
    } else if (performance.now() - quietSince >= QUIET_MS && performance.now() - started >= SETTLE_MIN_MS)
      break
  }
  return performance.now() - started
}
/** Read system calls made so far by a live process. */
const readCalls = (pid) => procField(pid, "io", "syscr")
/** Folders the process watches through inotify. */
const inotifyWatches = (pid) => {
  let count = 0
  for (const fd of fs.readdirSync(`/proc/${pid}/fdinfo`)) {
    try {
      const info = fs.readFileSync(`/proc/${pid}/fdinfo/${fd}`, "utf8")
      count += info.split("\n").filter((line) => line.startsWith("inotify wd:")).length
    } catch {
      // closed meanwhile
    }
  }
  return count
}

const home = path.join(WORK, "home")
const minimalEnv = (extra = {}) => ({ PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, ...extra })

/** Spawns a server under the SDK Client; resolves once `initialize` is answered. */
const connect = async (command, args, env) => {
  const transport = new StdioClientTransport({ command, args, env, stderr: "ignore" })
  const client = new Client({ name: "skills-mcp-bench", version: "1.0.0" }, { capabilities: {} })
  const notifications = []
  client.fallbackNotificationHandler = async (notification) => {
    notifications.push({ method: notification.method, at: performance.now() })
  }
  const started = performance.now()
  await client.connect(transport)
  const initMs = performance.now() - started
  return { client, transport, notifications, initMs, pid: transport.pid }
}

const NODE_FLAGS = options["node-flags"].split(" ").filter((flag) => flag !== "")
const ours = (corpus, cacheDir, flags = [], env = {}) =>
  connect(
    process.execPath,
    [...NODE_FLAGS, BIN, "--skills-dir", corpus, ...flags],
    minimalEnv({ SKILLS_MCP_CACHE_DIR: cacheDir, ...env }),
  )

const close = async (session) => {
  await session.client.close()
}

const tool = async (client, name, args) => {
  const result = await client.callTool({ name, arguments: args })
  if (result.isError) throw new Error(`${name} ${JSON.stringify(args)}: ${JSON.stringify(result.content)}`)
  return result
}

const time = async (work) => {
  const started = performance.now()
  const value = await work()
  return { ms: performance.now() - started, value }
}

/** The same pseudo-random sequence of ids for every server measured. */
const idPicker = (ids) => {
  let seed = 12345
  return () => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0
    return ids[seed % ids.length]
  }
}

/** The monotonic clock test/bench/server-clock.cjs stamps with, in microseconds. */
const clockNow = () => Number(process.hrtime.bigint() / 1000n)

/** When this process's full collections began (performance.now()), once `observeFullGcs` ran. */
const clientFullGcs = []
const observeFullGcs = () =>
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries())
      if (entry.detail?.kind === perfConstants.NODE_PERFORMANCE_GC_MAJOR) clientFullGcs.push(entry.startTime)
  }).observe({ entryTypes: ["gc"] })

/**
 * Latencies of `count` calls made one after another, as the client sees them; with the window
 * they were made in (on the server clock's time line), to find them in the server's stamps, and
 * the number of full collections of this process's own that began meanwhile: not the
 * server's time, though the calls they overlap count it (see `measureInChild`).
 */
const latencies = async (count, work) => {
  const samples = []
  const from = clockNow()
  const started = performance.now()
  for (let index = 0; index < count; index++) samples.push((await time(() => work(index))).ms)
  const clientFullGcsDuring = clientFullGcs.filter((at) => at >= started).length
  return { ...percentiles(samples), window: [from, clockNow()], clientFullGcsDuring }
}

/** The server clock's stamps (test/bench/server-clock.cjs), if the server wrote them at exit. */
const readClock = (file) => {
  try {
    return JSON.parse(fs.readFileSync(file, "utf8"))
  } catch (error) {
    log(`  no stamps from the server (${error.message}): its own times are not shown`)
    return undefined
  }
}

/**
 * The same calls' time in the server, from the server clock's stamps (test/bench/server-clock.cjs):
 * each write to stdout within the window answers the last chunk of input before it, the calls
 * being made one after another. In ms.
 */
const serverTimes = (clock, [from, to]) => {
  const samples = []
  let next = 0
  for (const written of clock.writes) {
    if (written < from || written > to) continue
    while (next + 1 < clock.arrivals.length && clock.arrivals[next + 1] <= written) next++
    const arrived = clock.arrivals[next]
    if (arrived !== undefined && arrived >= from && arrived <= written)
      samples.push((written - arrived) / 1000)
  }
  return percentiles(samples)
}

/** Runs `node script args` with a minimal environment; answers its stdout and wall time. */
const runNode = (script, args) =>
  new Promise((resolve, reject) => {
    const started = performance.now()
    const child = spawn(process.execPath, [script, ...args], {
      env: minimalEnv(),
      stdio: ["ignore", "pipe", "inherit"],
    })
    let stdout = ""
    child.stdout.on("data", (chunk) => {
      stdout += chunk
    })
    child.on("error", reject)
    child.on("close", () => resolve({ stdout, ms: performance.now() - started }))
  })

// ---------------------------------------------------------------------------------------
// Measurements

/** Spawn to `initialize` of the bare SDK server. */
const bareStart = async () => {
  const session = await connect(process.execPath, [path.join(HERE, "bare-server.mjs")], minimalEnv())
  await close(session)
  return session.initMs
}

/** The frontmatter-only scan of a corpus, its own time. */
const floorScan = async (corpus) => {
  const { stdout } = await runNode(path.join(HERE, "floor-scan.mjs"), [corpus])
  return JSON.parse(stdout).ms
}

/**
 * `node -e 0`, the machine's speed. The bare server's start and the scan are measured with each
 * corpus, interleaved with our starts (`measureSize`): the machine's speed drifts, by half
 * between runs and within one, and a floor measured minutes apart from our starts made their
 * ratio move with it.
 */
const floors = async (corpora) => {
  // The first starts warm the disk cache.
  await bareStart()
  for (const corpus of Object.values(corpora)) await floorScan(corpus)
  const nodeStart = []
  for (let rep = 0; rep < REPS; rep++) nodeStart.push((await runNode("-e", ["0"])).ms)
  return { nodeStartMs: median(nodeStart) }
}

const measureSize = async (size, corpus, ids) => {
  const cacheDir = fs.mkdtempSync(path.join(WORK, "cache-"))
  const large = size >= 50_000
  const uncached = await ours(corpus, cacheDir, [], { SKILLS_MCP_COMPILE_CACHE: "0" })
  await close(uncached)
  // No cache of its own yet: the build's is used, and copied to the cache folder.
  const cold = await ours(corpus, cacheDir)
  await close(cold)
  // Each warm start comes right after a start of the bare server and a scan of the corpus:
  // the ratios compare starts made at the same moment of the machine.
  // A first start is measured after each warm start as well, with a cache folder of its own
  // (a single start is too noisy a figure: its ratio moved by 0.04x between runs).
  const coldRuns = [cold.initMs]
  const warmRuns = []
  const bareRuns = []
  const scanRuns = []
  for (let rep = 0; rep < (large ? Math.min(REPS, 2) : REPS); rep++) {
    bareRuns.push(await bareStart())
    scanRuns.push(await floorScan(corpus))
    const session = await ours(corpus, cacheDir)
    warmRuns.push(session.initMs)
    await close(session)
    const emptyCache = fs.mkdtempSync(path.join(WORK, "cache-"))
    const first = await ours(corpus, emptyCache)
    await close(first)
    coldRuns.push(first.initMs)
    fs.rmSync(emptyCache, { recursive: true, force: true })
  }

  // One session with the watcher: every latency, throughput, sizes, freshness, then memory.
  // Its server stamps its input and output (test/bench/server-clock.cjs).
  const clockFile = path.join(cacheDir, "server-clock.json")
  const session = await ours(corpus, cacheDir, [], {
    NODE_OPTIONS: `--require "${path.join(HERE, "server-clock.cjs")}"`,
    SKILLS_MCP_BENCH_CLOCK: clockFile,
  })
  const { client, pid } = session
  const result = {
    size,
    uncachedInitMs: uncached.initMs,
    coldInitMs: median(coldRuns),
    warmInitMs: median(warmRuns),
    bareInitMs: median(bareRuns),
    scanMs: median(scanRuns),
  }
  result.instructionsChars = (client.getInstructions() ?? "").length
  const tools = await time(() => client.listTools())
  result.toolsListBytes = Buffer.byteLength(JSON.stringify(tools.value))
  result.firstToolsListMs = tools.ms
  result.firstListMs = (await time(() => tool(client, "list_skills", {}))).ms
  // Latencies are for a server at rest: its start-up work in the background is done.
  result.settleMs = await settle(pid)
  const iterations = large ? Math.min(ITERATIONS, 100) : ITERATIONS
  const randomId = idPicker(ids)
  log("  latencies")
  result.list = await latencies(iterations, () => tool(client, "list_skills", {}))
  // Distinct queries: a repeated one would be answered from the rankings kept for paging.
  const queries = benchQueries(iterations)
  result.search = await latencies(iterations, (index) =>
    tool(client, "list_skills", { query: queries[index] }),
  )
  result.get = await latencies(iterations, () => tool(client, "get_skill", { id: randomId() }))
  const uris = (await client.request({ method: "skills/list", params: {} }, ResultSchema)).skills.map(
    (s) => s.uri,
  )
  result.skillsGet = await latencies(iterations, (index) =>
    client.request(
      { method: "skills/get", params: { uri: uris[(index * 7919) % uris.length] } },
      ResultSchema,
    ),
  )
  log("  throughput")
  const sequential = await time(async () => {
    for (let index = 0; index < 100; index++) await tool(client, "get_skill", { id: randomId() })
  })
  const concurrent = await time(() =>
    Promise.all(Array.from({ length: 1000 }, () => tool(client, "get_skill", { id: randomId() }))),
  )
  result.sequentialPerRequestMs = sequential.ms / 100
  result.concurrentPerRequestMs = concurrent.ms / 1000
  result.watches = inotifyWatches(pid)

  log("  freshness")
  // Freshness with the watcher: an edited description, then a new skill, polled with get_skill.
  const victimIndex = Math.floor(ids.length / 2)
  const victim = ids[victimIndex]
  const victimFile = path.join(corpus, victim, "SKILL.md")
  const original = fs.readFileSync(victimFile, "utf8")
  const token = `edited${Date.now().toString(36)}`
  /** Milliseconds from `started` until `check` passes (polled every 5 ms), NaN after 20 s. */
  const poll = async (check, started = performance.now()) => {
    for (;;) {
      if (await check()) return performance.now() - started
      if (performance.now() - started > 20_000) return Number.NaN
      await sleep(5)
    }
  }
  const descriptionOf = async (id) => {
    const got = await client.callTool({ name: "get_skill", arguments: { id } })
    return got.isError ? undefined : got.structuredContent.description
  }
  const notesBefore = session.notifications.length
  const edited = original.replace(/^description:.*$/m, `description: Edited by the benchmark ${token}.`)
  const editStarted = performance.now()
  fs.writeFileSync(victimFile, edited)
  result.freshEditMs = await poll(async () => (await descriptionOf(victim))?.includes(token), editStarted)
  const added = `zz-bench-added-${token}`
  const addedSkill = `---\nname: ${added}\ndescription: Added by the benchmark.\n---\nBody.\n`
  const addStarted = performance.now()
  fs.mkdirSync(path.join(corpus, added))
  fs.writeFileSync(path.join(corpus, added, "SKILL.md"), addedSkill)
  result.freshAddMs = await poll(async () => (await descriptionOf(added)) !== undefined, addStarted)
  log("  one quiet edit")
  // One more edit, with no request meanwhile and the server at rest (the add's refresh is
  // over: async file operations in flight would add the event loop's own wake-up reads):
  // count notifications and the reads it cost.
  await settle(pid)
  const quietFrom = session.notifications.length
  const readsBefore = readCalls(pid)
  fs.writeFileSync(victimFile, edited.replace(token, `${token}-again`))
  await poll(async () => session.notifications.length - quietFrom >= 3)
  await sleep(400) // a second batch of notifications for the same edit would arrive by now
  result.readsForOneEdit = readCalls(pid) - readsBefore
  const kinds = ["tools", "prompts", "resources"].map(
    (kind) =>
      session.notifications
        .slice(quietFrom)
        .filter((note) => note.method === `notifications/${kind}/list_changed`).length,
  )
  result.notificationsForOneEdit = kinds.join("/")
  result.notificationsTotal = session.notifications.length - notesBefore
  result.peakRssMb = peakRss(pid)
  if (!large) {
    log("  every skill over skills/list")
    // What a host of the Skills extension may do on connecting: page through the whole catalog,
    // which computes (and keeps) a digest of every file of every skill. Not at 50,000 skills
    // (about a minute).
    const listed = await time(async () => {
      let cursor
      do {
        const page = await client.request(
          { method: "skills/list", params: cursor === undefined ? {} : { cursor } },
          ResultSchema,
        )
        cursor = page.nextCursor
      } while (cursor !== undefined)
    })
    result.listAllMs = listed.ms
    result.peakRssAfterListAllMb = peakRss(pid)
  }
  await close(session)
  // A server that had to be killed wrote no stamps: its rows show "-", the run goes on.
  const clock = readClock(clockFile)
  for (const kind of ["list", "search", "get", "skillsGet"]) {
    const [from, to] = result[kind].window
    result[kind].server = clock === undefined ? undefined : serverTimes(clock, result[kind].window)
    result[kind].serverFullGcsDuring = clock?.fullGcs?.filter((at) => at >= from && at <= to).length
  }
  fs.writeFileSync(victimFile, original)
  fs.rmSync(path.join(corpus, added), { recursive: true, force: true })

  log("  without the watcher")
  // Without the watcher (and no throttle): the very next call must see an edit and an addition.
  const plain = await ours(corpus, cacheDir, ["--no-watch", "--refresh-ms", "0"])
  await tool(plain.client, "get_skill", { id: victim })
  fs.writeFileSync(victimFile, edited)
  const nextEdit = await time(() => plain.client.callTool({ name: "get_skill", arguments: { id: victim } }))
  result.noWatchEdit = {
    seen: nextEdit.value.structuredContent?.description?.includes(token) === true,
    ms: nextEdit.ms,
  }
  fs.mkdirSync(path.join(corpus, added))
  fs.writeFileSync(path.join(corpus, added, "SKILL.md"), addedSkill)
  const nextAdd = await time(() => plain.client.callTool({ name: "get_skill", arguments: { id: added } }))
  result.noWatchAdd = { seen: nextAdd.value.isError !== true, ms: nextAdd.ms }
  await close(plain)
  writeSkill(corpus, victimIndex, victim)
  fs.rmSync(path.join(corpus, added), { recursive: true, force: true })
  fs.rmSync(cacheDir, { recursive: true, force: true })

  log("  floor: get_skill of a bare SDK server")
  result.floorGet = await floorLatency(corpus, ids, iterations)
  return result
}

/**
 * The latency floor on this machine: the bare SDK server answering `get_skill` with one
 * `readFile` (test/bench/bare-server.mjs), at rest, called as our server was, same ids.
 */
const floorLatency = async (corpus, ids, iterations) => {
  const session = await connect(process.execPath, [path.join(HERE, "bare-server.mjs"), corpus], minimalEnv())
  await session.client.listTools()
  await settle(session.pid)
  const randomId = idPicker(ids)
  const stats = await latencies(iterations, () => tool(session.client, "get_skill", { id: randomId() }))
  await close(session)
  return stats
}

// ---------------------------------------------------------------------------------------
// Table

const fixed = (value, digits = 1) => (Number.isFinite(value) ? value.toFixed(digits) : "-")
const triple = (stats) => `${fixed(stats.p50, 2)} / ${fixed(stats.p95, 2)} / ${fixed(stats.p99, 2)}`
const count = (value) => value.toLocaleString("en-US")
/** The row under a latency: the same calls' time in the server (`serverTimes`). */
const IN_SERVER = "  in the server (stdin to stdout)"
/** The server's own percentiles; the count too when it is not the client's (a stray write, a lost stamp). */
const inServer = (stats) =>
  stats.server === undefined
    ? "-"
    : stats.server.n === stats.n
      ? triple(stats.server)
      : `${triple(stats.server)} (${stats.server.n} of ${stats.n})`

const table = (results, floor) => {
  const header = ["", ...results.map((result) => `${count(result.size)} skills`)]
  const rows = [
    ["initialize, no code cache ms", (r) => fixed(r.uncachedInitMs, 0)],
    ["initialize, first start (the build's code cache; median) ms", (r) => fixed(r.coldInitMs, 0)],
    ["  / bare SDK server initialize", (r) => `${fixed(r.coldInitMs / r.bareInitMs, 2)}x`],
    ["initialize, warm (median) ms", (r) => fixed(r.warmInitMs, 0)],
    ["  / bare SDK server initialize", (r) => `${fixed(r.warmInitMs / r.bareInitMs, 2)}x`],
    [
      "  / (frontmatter scan + bare SDK start)",
      (r) => `${fixed(r.warmInitMs / (r.scanMs + r.bareInitMs), 2)}x`,
    ],
    ["first tools/list ms (right after initialize)", (r) => fixed(r.firstToolsListMs, 1)],
    ["first list_skills ms", (r) => fixed(r.firstListMs, 1)],
    ["at rest after first list_skills, ms (min 1,000)", (r) => fixed(r.settleMs, 0)],
    ["list_skills p50/p95/p99 ms", (r) => triple(r.list)],
    [IN_SERVER, (r) => inServer(r.list)],
    ["list_skills {query} p50/p95/p99 ms", (r) => triple(r.search)],
    [IN_SERVER, (r) => inServer(r.search)],
    ["get_skill p50/p95/p99 ms", (r) => triple(r.get)],
    [IN_SERVER, (r) => inServer(r.get)],
    ["skills/get p50/p95/p99 ms", (r) => triple(r.skillsGet)],
    [IN_SERVER, (r) => inServer(r.skillsGet)],
    [
      "client's own full collections in the four above",
      (r) => [r.list, r.search, r.get, r.skillsGet].map((x) => x.clientFullGcsDuring ?? "-").join(" / "),
    ],
    [
      "server's full collections in the four above",
      (r) => [r.list, r.search, r.get, r.skillsGet].map((x) => x.serverFullGcsDuring ?? "-").join(" / "),
    ],
    ["floor: bare SDK server get_skill p50/p95/p99 ms", (r) => triple(r.floorGet)],
    [
      "  get_skill / floor at p50 / p99",
      (r) => `${fixed(r.get.p50 / r.floorGet.p50, 2)}x / ${fixed(r.get.p99 / r.floorGet.p99, 2)}x`,
    ],
    ["get_skill 100 sequential, ms/request", (r) => fixed(r.sequentialPerRequestMs, 2)],
    ["get_skill 1,000 concurrent, ms/request", (r) => fixed(r.concurrentPerRequestMs, 2)],
    ["  concurrent / sequential", (r) => `${fixed(r.concurrentPerRequestMs / r.sequentialPerRequestMs, 2)}x`],
    ["peak RSS (VmHWM) MB", (r) => fixed(r.peakRssMb, 0)],
    ["every skill over skills/list, ms", (r) => (r.listAllMs === undefined ? "-" : fixed(r.listAllMs, 0))],
    [
      "  peak RSS after it MB",
      (r) => (r.peakRssAfterListAllMb === undefined ? "-" : fixed(r.peakRssAfterListAllMb, 0)),
    ],
    ["fresh after edit, watcher, ms", (r) => fixed(r.freshEditMs, 0)],
    ["fresh after add, watcher, ms", (r) => fixed(r.freshAddMs, 0)],
    ["one edit: notifications tools/prompts/resources", (r) => r.notificationsForOneEdit],
    ["one edit: read syscalls by the server", (r) => count(r.readsForOneEdit)],
    [
      "no watcher: edit seen on next call (ms)",
      (r) => `${r.noWatchEdit.seen ? "yes" : "NO"} (${fixed(r.noWatchEdit.ms, 0)})`,
    ],
    [
      "no watcher: add seen on next call (ms)",
      (r) => `${r.noWatchAdd.seen ? "yes" : "NO"} (${fixed(r.noWatchAdd.ms, 0)})`,
    ],
    ["folders watched (inotify)", (r) => count(r.watches)],
    ["tools/list bytes", (r) => count(r.toolsListBytes)],
    ["instructions chars", (r) => count(r.instructionsChars)],
  ]
  const lines = [header, ...rows.map(([label, cell]) => [label, ...results.map(cell)])]
  const widths = header.map((_, column) => Math.max(...lines.map((line) => line[column].length)))
  const render = (line) => `| ${line.map((cell, column) => cell.padEnd(widths[column])).join(" | ")} |`
  const separator = `|${widths.map((width) => "-".repeat(width + 2)).join("|")}|`
  const floorLines = [
    "",
    "Floors (same run; medians of the starts and scans interleaved with the warm starts):",
    `bare SDK server initialize ${results.map((r) => `${count(r.size)}: ${fixed(r.bareInitMs, 0)} ms`).join(", ")};`,
    `frontmatter-only scan ${results.map((r) => `${count(r.size)}: ${fixed(r.scanMs, 0)} ms`).join(", ")};`,
    `node -e 0 (measured once, up front): ${fixed(floor.nodeStartMs, 0)} ms.`,
  ]
  return [render(lines[0]), separator, ...lines.slice(1).map(render), ...floorLines].join("\n")
}

// ---------------------------------------------------------------------------------------

/**
 * Measures one corpus in a process of its own (this script with --one-size): the client's
 * figures for a corpus must not depend on the corpora measured before it. In one process, what
 * those left in the client's heap had it make full collections of its own during the series of
 * calls at 10,000 skills (two during the 200 `list_skills` calls, each marked incrementally in
 * steps of up to 3 ms and finished in a pause of 2 to 6 ms), where a process measuring 10,000
 * skills alone made none in 1,000 calls of each kind.
 */
const measureInChild = (size) =>
  new Promise((resolve, reject) => {
    const file = path.join(WORK, `result-${size}-${process.pid}.json`)
    const child = spawn(
      process.execPath,
      [
        fileURLToPath(import.meta.url),
        "--one-size",
        String(size),
        "--json",
        file,
        "--reps",
        String(REPS),
        "--iterations",
        String(ITERATIONS),
        `--node-flags=${options["node-flags"]}`,
      ],
      { stdio: ["ignore", "ignore", "inherit"] },
    )
    child.on("error", reject)
    child.on("exit", (code) => {
      if (code !== 0) return reject(new Error(`measuring ${count(size)} skills: exit ${code}`))
      const result = JSON.parse(fs.readFileSync(file, "utf8"))
      fs.rmSync(file, { force: true })
      resolve(result)
    })
  })

/** Where the corpus of `size` skills is generated (and kept between runs). */
const corpusDir = (size) => path.join(WORK, `corpus-${size}`)

/** In the child: one corpus (generated by the parent), with the parent's copy of the bin. */
const measureOne = async (size) => {
  observeFullGcs()
  fs.mkdirSync(home, { recursive: true })
  const corpus = corpusDir(size)
  const result = await measureSize(size, corpus, ensureCorpus(corpus, size))
  fs.writeFileSync(options.json, JSON.stringify(result))
}

const main = async () => {
  fs.mkdirSync(home, { recursive: true })
  if (!options["no-build"]) {
    log("building dist/bin.cjs")
    execFileSync("npm", ["run", "--silent", "build:bin"], {
      cwd: PROJECT,
      stdio: ["ignore", "ignore", "inherit"],
    })
  }
  fs.rmSync(path.dirname(BIN), { recursive: true, force: true })
  fs.mkdirSync(path.dirname(BIN), { recursive: true })
  for (const file of ["bin.cjs", "skills-mcp.cjs", "skills-mcp.cjs.v8cache"]) {
    fs.copyFileSync(path.join(PROJECT, "dist", file), path.join(path.dirname(BIN), file))
  }
  const corpora = {}
  for (const size of SIZES) {
    const dir = corpusDir(size)
    log(`corpus of ${count(size)} skills in ${dir}`)
    ensureCorpus(dir, size)
    corpora[size] = dir
  }
  log(
    `machine: ${os.cpus().length} cpus, load ${os
      .loadavg()
      .map((load) => load.toFixed(2))
      .join(" ")}, node ${process.version}`,
  )
  const floor = await floors(corpora)
  const results = []
  for (const size of SIZES) {
    log(`measuring ${count(size)} skills`)
    results.push(await measureInChild(size))
  }
  process.stdout.write(`${table(results, floor)}\n`)
  log(
    `load at the end: ${os
      .loadavg()
      .map((load) => load.toFixed(2))
      .join(" ")}`,
  )
  if (options.json)
    fs.writeFileSync(options.json, JSON.stringify({ floor, results, loadavg: os.loadavg() }, null, 2))
}

if (options["one-size"] === undefined) await main()
else await measureOne(Number(options["one-size"]))
