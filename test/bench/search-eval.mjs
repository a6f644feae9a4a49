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
import * as os from "node:os"
import { parseArgs } from "node:util"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import {
  BIN,
  ensureBuilt,
  evalRoots,
  judge,
  LIMIT,
  log,
  queries,
  score,
  sources,
} from "./search-eval/corpus.mjs"

const { values: options } = parseArgs({ options: { json: { type: "boolean", default: false } } })
const roots = evalRoots()

// ---------------------------------------------------------------------------------------
// The server

ensureBuilt()
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

/**
 * Waits until the search index holds every skill's body (indexed in the background after
 * start-up), so the figures do not depend on how fast that went.
 */
const bodiesIndexed = async () => {
  for (let tries = 0; tries < 600; tries++) {
    const result = await client.callTool({ name: "list_skills", arguments: { query: "skill", limit: 1 } })
    const searched = result.structuredContent?.searched
    if (searched !== undefined && searched.bodies >= searched.skills) return
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error("the server did not index every skill's body within 60 s")
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
  await bodiesIndexed()
  for (const query of queries)
    results.push(judge(query, (await listSkills({ query: query.query, limit: LIMIT })).ids))
} catch (error) {
  log(`${error instanceof Error ? error.message : String(error)}\n${serverLog}`)
  process.exitCode = 1
} finally {
  await client.close()
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
