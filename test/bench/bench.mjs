#!/usr/bin/env node
/**
 * The benchmark (`npm run bench`; not part of `npm test`). Builds the bin, generates
 * deterministic corpora (10; 1,000; 10,000 skills; 50,000 with --with-50k) under the system's
 * temporary folder (kept between runs), drives a private copy of dist/bin.cjs over stdio with
 * the SDK's Client as an editor would, and prints one table. With `--baseline DIR` (another
 * checkout, built), its dist/bin.cjs is measured the same way in the same run: its starts
 * interleaved with ours, its session right after ours on the same corpus.
 *
 * Measured in the same run, for comparison:
 *   - a bare MCP SDK server (bare-server.mjs): spawn to `initialize`, and its `get_skill`
 *     (one `readFile` per call), the latency floor;
 *   - a naive skills server (naive-server.mjs: every frontmatter kept in memory): its
 *     `initialize`, `get_skill` and peak RSS;
 *   - a frontmatter-only scan of the corpus in plain Node (floor-scan.mjs), and `node -e 0`.
 *
 * Starts: "first" has an empty cache folder (a private XDG_CACHE_HOME: no compile cache yet),
 * "warm" the folder earlier starts of the same server filled. Each round of starts is a bare
 * server, a scan, the naive server, then each of our servers warm and first. Latencies are
 * measured once the server is at rest (its start-up work in the background is over).
 * Every server runs on `--node` (default: the Node running this script) with a minimal
 * environment (PATH, HOME, XDG_CACHE_HOME): variables such as NODE_EXTRA_CA_CERTS add tens of
 * milliseconds to every start. Each corpus is measured by a process of its own (this script
 * with --one-size), so that the client's heap holds nothing from the corpora measured before.
 *
 * HTTP part (http-bench.mjs): `serve --http` against a bare SDK Streamable HTTP server, at 1, 16
 * and 64 concurrent clients, on the same corpora. `--parts stdio`, `--parts http` or `--http-only`
 * runs one part alone (default: both).
 *
 * Usage: npm run bench [-- --sizes 10,1000,10000] [--with-50k] [--reps 5] [--iterations 200]
 *          [--baseline DIR] [--node PATH] [--json results.json] [--no-build]
 *          [--parts stdio,http] [--http-only] [--http-requests 2000]
 */
import { execFileSync, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { ResultSchema } from "@modelcontextprotocol/sdk/types.js"
import { benchQueries, ensureCorpus, writeSkill } from "./corpus.mjs"
import { httpTable, measureHttp } from "./http-bench.mjs"
import { cpuTicks, median, percentiles, settle, sleep } from "./measure.mjs"

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
    /** Another checkout whose dist/bin.cjs is built: measured beside ours. */
    baseline: { type: "string" },
    /** The Node binary that runs the servers (not this script). */
    node: { type: "string", default: process.execPath },
    /** Which parts to run: `stdio`, `http` or both. */
    parts: { type: "string", default: "stdio,http" },
    /** The same as `--parts http`. */
    "http-only": { type: "boolean", default: false },
    /** Requests in each cell (server, tool, number of clients) of the HTTP part. */
    "http-requests": { type: "string", default: "2000" },
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
const NODE = path.resolve(options.node)
const PARTS = options["http-only"] ? ["http"] : options.parts.split(",").map((part) => part.trim())
for (const part of PARTS)
  if (part !== "stdio" && part !== "http") throw new Error(`--parts: unknown part ${part}`)
const STDIO = PARTS.includes("stdio")
const HTTP = PARTS.includes("http")
const HTTP_REQUESTS = Number(options["http-requests"])
const WORK = path.join(os.tmpdir(), "skills-mcp-bench")
/** Private copies of the built bins: a build in a working tree meanwhile cannot change them. */
const BINS = {
  new: path.join(WORK, "new", "bin.cjs"),
  ...(options.baseline === undefined ? {} : { baseline: path.join(WORK, "baseline", "bin.cjs") }),
}
const SERVERS = Object.keys(BINS)
const log = (message) => process.stderr.write(`[bench] ${message}\n`)

// ---------------------------------------------------------------------------------------
// Small helpers

/** Peak resident memory of a live process (VmHWM), in MB. */
const peakRss = (pid) => {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8")
  return Number(/^VmHWM:\s+(\d+)/m.exec(status)?.[1]) / 1024
}
/**
 * Ms until a server's search index holds every SKILL.md body (read in the background after the
 * handshake; a search's structured result says how many it holds), polled every 50 ms; null for
 * a server that does not say (the baseline's).
 */
const bodiesIndexed = async (client) => {
  const started = performance.now()
  while (performance.now() - started < 120_000) {
    const found = await client.callTool({ name: "list_skills", arguments: { query: "index", limit: 1 } })
    const searched = found.structuredContent?.searched
    if (searched === undefined) return null
    if (searched.bodies >= searched.skills) return performance.now() - started
    await sleep(50)
  }
  return Number.NaN
}
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
const time = async (work) => {
  const started = performance.now()
  const value = await work()
  return { ms: performance.now() - started, value }
}
/** Latencies of `count` calls made one after another, as the client sees them. */
const latencies = async (count, work) => {
  const samples = []
  for (let index = 0; index < count; index++) samples.push((await time(() => work(index))).ms)
  return percentiles(samples)
}
/** The same pseudo-random sequence of ids for every server measured. */
const idPicker = (ids) => {
  let seed = 12345
  return () => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0
    return ids[seed % ids.length]
  }
}

/**
 * Reads every listed skill's SKILL.md once, right before a timed run of `get_skill`s: the servers
 * measured one after the other then all find the files in the page cache, rather than the later
 * ones finding what the earlier ones just read (on these machines the cache empties within
 * minutes).
 */
const warmSkillFiles = (corpus, ids) => {
  for (const id of ids) fs.readFileSync(path.join(corpus, id, "SKILL.md"))
}

const home = path.join(WORK, "home")
const minimalEnv = (extra = {}) => ({ PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, ...extra })
/** A fresh cache folder (XDG_CACHE_HOME) for our servers. */
const emptyCache = () => fs.mkdtempSync(path.join(WORK, "cache-"))

/** Spawns `NODE args` under the SDK Client; resolves once `initialize` is answered. */
const connect = async (args, env = minimalEnv()) => {
  const transport = new StdioClientTransport({ command: NODE, args, env, stderr: "ignore" })
  const client = new Client({ name: "skills-mcp-bench", version: "1.0.0" }, { capabilities: {} })
  const notifications = []
  client.fallbackNotificationHandler = async (notification) => {
    notifications.push(notification.method)
  }
  const started = performance.now()
  await client.connect(transport)
  return { client, notifications, initMs: performance.now() - started, pid: transport.pid }
}
/** One of our servers (`new` or `baseline`) on a corpus, with `cacheHome` as XDG_CACHE_HOME. */
const ours = (server, corpus, cacheHome, flags = []) =>
  connect([BINS[server], "--skills-dir", corpus, ...flags], minimalEnv({ XDG_CACHE_HOME: cacheHome }))
const bare = (corpus) => connect([path.join(HERE, "bare-server.mjs"), ...(corpus ? [corpus] : [])])
const naive = (corpus) => connect([path.join(HERE, "naive-server.mjs"), corpus])
/** Spawn to `initialize`, then closed. */
const startMs = async (starting) => {
  const session = await starting
  await session.client.close()
  return session.initMs
}

const tool = async (client, name, args) => {
  const result = await client.callTool({ name, arguments: args })
  if (result.isError) throw new Error(`${name} ${JSON.stringify(args)}: ${JSON.stringify(result.content)}`)
  return result
}

/** Runs `NODE args` with a minimal environment; answers its stdout and wall time. */
const runNode = (args) =>
  new Promise((resolve, reject) => {
    const started = performance.now()
    const child = spawn(NODE, args, { env: minimalEnv(), stdio: ["ignore", "pipe", "inherit"] })
    let stdout = ""
    child.stdout.on("data", (chunk) => {
      stdout += chunk
    })
    child.on("error", reject)
    child.on("close", () => resolve({ stdout, ms: performance.now() - started }))
  })
/** The frontmatter-only scan of a corpus, its own time. */
const floorScan = async (corpus) =>
  JSON.parse((await runNode([path.join(HERE, "floor-scan.mjs"), corpus])).stdout).ms

// ---------------------------------------------------------------------------------------
// Measurements

/**
 * Starts, in rounds: the bare server, the scan, the naive server, then each of our servers
 * warm and first (the order of ours alternating between rounds), so that the ratios compare
 * starts made at the same moment of the machine. Each server's warm cache is filled by one
 * first start before the rounds; that start counts as a first start too.
 */
const measureStarts = async (corpus, rounds) => {
  const runs = { bare: [], scan: [], naive: [] }
  const warmCaches = {}
  for (const server of SERVERS) {
    warmCaches[server] = emptyCache()
    runs[server] = { first: [await startMs(ours(server, corpus, warmCaches[server]))], warm: [] }
  }
  for (let round = 0; round < rounds; round++) {
    runs.bare.push(await startMs(bare()))
    runs.scan.push(await floorScan(corpus))
    runs.naive.push(await startMs(naive(corpus)))
    const order = round % 2 ? [...SERVERS].reverse() : SERVERS
    for (const server of order)
      runs[server].warm.push(await startMs(ours(server, corpus, warmCaches[server])))
    for (const server of order) {
      const cache = emptyCache()
      runs[server].first.push(await startMs(ours(server, corpus, cache)))
      fs.rmSync(cache, { recursive: true, force: true })
    }
  }
  return { runs, warmCaches }
}

/**
 * One session of one of our servers, with the watcher and its warm cache: the first calls,
 * then at rest the latencies, throughput, freshness and memory; then a session without the
 * watcher. Leaves the corpus as it found it.
 */
const measureSession = async (server, corpus, ids, cacheHome, large) => {
  const session = await ours(server, corpus, cacheHome)
  const { client, pid } = session
  const result = { instructionsChars: (client.getInstructions() ?? "").length }
  const tools = await time(() => client.listTools())
  result.toolsListBytes = Buffer.byteLength(JSON.stringify(tools.value))
  result.firstToolsListMs = tools.ms
  result.firstListMs = (await time(() => tool(client, "list_skills", {}))).ms
  result.bodiesIndexedMs = await bodiesIndexed(client)
  await settle(pid)
  const iterations = large ? Math.min(ITERATIONS, 100) : ITERATIONS
  const randomId = idPicker(ids)
  log(`  ${server}: latencies`)
  result.list = await latencies(iterations, () => tool(client, "list_skills", {}))
  // Distinct queries: a repeated one would be answered from the rankings kept for paging.
  const queries = benchQueries(iterations)
  result.search = await latencies(iterations, (i) => tool(client, "list_skills", { query: queries[i] }))
  warmSkillFiles(corpus, ids)
  result.get = await latencies(iterations, () => tool(client, "get_skill", { id: randomId() }))
  const listed = await client.request({ method: "skills/list", params: {} }, ResultSchema)
  const uris = listed.skills.map((skill) => skill.uri)
  result.skillsGet = await latencies(iterations, (i) =>
    client.request({ method: "skills/get", params: { uri: uris[(i * 7919) % uris.length] } }, ResultSchema),
  )
  warmSkillFiles(corpus, ids)
  const sequential = await time(async () => {
    for (let i = 0; i < 100; i++) await tool(client, "get_skill", { id: randomId() })
  })
  const concurrent = await time(() =>
    Promise.all(Array.from({ length: 1000 }, () => tool(client, "get_skill", { id: randomId() }))),
  )
  result.sequentialPerRequestMs = sequential.ms / 100
  result.concurrentPerRequestMs = concurrent.ms / 1000
  result.watches = inotifyWatches(pid)

  log(`  ${server}: freshness`)
  // With the watcher: an edited description, then a new skill, polled with get_skill.
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
  const edited = original.replace(/^description:.*$/m, `description: Edited by the benchmark ${token}.`)
  let started = performance.now()
  fs.writeFileSync(victimFile, edited)
  result.freshEditMs = await poll(async () => (await descriptionOf(victim))?.includes(token), started)
  const added = `zz-bench-added-${token}`
  const addSkill = () => {
    fs.mkdirSync(path.join(corpus, added))
    fs.writeFileSync(
      path.join(corpus, added, "SKILL.md"),
      `---\nname: ${added}\ndescription: Added by the benchmark.\n---\nBody.\n`,
    )
  }
  started = performance.now()
  addSkill()
  result.freshAddMs = await poll(async () => (await descriptionOf(added)) !== undefined, started)
  // One more edit, with the server at rest: the notifications it sends.
  await settle(pid)
  const quietFrom = session.notifications.length
  fs.writeFileSync(victimFile, edited.replace(token, `${token}-again`))
  await poll(async () => session.notifications.length - quietFrom >= 3)
  await sleep(400) // a second batch of notifications for the same edit would arrive by now
  const sent = session.notifications.slice(quietFrom)
  result.notificationsForOneEdit = ["tools", "prompts", "resources"]
    .map((kind) => sent.filter((method) => method === `notifications/${kind}/list_changed`).length)
    .join(" / ")
  result.peakRssMb = peakRss(pid)
  if (!large) {
    // What a host of the Skills extension may do on connecting: page through the whole
    // catalog, which digests every file of every skill. Not at 50,000 skills (about a minute).
    const listAll = await time(async () => {
      let cursor
      do {
        const params = cursor === undefined ? {} : { cursor }
        cursor = (await client.request({ method: "skills/list", params }, ResultSchema)).nextCursor
      } while (cursor !== undefined)
    })
    result.listAllMs = listAll.ms
    result.peakRssAfterListAllMb = peakRss(pid)
  }
  await client.close()
  fs.writeFileSync(victimFile, original)
  fs.rmSync(path.join(corpus, added), { recursive: true, force: true })

  log(`  ${server}: without the watcher`)
  // Without the watcher (and no throttle): the very next call must see an edit and an addition.
  const plain = await ours(server, corpus, cacheHome, ["--no-watch", "--refresh-ms", "0"])
  await tool(plain.client, "get_skill", { id: victim })
  fs.writeFileSync(victimFile, edited)
  const nextEdit = await time(() => plain.client.callTool({ name: "get_skill", arguments: { id: victim } }))
  result.noWatchEdit = {
    seen: nextEdit.value.structuredContent?.description?.includes(token) === true,
    ms: nextEdit.ms,
  }
  addSkill()
  const nextAdd = await time(() => plain.client.callTool({ name: "get_skill", arguments: { id: added } }))
  result.noWatchAdd = { seen: nextAdd.value.isError !== true, ms: nextAdd.ms }
  await plain.client.close()
  writeSkill(corpus, victimIndex, victim)
  fs.rmSync(path.join(corpus, added), { recursive: true, force: true })
  return result
}

/**
 * A comparison server's session (bare or naive), at rest, called as ours were with the same
 * ids: `get_skill` latencies; for the naive server, after a whole listing and a burst of
 * 1,000 concurrent calls as ours had, its peak RSS.
 */
const measureComparison = async (starting, corpus, ids, iterations, burst) => {
  const { client, pid } = await starting
  if (burst) await tool(client, "list_skills", {})
  await settle(pid)
  const randomId = idPicker(ids)
  warmSkillFiles(corpus, ids)
  const result = { get: await latencies(iterations, () => tool(client, "get_skill", { id: randomId() })) }
  if (burst) {
    warmSkillFiles(corpus, ids)
    const concurrent = await time(() =>
      Promise.all(Array.from({ length: 1000 }, () => tool(client, "get_skill", { id: randomId() }))),
    )
    result.concurrentPerRequestMs = concurrent.ms / 1000
    result.peakRssMb = peakRss(pid)
  }
  await client.close()
  return result
}

// ---------------------------------------------------------------------------------------
// Whole-catalog sync over the Skills extension (issue 36), as a host does it

const SDK_V2 = path.join(WORK, "sdk-v2", "node_modules", "@modelcontextprotocol", "server")
const EXTENSION = "io.modelcontextprotocol/skills"

/** The official SDK v2 server (`loadSkills`), installed once in the work folder with npm. */
const ensureSdkV2 = () => {
  if (fs.existsSync(path.join(SDK_V2, "package.json"))) return
  log("installing @modelcontextprotocol/server@2.4.0 (the SDK v2 server compared) in the work folder")
  fs.mkdirSync(path.join(WORK, "sdk-v2"), { recursive: true })
  execFileSync(
    "npm",
    ["install", "--no-save", "--prefix", path.join(WORK, "sdk-v2"), "@modelcontextprotocol/server@2.4.0"],
    {
      stdio: ["ignore", "ignore", "inherit"],
    },
  )
}

/**
 * A server driven with raw JSON-RPC lines, as mcpbench's sep-sync.mjs does (the SDK's Client
 * would add its own cost to every page of a sync): spawned, then initialized as a host of the
 * Skills extension.
 */
const rawSession = async (args, env) => {
  const spawnedAt = performance.now()
  const child = spawn(NODE, args, { env, stdio: ["pipe", "pipe", "ignore"] })
  const pending = new Map()
  let next = 1
  let chunks = []
  child.stdout.on("data", (data) => {
    let start = 0
    for (let end = data.indexOf(10); end >= 0; end = data.indexOf(10, start)) {
      chunks.push(data.subarray(start, end))
      const line = Buffer.concat(chunks)
      chunks = []
      start = end + 1
      const message = JSON.parse(line.toString("utf8"))
      const waiting = message.id === undefined ? undefined : pending.get(message.id)
      if (waiting !== undefined && message.method === undefined) {
        pending.delete(message.id)
        if (message.error) waiting.reject(new Error(`${message.error.code} ${message.error.message}`))
        else waiting.resolve(message.result)
      } else if (message.method !== undefined && message.id !== undefined) {
        child.stdin.write(
          `${JSON.stringify({ jsonrpc: "2.0", id: message.id, result: message.method === "roots/list" ? { roots: [] } : {} })}\n`,
        )
      }
    }
    if (start < data.length) chunks.push(data.subarray(start))
  })
  const request = (method, params) =>
    new Promise((resolve, reject) => {
      const id = next++
      pending.set(id, { resolve, reject })
      child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`)
    })
  await request("initialize", {
    protocolVersion: "2025-11-25",
    capabilities: { extensions: { [EXTENSION]: {} } },
    clientInfo: { name: "skills-mcp-bench-sync", version: "1.0.0" },
  })
  child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })}\n`)
  const close = async () => {
    const exited = new Promise((resolve) => child.once("exit", resolve))
    child.stdin.end()
    const timer = setTimeout(() => child.kill("SIGKILL"), 5_000)
    await exited
    clearTimeout(timer)
  }
  return { request, pid: child.pid, spawnedAt, close }
}

/** Pages through skills/list to the end: its time, when its first page arrived, what it listed. */
const fullSync = async (session) => {
  const started = performance.now()
  let cursor
  let firstPageAt
  const listed = []
  do {
    const page = await session.request("skills/list", cursor === undefined ? {} : { cursor })
    firstPageAt ??= performance.now()
    listed.push(...page.skills)
    cursor = page.nextCursor
  } while (cursor !== undefined)
  return { ms: performance.now() - started, firstPageAt, listed }
}

/** The whole-catalog floors: walk + hash every file, and walk only (medians of three, interleaved). */
const measureWalkFloors = async (corpus) => {
  const runs = { hash: [], walk: [] }
  for (let round = 0; round < 3; round++) {
    runs.hash.push(
      JSON.parse((await runNode([path.join(HERE, "floor-walk.mjs"), corpus, "walk-hash"])).stdout).ms,
    )
    runs.walk.push(
      JSON.parse((await runNode([path.join(HERE, "floor-walk.mjs"), corpus, "walk-only"])).stdout).ms,
    )
  }
  return { walkHashMs: median(runs.hash), walkOnlyMs: median(runs.walk) }
}

/**
 * What a host of the Skills extension sees of one server: spawned with an empty cache folder,
 * a full sync (cold), a second one, 100 `skills/get` (and, for ours, 100 `get_skill`), how soon
 * an edited description shows in a re-sync (20 s at most), the peak RSS of that process; then a
 * full sync by a fresh process with the same cache folder. Leaves the corpus as it found it.
 */
const measureSync = async (argsOf, corpus, ids, withTools) => {
  const cacheHome = emptyCache()
  const env = minimalEnv({ XDG_CACHE_HOME: cacheHome })
  const result = {}
  const first = await rawSession(argsOf(corpus), env)
  const cold = await fullSync(first)
  result.firstPageFromSpawnMs = cold.firstPageAt - first.spawnedAt
  result.coldSyncMs = cold.ms
  result.coldFromSpawnMs = performance.now() - first.spawnedAt
  result.cpuAfterColdMs = cpuTicks(first.pid) * 10
  result.skills = cold.listed.length
  result.secondSyncMs = (await fullSync(first)).ms
  const uris = cold.listed.map((skill) => skill.uri)
  const randomId = idPicker(ids)
  result.skillsGet = await latencies(100, (i) =>
    first.request("skills/get", { uri: uris[(i * 7919) % uris.length] }),
  )
  if (withTools)
    result.getSkill = await latencies(100, () =>
      first.request("tools/call", { name: "get_skill", arguments: { id: randomId() } }),
    )
  // An edited description (a skill picked by the same sequence for every server), re-synced until seen.
  const victim = ids[Math.floor(ids.length / 3)]
  const file = path.join(corpus, victim, "SKILL.md")
  const original = fs.readFileSync(file)
  const token = `synced${Date.now().toString(36)}`
  const edited = original
    .toString("utf8")
    .replace(/^description:.*$/m, `description: Edited by the benchmark ${token}.`)
  const editedAt = performance.now()
  fs.writeFileSync(file, edited)
  result.editVisibleMs = Number.NaN
  while (performance.now() - editedAt < 20_000) {
    const { listed } = await fullSync(first)
    if (listed.some((skill) => String(skill.frontmatter?.description).includes(token))) {
      result.editVisibleMs = performance.now() - editedAt
      break
    }
    await sleep(20)
  }
  fs.writeFileSync(file, original)
  result.peakRssMb = peakRss(first.pid)
  await first.close()
  const fresh = await rawSession(argsOf(corpus), env)
  const again = await fullSync(fresh)
  result.freshSyncMs = again.ms
  result.freshFirstPageFromSpawnMs = again.firstPageAt - fresh.spawnedAt
  await fresh.close()
  fs.rmSync(cacheHome, { recursive: true, force: true })
  return result
}

const measureSize = async (size, corpus, ids) => {
  const large = size >= 50_000
  const iterations = large ? Math.min(ITERATIONS, 100) : ITERATIONS
  log("  starts")
  const { runs, warmCaches } = await measureStarts(corpus, large ? Math.min(REPS, 2) : REPS)
  const result = { size, bareInitMs: median(runs.bare), scanMs: median(runs.scan), servers: {} }
  for (const server of SERVERS) {
    result.servers[server] = {
      firstInitMs: median(runs[server].first),
      warmInitMs: median(runs[server].warm),
      ...(await measureSession(server, corpus, ids, warmCaches[server], large)),
    }
    fs.rmSync(warmCaches[server], { recursive: true, force: true })
  }
  log("  naive server")
  result.naive = {
    initMs: median(runs.naive),
    ...(await measureComparison(naive(corpus), corpus, ids, iterations, true)),
  }
  log("  bare SDK server")
  result.bareGet = (await measureComparison(bare(corpus), corpus, ids, iterations, false)).get
  if (!large) {
    log("  whole-catalog sync over the Skills extension")
    result.sync = { floors: await measureWalkFloors(corpus), servers: {} }
    for (const server of SERVERS)
      result.sync.servers[server] = await measureSync(
        (dir) => [BINS[server], "--skills-dir", dir],
        corpus,
        ids,
        true,
      )
    result.sync.servers.sdkV2 = await measureSync(
      (dir) => [path.join(HERE, "sdk-v2-server.mjs"), SDK_V2, dir],
      corpus,
      ids,
      false,
    )
  }
  return result
}

// ---------------------------------------------------------------------------------------
// Tables

const fixed = (value, digits = 1) => (Number.isFinite(value) ? value.toFixed(digits) : "-")
const times = (value) => (Number.isFinite(value) ? `${value.toFixed(2)}x` : "-")
const count = (value) => value.toLocaleString("en-US")
const p50p95p99 = (stats) => `${fixed(stats.p50, 2)} / ${fixed(stats.p95, 2)} / ${fixed(stats.p99, 2)}`
const seen = (next) => `${next.seen ? "yes" : "NO"} (${fixed(next.ms, 0)})`
const latency = (key) => ({
  cell: (s) => p50p95p99(s[key]),
  ratio: (a, b) => `${times(a[key].p50 / b[key].p50)} / ${times(a[key].p99 / b[key].p99)} (p50 / p99)`,
})
const number = (key, digits) => ({
  cell: (s) => fixed(s[key], digits),
  ratio: (a, b) => times(a[key] / b[key]),
})

/** Rows about each of our servers: the new one, then the baseline and new / baseline. */
const SERVER_ROWS = [
  ["initialize, first start (empty cache folder; median), ms", number("firstInitMs", 0)],
  ["initialize, warm (median), ms", number("warmInitMs", 0)],
  ["  warm / bare SDK server initialize", { cell: (s, r) => times(s.warmInitMs / r.bareInitMs) }],
  [
    "  warm / (frontmatter scan + bare SDK start)",
    { cell: (s, r) => times(s.warmInitMs / (r.scanMs + r.bareInitMs)) },
  ],
  ["first tools/list (right after initialize), ms", number("firstToolsListMs", 1)],
  ["first list_skills, ms", number("firstListMs", 1)],
  ["every SKILL.md body in the search index, ms after that", number("bodiesIndexedMs", 0)],
  ["list_skills p50 / p95 / p99, ms", latency("list")],
  ["list_skills {query} p50 / p95 / p99, ms", latency("search")],
  ["get_skill p50 / p95 / p99, ms", latency("get")],
  ["skills/get p50 / p95 / p99, ms", latency("skillsGet")],
  ["get_skill: 100 sequential, ms per request", number("sequentialPerRequestMs", 2)],
  ["get_skill: 1,000 concurrent, ms per request", number("concurrentPerRequestMs", 2)],
  ["peak RSS (VmHWM), MB", number("peakRssMb", 0)],
  ["every skill over skills/list, ms", number("listAllMs", 0)],
  ["  peak RSS after it, MB", number("peakRssAfterListAllMb", 0)],
  ["fresh after an edit, watcher, ms", number("freshEditMs", 0)],
  ["fresh after an addition, watcher, ms", number("freshAddMs", 0)],
  ["one edit: notifications tools / prompts / resources", { cell: (s) => s.notificationsForOneEdit }],
  ["no watcher: edit seen on the next call (ms)", { cell: (s) => seen(s.noWatchEdit) }],
  ["no watcher: addition seen on the next call (ms)", { cell: (s) => seen(s.noWatchAdd) }],
  ["folders watched (inotify)", { cell: (s) => count(s.watches) }],
  ["tools/list, bytes", { cell: (s) => count(s.toolsListBytes) }],
  ["instructions, characters", { cell: (s) => count(s.instructionsChars) }],
]

/** Rows about the comparison servers and floors, one per measure. */
const FLOOR_ROWS = [
  ["bare SDK server: initialize (median), ms", (r) => fixed(r.bareInitMs, 0)],
  ["bare SDK server: get_skill p50 / p95 / p99, ms", (r) => p50p95p99(r.bareGet)],
  ["naive server: initialize (median), ms", (r) => fixed(r.naive.initMs, 0)],
  ["naive server: get_skill p50 / p95 / p99, ms", (r) => p50p95p99(r.naive.get)],
  ["naive server: peak RSS (VmHWM), MB", (r) => fixed(r.naive.peakRssMb, 0)],
  ["frontmatter-only scan (median), ms", (r) => fixed(r.scanMs, 0)],
]

/** A size's ratio of our server's figure to the baseline's, if a baseline was measured. */
const vsBaseline = (key) => (r) => r.servers.baseline && r.servers.new[key] / r.servers.baseline[key]

/**
 * The targets of issues 32 and 35 (search over bodies: memory within 1.5x of the code before it,
 * so run with --baseline at commit 0132b4d): [label, a size's ratio, the largest ratio that
 * meets it, or one to stay below].
 */
const TARGETS = [
  ["initialize, first start: new / baseline", vsBaseline("firstInitMs"), 1.15],
  ["initialize, warm: new / baseline", vsBaseline("warmInitMs"), 1.15],
  ["get_skill p99 / bare SDK get_skill p99", (r) => r.servers.new.get.p99 / r.bareGet.p99, 1.5],
  ["list_skills {query} p99 / bare SDK get_skill p99", (r) => r.servers.new.search.p99 / r.bareGet.p99, 1.5],
  [
    "peak RSS: new / baseline (issue 35, bodies indexed: against 0132b4d, at 10,000)",
    vsBaseline("peakRssMb"),
    1.5,
  ],
  ["peak RSS: new / naive server", (r) => r.servers.new.peakRssMb / r.naive.peakRssMb, { below: 1 }],
]

/** Whole-catalog sync rows: [label, a sync result's cell]. */
const SYNC_ROWS = [
  ["first page from spawn, ms", (x) => fixed(x.firstPageFromSpawnMs, 0)],
  ["full sync, cold (from the first request), ms", (x) => fixed(x.coldSyncMs, 0)],
  ["second full sync, same process, ms", (x) => fixed(x.secondSyncMs, 0)],
  ["full sync in a fresh process (same cache folder), ms", (x) => fixed(x.freshSyncMs, 0)],
  [
    "an edited description visible to a re-syncing host, ms",
    (x) => (Number.isFinite(x.editVisibleMs) ? fixed(x.editVisibleMs, 0) : "never (20 s)"),
  ],
  ["CPU by the end of the first sync, ms", (x) => fixed(x.cpuAfterColdMs, 0)],
  ["peak RSS of the syncing process, MB", (x) => fixed(x.peakRssMb, 0)],
  ["skills/get p50 / p95 / p99, ms", (x) => p50p95p99(x.skillsGet)],
  ["get_skill p50 / p95 / p99 (same raw client), ms", (x) => (x.getSkill ? p50p95p99(x.getSkill) : "-")],
]
const SYNC_LABELS = { new: "new", baseline: "baseline", sdkV2: "SDK v2 (loadSkills)" }

/** Issue 36's targets: [label, a size's value, whether it meets the target, how it is shown]. */
const SYNC_TARGETS = [
  [
    "full sync, cold / walk+hash, target <= 2.5x",
    (r) => r.sync.servers.new.coldSyncMs / r.sync.floors.walkHashMs,
    (v) => v <= 2.5,
  ],
  [
    "second full sync / walk-only, target <= 1.0x",
    (r) => r.sync.servers.new.secondSyncMs / r.sync.floors.walkOnlyMs,
    (v) => v <= 1,
  ],
  [
    "fresh-process sync / walk-only, target <= 1.5x",
    (r) => r.sync.servers.new.freshSyncMs / r.sync.floors.walkOnlyMs,
    (v) => v <= 1.5,
  ],
  [
    "edit visible to a re-syncing host, target <= 1,000 ms",
    (r) => r.sync.servers.new.editVisibleMs,
    (v) => v <= 1000,
    "ms",
  ],
  [
    "1,000 concurrent get_skill, req/s new / naive, target >= 0.8x",
    (r) => r.naive.concurrentPerRequestMs / r.servers.new.concurrentPerRequestMs,
    (v) => v >= 0.8,
  ],
  [
    "skills/get p50 / SDK v2 skills/get p50, target <= 2x",
    (r) => r.sync.servers.new.skillsGet.p50 / r.sync.servers.sdkV2.skillsGet.p50,
    (v) => v <= 2,
  ],
  [
    "get_skill p50 / SDK v2 skills/get p50, target <= 2x",
    (r) => r.sync.servers.new.getSkill.p50 / r.sync.servers.sdkV2.skillsGet.p50,
    (v) => v <= 2,
  ],
  [
    "peak RSS of the syncing process, new / baseline, target <= 1.2x",
    (r) => r.sync.servers.baseline && r.sync.servers.new.peakRssMb / r.sync.servers.baseline.peakRssMb,
    (v) => v <= 1.2,
  ],
]

const syncTables = (results) => {
  const measured = results.filter((r) => r.sync !== undefined)
  if (measured.length === 0) return []
  const header = ["", ...measured.map((r) => `${count(r.size)} skills`)]
  const lines = []
  for (const [label, cell] of SYNC_ROWS) {
    for (const [index, server] of Object.keys(measured[0].sync.servers).entries())
      lines.push([
        index === 0 ? `${label}: ${SYNC_LABELS[server]}` : `  ${SYNC_LABELS[server]}`,
        ...measured.map((r) => cell(r.sync.servers[server])),
      ])
  }
  lines.push([
    "floor: walk + hash every file (median of 3), ms",
    ...measured.map((r) => fixed(r.sync.floors.walkHashMs, 0)),
  ])
  lines.push([
    "floor: walk every folder only (median of 3), ms",
    ...measured.map((r) => fixed(r.sync.floors.walkOnlyMs, 0)),
  ])
  lines.push([
    "1,000 concurrent get_skill, req/s: new",
    ...measured.map((r) => fixed(1000 / r.servers.new.concurrentPerRequestMs, 0)),
  ])
  if (measured[0].servers.baseline)
    lines.push([
      "  baseline",
      ...measured.map((r) => fixed(1000 / r.servers.baseline.concurrentPerRequestMs, 0)),
    ])
  lines.push(["  naive server", ...measured.map((r) => fixed(1000 / r.naive.concurrentPerRequestMs, 0))])
  const targets = SYNC_TARGETS.map(([label, measure, meets, unit]) => [
    label,
    ...measured.map((r) => {
      const value = measure(r)
      if (!Number.isFinite(value)) return "-"
      return `${unit === "ms" ? `${fixed(value, 0)} ms` : times(value)} ${meets(value) ? "ok" : "MISSED"}`
    }),
  ])
  return [
    "",
    "Whole-catalog sync over the Skills extension (a host paging skills/list to the end, raw JSON-RPC):",
    "",
    ...markdown(header, lines),
    "",
    "Issue 36's targets (ratios in this run):",
    "",
    ...markdown(header, targets),
  ]
}

const markdown = (header, lines) => {
  const all = [header, ...lines]
  const widths = header.map((_, column) => Math.max(...all.map((line) => line[column].length)))
  const render = (line) => `| ${line.map((cell, column) => cell.padEnd(widths[column])).join(" | ")} |`
  return [render(header), `|${widths.map((width) => "-".repeat(width + 2)).join("|")}|`, ...lines.map(render)]
}

const tables = (results, nodeStartMs) => {
  const header = ["", ...results.map((r) => `${count(r.size)} skills`)]
  const hasBaseline = SERVERS.includes("baseline")
  const lines = []
  for (const [label, { cell, ratio }] of SERVER_ROWS) {
    lines.push([hasBaseline ? `${label}: new` : label, ...results.map((r) => cell(r.servers.new, r))])
    if (!hasBaseline) continue
    lines.push(["  baseline", ...results.map((r) => cell(r.servers.baseline, r))])
    if (ratio)
      lines.push(["  new / baseline", ...results.map((r) => ratio(r.servers.new, r.servers.baseline))])
  }
  for (const [label, cell] of FLOOR_ROWS) lines.push([label, ...results.map(cell)])
  const targets = TARGETS.map(([label, ratioOf, limit]) => [
    `${label}, target ${limit.below === undefined ? `<= ${limit}` : `< ${limit.below}`}x`,
    ...results.map((r) => {
      const value = ratioOf(r)
      const met = limit.below === undefined ? value <= limit : value < limit.below
      return Number.isFinite(value) ? `${times(value)} ${met ? "ok" : "MISSED"}` : "-"
    }),
  ])
  return [
    ...markdown(header, lines),
    "",
    `\`node -e 0\` (median, measured once, up front): ${fixed(nodeStartMs, 0)} ms.`,
    "",
    "Targets of issues 32 and 35 (ratios in this run):",
    "",
    ...markdown(header, targets),
    ...syncTables(results),
  ].join("\n")
}

// ---------------------------------------------------------------------------------------

/**
 * Measures one corpus in a process of its own (this script with --one-size): what the
 * corpora measured before leave in the client's heap made it collect garbage during the
 * series of calls at 10,000 skills, and its tails longer.
 */
const measureInChild = (size) =>
  new Promise((resolve, reject) => {
    const file = path.join(WORK, `result-${size}-${process.pid}.json`)
    const args = ["--one-size", String(size), "--json", file, "--reps", String(REPS)]
    args.push("--iterations", String(ITERATIONS), "--node", NODE)
    args.push("--parts", PARTS.join(","), "--http-requests", String(HTTP_REQUESTS))
    if (options.baseline !== undefined) args.push("--baseline", options.baseline)
    const child = spawn(process.execPath, [fileURLToPath(import.meta.url), ...args], {
      stdio: ["ignore", "ignore", "inherit"],
    })
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

/** Copies a checkout's built bin (dist/bin.cjs and what it loads beside it) to `bin`. */
const copyBin = (checkout, bin) => {
  const dist = path.join(checkout, "dist")
  if (!fs.existsSync(path.join(dist, "bin.cjs")))
    throw new Error(`${dist}/bin.cjs is missing: build it first`)
  fs.rmSync(path.dirname(bin), { recursive: true, force: true })
  fs.mkdirSync(path.dirname(bin), { recursive: true })
  for (const file of fs.readdirSync(dist))
    if (/^(bin|skills-mcp)\.cjs/.test(file))
      fs.copyFileSync(path.join(dist, file), path.join(path.dirname(bin), file))
}

const loadavg = () =>
  os
    .loadavg()
    .map((load) => load.toFixed(2))
    .join(" ")

const main = async () => {
  fs.mkdirSync(home, { recursive: true })
  if (!options["no-build"]) {
    log("building dist/bin.cjs")
    execFileSync("npm", ["run", "--silent", "build:bin"], {
      cwd: PROJECT,
      stdio: ["ignore", "ignore", "inherit"],
    })
  }
  copyBin(PROJECT, BINS.new)
  if (STDIO) ensureSdkV2()
  if (options.baseline !== undefined) copyBin(path.resolve(options.baseline), BINS.baseline)
  for (const size of SIZES) {
    log(`corpus of ${count(size)} skills in ${corpusDir(size)}`)
    ensureCorpus(corpusDir(size), size)
  }
  const serverNode = execFileSync(NODE, ["--version"], { encoding: "utf8" }).trim()
  log(`machine: ${os.cpus().length} cpus, load ${loadavg()}; servers on node ${serverNode} (${NODE})`)
  // The first starts warm the disk cache.
  if (STDIO) await startMs(bare())
  for (const size of SIZES) await floorScan(corpusDir(size))
  const nodeStarts = []
  for (let rep = 0; STDIO && rep < REPS; rep++) nodeStarts.push((await runNode(["-e", "0"])).ms)
  const nodeStartMs = STDIO ? median(nodeStarts) : Number.NaN
  const results = []
  for (const size of SIZES) {
    log(`measuring ${count(size)} skills`)
    results.push(await measureInChild(size))
  }
  const stdioTables = STDIO ? `\n${tables(results, nodeStartMs)}\n` : ""
  const httpTables = HTTP
    ? `${httpTable(
        results.map((r) => r.http),
        markdown,
      ).join("\n")}\n`
    : ""
  process.stdout.write(`Servers on Node.js ${serverNode}.\n${stdioTables}${httpTables}`)
  log(`load at the end: ${loadavg()}`)
  if (options.json)
    fs.writeFileSync(
      options.json,
      JSON.stringify({ node: serverNode, nodeStartMs, results, loadavg: os.loadavg() }, null, 2),
    )
}

/** In the child: one corpus (generated by the parent), with the parent's copies of the bins. */
const measureOne = async (size) => {
  const corpus = corpusDir(size)
  const ids = ensureCorpus(corpus, size)
  const result = STDIO ? await measureSize(size, corpus, ids) : { size }
  if (HTTP) {
    log("  Streamable HTTP: serve --http and the bare SDK server")
    const cache = emptyCache()
    result.http = await measureHttp({
      node: NODE,
      bin: BINS.new,
      corpus,
      ids,
      randomId: idPicker(ids),
      requests: HTTP_REQUESTS,
      env: minimalEnv(),
      ourEnv: minimalEnv({ XDG_CACHE_HOME: cache }),
      log,
    })
    fs.rmSync(cache, { recursive: true, force: true })
  }
  fs.writeFileSync(options.json, JSON.stringify(result))
}

if (options["one-size"] === undefined) await main()
else await measureOne(Number(options["one-size"]))
