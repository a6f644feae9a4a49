#!/usr/bin/env node
/**
 * Search relevance evaluation (`npm run bench:search`; not part of `npm test`). Measures how
 * well list_skills' ranking finds the skill that answers a request, on the fixtures plus public
 * skill collections from the npm registry:
 *
 *   - search-eval/sources.json: the packages (exact versions) and the folders inside them that
 *     hold skills. Each is fetched once with `npm pack` into a cache folder
 *     ($XDG_CACHE_HOME/skills-mcp/eval, else <tmpdir>/skills-mcp-eval) and reused after that.
 *   - search-eval/queries.json: requests as people word them, each with the skill ids that
 *     answer it and a `kind` (keyword, acronym, body-only, paraphrase, stemming, typo, long).
 *
 * Starts the built server (dist/bin.cjs; built first if missing) over stdio with the SDK's
 * Client, every root as --skills-dir (fixtures/valid, examples/skills, then the packages),
 * calls list_skills {query, limit: 10} per query, and prints the rank of the first relevant id
 * per query, then recall@1, recall@5 and MRR@10, overall and per kind. It measures: the exit
 * code is 0 whatever the figures (1 only when it cannot run).
 *
 * Usage: npm run bench:search [-- --json]
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"

const PROJECT = fileURLToPath(new URL("../..", import.meta.url))
const HERE = path.join(PROJECT, "test", "bench", "search-eval")
const BIN = path.join(PROJECT, "dist", "bin.cjs")
const CACHE = process.env.XDG_CACHE_HOME
  ? path.join(process.env.XDG_CACHE_HOME, "skills-mcp", "eval")
  : path.join(os.tmpdir(), "skills-mcp-eval")
const LIMIT = 10
const log = (message) => process.stderr.write(`[search-eval] ${message}\n`)

const { values: options } = parseArgs({ options: { json: { type: "boolean", default: false } } })
const readJson = (file) => JSON.parse(fs.readFileSync(path.join(HERE, file), "utf8"))
const { sources } = readJson("sources.json")
const { queries } = readJson("queries.json")

// ---------------------------------------------------------------------------------------
// The skill roots

/** Unpacks a source's pinned version into the cache (once) and returns its folder. */
const fetchSource = ({ package: name, version, exclude = [] }) => {
  const dir = path.join(CACHE, `${name.replace("/", "+")}@${version}`)
  if (fs.existsSync(path.join(dir, ".complete"))) return dir
  log(`fetching ${name}@${version} into ${dir}`)
  fs.mkdirSync(CACHE, { recursive: true })
  const work = fs.mkdtempSync(path.join(CACHE, ".fetch-"))
  const packed = execFileSync("npm", ["pack", `${name}@${version}`, "--silent", "--pack-destination", work], {
    encoding: "utf8",
  })
  const tarball = packed.trim().split("\n").at(-1)
  const unpacked = path.join(work, "unpacked")
  fs.mkdirSync(unpacked)
  // npm tarballs hold everything under package/
  execFileSync("tar", ["xzf", path.join(work, tarball), "-C", unpacked, "--strip-components=1"])
  for (const folder of exclude) fs.rmSync(path.join(unpacked, folder), { recursive: true, force: true })
  fs.writeFileSync(path.join(unpacked, ".complete"), `${name}@${version}\n`)
  fs.rmSync(dir, { recursive: true, force: true })
  fs.renameSync(unpacked, dir)
  fs.rmSync(work, { recursive: true, force: true })
  return dir
}

const roots = [
  path.join(PROJECT, "fixtures", "valid"),
  path.join(PROJECT, "examples", "skills"),
  ...sources.flatMap((source) => {
    const dir = fetchSource(source)
    return source.dirs.map((folder) => path.join(dir, folder))
  }),
]

// ---------------------------------------------------------------------------------------
// The server

if (!fs.existsSync(BIN)) {
  log("dist/bin.cjs is missing: npm run build")
  execFileSync("npm", ["run", "build"], { cwd: PROJECT, stdio: ["ignore", process.stderr, "inherit"] })
}
const transport = new StdioClientTransport({
  command: process.execPath,
  args: [BIN, "--no-watch", ...roots.flatMap((root) => ["--skills-dir", root])],
  stderr: "pipe",
  env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? os.homedir() },
})
let serverLog = ""
transport.stderr?.on("data", (chunk) => {
  serverLog += chunk.toString("utf8")
})
const client = new Client({ name: "skills-mcp-search-eval", version: "1.0.0" })

/** list_skills' structuredContent: { skills: [{ id, name, description }], total, nextCursor? }. */
const listSkills = async (args) => {
  const result = await client.callTool({ name: "list_skills", arguments: args })
  const skills = result.structuredContent?.skills
  if (result.isError || !Array.isArray(skills)) {
    throw new Error(`list_skills ${JSON.stringify(args)} failed: ${JSON.stringify(result.content)}`)
  }
  return { ids: skills.map((skill) => skill.id), nextCursor: result.structuredContent.nextCursor }
}

/** Every id the server serves (all pages of list_skills without a query). */
const servedIds = async () => {
  const ids = new Set()
  let cursor
  do {
    const page = await listSkills(cursor === undefined ? {} : { cursor })
    for (const id of page.ids) ids.add(id)
    cursor = page.nextCursor
  } while (cursor !== undefined)
  return ids
}

// ---------------------------------------------------------------------------------------
// Measuring

const results = []
let served
try {
  await client.connect(transport)
  served = await servedIds()
  for (const { query, kind, relevant } of queries) {
    const { ids } = await listSkills({ query, limit: LIMIT })
    const index = ids.findIndex((id) => relevant.includes(id))
    results.push({ query, kind, relevant, rank: index === -1 ? null : index + 1, top: ids })
  }
} catch (error) {
  log(`${error instanceof Error ? error.message : String(error)}\n${serverLog}`)
  process.exitCode = 1
} finally {
  await client.close()
}

/** recall@1, recall@5 and MRR@10 of some results. */
const score = (rows) => {
  const share = (predicate) => rows.filter(predicate).length / rows.length
  return {
    queries: rows.length,
    recall1: share((row) => row.rank === 1),
    recall5: share((row) => row.rank !== null && row.rank <= 5),
    mrr10: rows.reduce((sum, row) => sum + (row.rank === null ? 0 : 1 / row.rank), 0) / rows.length,
  }
}

if (results.length === queries.length) {
  const unknown = [...new Set(queries.flatMap((query) => query.relevant))].filter((id) => !served.has(id))
  const kinds = [...new Set(results.map((row) => row.kind))].sort()
  const report = {
    sources: sources.map(({ package: name, version }) => `${name}@${version}`),
    skills: served.size,
    overall: score(results),
    byKind: Object.fromEntries(
      kinds.map((kind) => [kind, score(results.filter((row) => row.kind === kind))]),
    ),
    unknownRelevantIds: unknown,
    queries: results,
  }
  if (options.json) {
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`)
  } else {
    const fixed = (value) => value.toFixed(3)
    const lines = [
      `${served.size} skills served from ${roots.length} roots (${report.sources.join(", ")})`,
      "",
    ]
    lines.push("rank  kind        query (first ids returned, when no relevant one is in the top 5)")
    for (const row of results) {
      const missed =
        row.rank === null || row.rank > 5 ? `  -> ${row.top.slice(0, 3).join(", ") || "(none)"}` : ""
      lines.push(`${String(row.rank ?? "-").padStart(4)}  ${row.kind.padEnd(10)}  ${row.query}${missed}`)
    }
    lines.push("", "kind        queries  recall@1  recall@5  MRR@10")
    for (const [kind, figures] of [...Object.entries(report.byKind), ["overall", report.overall]]) {
      lines.push(
        `${kind.padEnd(10)}  ${String(figures.queries).padStart(7)}  ${fixed(figures.recall1).padStart(8)}  ${fixed(figures.recall5).padStart(8)}  ${fixed(figures.mrr10).padStart(6)}`,
      )
    }
    if (unknown.length > 0) lines.push("", `relevant ids the server does not serve: ${unknown.join(", ")}`)
    process.stdout.write(`${lines.join("\n")}\n`)
  }
}
