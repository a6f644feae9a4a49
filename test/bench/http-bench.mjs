/**
 * The HTTP part of `npm run bench` (issue 33): throughput and latency of `serve --http` against a
 * bare SDK Streamable HTTP server (bare-http-server.mjs) measured in the same run.
 *
 * For one corpus: our server (`serve --http 127.0.0.1:0`, waited for until /readyz answers 200
 * and then at rest) and the bare server (answering a fixed result as large as ours) run side by
 * side; each is driven in turn, for `get_skill` and `list_skills {query}`, by 1, 16 and 64
 * concurrent clients, each client a loop of raw JSON-RPC `tools/call` POSTs (no `initialize`:
 * both servers are stateless) over a keep-alive `http.Agent` of one socket per client. Each cell
 * is a fixed number of requests after a warm-up; it gives requests/s (requests / wall time) and
 * the p50 / p99 of each request's time as the client sees it, and the server's CPU time per
 * request (user + system, from /proc: less sensitive than requests/s to the other work on the
 * machine, since it does not count the time the server waits for a core). The order of the two servers
 * alternates between cells, so both see the machine in the same state.
 */
import { spawn } from "node:child_process"
import * as http from "node:http"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { benchQueries } from "./corpus.mjs"
import { cpuTicks, percentiles, settle, sleep } from "./measure.mjs"

const HERE = path.dirname(fileURLToPath(import.meta.url))
export const HTTP_CONCURRENCY = [1, 16, 64]
const TOOLS = ["get_skill", "search"]
/** The throughput target of issue 33: ours / bare. */
const TARGET = 0.7

/** A child process's first stdout or stderr line matching `pattern`, or a failure. */
const firstMatch = (child, stream, pattern, what) =>
  new Promise((resolve, reject) => {
    let text = ""
    const onData = (chunk) => {
      text += chunk
      const found = pattern.exec(text)
      if (found === null) return
      child[stream].off("data", onData)
      child[stream].resume() // keep draining what follows (our audit log)
      resolve(found[1])
    }
    child[stream].setEncoding("utf8")
    child[stream].on("data", onData)
    child.once("exit", (code) => reject(new Error(`${what} exited (${code}) before listening:\n${text}`)))
  })

const stopper = (child) => () =>
  new Promise((resolve) => {
    if (child.exitCode !== null) return resolve()
    child.once("exit", () => resolve())
    child.kill("SIGTERM")
  })

/** `serve --http 127.0.0.1:0` on `corpus`; resolves with its /mcp URL once it listens. */
const startOurs = async ({ node, bin, corpus, env }) => {
  const child = spawn(node, [bin, "serve", "--http", "127.0.0.1:0", "--skills-dir", corpus], {
    env,
    stdio: ["ignore", "ignore", "pipe"],
  })
  const url = await firstMatch(
    child,
    "stderr",
    /Serving MCP over HTTP at (http:\/\/\S+\/mcp)/,
    "serve --http",
  )
  return { url, pid: child.pid, stop: stopper(child) }
}

const startBare = async ({ node, env, getBytes, searchBytes }) => {
  const script = path.join(HERE, "bare-http-server.mjs")
  const child = spawn(node, [script, String(getBytes), String(searchBytes)], {
    env,
    stdio: ["ignore", "pipe", "inherit"],
  })
  const url = await firstMatch(child, "stdout", /^(http:\/\/\S+\/mcp)$/m, "bare-http-server.mjs")
  return { url, pid: child.pid, stop: stopper(child) }
}

/** Polls GET /readyz until 200 (ms waited), failing after 5 minutes. */
const waitReady = async (mcpUrl) => {
  const started = performance.now()
  const readyz = new URL("/readyz", mcpUrl)
  while (performance.now() - started < 300_000) {
    const status = await fetch(readyz).then(
      (response) => response.status,
      () => 0,
    )
    if (status === 200) return performance.now() - started
    await sleep(50)
  }
  throw new Error(`${readyz} never answered 200`)
}

/** One JSON-RPC POST; resolves with the JSON-RPC `result`, rejects on any error. */
const post = (agent, url, body) =>
  new Promise((resolve, reject) => {
    const request = http.request(
      url,
      {
        method: "POST",
        agent,
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": "2025-06-18",
          "content-length": Buffer.byteLength(body),
        },
      },
      (response) => {
        const chunks = []
        response.on("data", (chunk) => chunks.push(chunk))
        response.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8")
          if (response.statusCode !== 200) return reject(new Error(`HTTP ${response.statusCode}: ${text}`))
          const message = JSON.parse(text)
          if (message.error !== undefined || message.result?.isError)
            return reject(new Error(`JSON-RPC: ${text.slice(0, 300)}`))
          resolve(message.result)
        })
      },
    )
    request.on("error", reject)
    request.end(body)
  })

const callBody = (id, name, args) =>
  JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } })

/**
 * `count` requests by `concurrency` clients (each with a socket of its own, kept alive) to the
 * server `pid` listening at `url`: requests/s, latencies, the server's CPU ms per request, and
 * how many failed (a failed request counts in neither).
 */
const load = async ({ url, pid }, concurrency, count, bodyOf) => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency })
  const samples = []
  const failures = []
  let next = 0
  const client = async () => {
    while (next < count) {
      const index = next++
      const started = performance.now()
      try {
        await post(agent, url, bodyOf(index))
        samples.push(performance.now() - started)
      } catch (error) {
        failures.push(error.message)
      }
    }
  }
  const started = performance.now()
  const ticks = cpuTicks(pid)
  await Promise.all(Array.from({ length: concurrency }, client))
  const cpuMs = (cpuTicks(pid) - ticks) * 10 // clock ticks of 10 ms (USER_HZ)
  const wallMs = performance.now() - started
  agent.destroy()
  return {
    rps: (samples.length / wallMs) * 1000,
    cpuMsPerRequest: cpuMs / count,
    ...percentiles(samples),
    failed: failures.length,
    ...(failures.length ? { firstFailure: failures[0] } : {}),
  }
}

/** Mean size in bytes of the JSON `result` of `count` calls. */
const resultBytes = async (url, count, bodyOf) => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  let bytes = 0
  for (let index = 0; index < count; index++)
    bytes += Buffer.byteLength(JSON.stringify(await post(agent, url, bodyOf(index))))
  agent.destroy()
  return Math.round(bytes / count)
}

/**
 * Measures one corpus: `ids` its skill ids, `randomId` a picker over them, `requests` the
 * requests of each cell. `ourEnv` is our server's environment (its private cache folder).
 */
export const measureHttp = async ({ node, bin, corpus, ids, randomId, requests, env, ourEnv, log }) => {
  const queries = benchQueries(Math.min(3000, Math.max(100, ids.length)))
  const bodies = {
    get_skill: (index) => callBody(index, "get_skill", { id: randomId() }),
    search: (index) => callBody(index, "list_skills", { query: queries[index % queries.length] }),
  }
  const ours = await startOurs({ node, bin, corpus, env: ourEnv })
  let bare
  try {
    const readyMs = await waitReady(ours.url)
    // At rest: the search index holds every SKILL.md body, and the start-up work is over.
    await settle(ours.pid)
    const getBytes = await resultBytes(ours.url, 50, bodies.get_skill)
    const searchBytes = await resultBytes(ours.url, 50, bodies.search)
    bare = await startBare({ node, env, getBytes, searchBytes })
    await settle(bare.pid)
    const servers = { ours, bare }
    const cells = {}
    let turn = 0
    for (const tool of TOOLS) {
      cells[tool] = {}
      for (const concurrency of HTTP_CONCURRENCY) {
        log(`  HTTP ${tool === "search" ? "list_skills {query}" : tool}, ${concurrency} clients`)
        const cell = {}
        const order = turn++ % 2 ? ["bare", "ours"] : ["ours", "bare"]
        for (const name of order) {
          await load(servers[name], concurrency, Math.min(200, requests), bodies[tool]) // warm-up
          cell[name] = await load(servers[name], concurrency, requests, bodies[tool])
        }
        cells[tool][concurrency] = cell
      }
    }
    return { size: ids.length, readyMs, getBytes, searchBytes, requests, cells }
  } finally {
    await ours.stop()
    await bare?.stop()
  }
}

const fixed = (value, digits) => (Number.isFinite(value) ? value.toFixed(digits) : "-")
const LABELS = { get_skill: "`get_skill`", search: "`list_skills {query}`" }

/** The table of the HTTP part (markdown lines), one column per corpus. */
export const httpTable = (results, markdown) => {
  const header = ["", ...results.map((r) => `${r.size.toLocaleString("en-US")} skills`)]
  const lines = []
  for (const tool of TOOLS)
    for (const concurrency of HTTP_CONCURRENCY) {
      const cellOf = (r) => r.cells[tool][concurrency]
      const label = `${LABELS[tool]}, ${concurrency} client${concurrency > 1 ? "s" : ""}`
      const failed = (c) => (c.failed ? ` (${c.failed} FAILED)` : "")
      lines.push([
        `${label}: req/s ours / bare`,
        ...results.map((r) => {
          const c = cellOf(r)
          return `${fixed(c.ours.rps, 0)} / ${fixed(c.bare.rps, 0)}${failed(c.ours)}${failed(c.bare)}`
        }),
      ])
      lines.push([
        "  ours / bare throughput",
        ...results.map((r) => {
          const ratio = cellOf(r).ours.rps / cellOf(r).bare.rps
          return `${fixed(ratio, 2)}x ${ratio >= TARGET ? "ok" : "MISSED"}`
        }),
      ])
      lines.push([
        "  p50 / p99 ms: ours",
        ...results.map((r) => `${fixed(cellOf(r).ours.p50, 2)} / ${fixed(cellOf(r).ours.p99, 2)}`),
      ])
      lines.push([
        "  bare",
        ...results.map((r) => `${fixed(cellOf(r).bare.p50, 2)} / ${fixed(cellOf(r).bare.p99, 2)}`),
      ])
      lines.push([
        "  server CPU ms per request: ours / bare",
        ...results.map(
          (r) => `${fixed(cellOf(r).ours.cpuMsPerRequest, 2)} / ${fixed(cellOf(r).bare.cpuMsPerRequest, 2)}`,
        ),
      ])
    }
  lines.push(["/readyz 200 after it listens, ms", ...results.map((r) => fixed(r.readyMs, 0))])
  lines.push([
    "result size get_skill / list_skills {query}, bytes",
    ...results.map((r) => `${r.getBytes} / ${r.searchBytes}`),
  ])
  const requests = results[0]?.requests
  return [
    "",
    `Streamable HTTP (serve --http, stateless, JSON answers) against a bare SDK server answering a fixed`,
    `result of the same size; raw JSON-RPC POSTs over keep-alive sockets, ${requests} requests per cell;`,
    `target ours / bare throughput >= ${TARGET}x:`,
    "",
    ...markdown(header, lines),
  ]
}
