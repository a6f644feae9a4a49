#!/usr/bin/env node
/**
 * Tunes the search's ranking weights on the relevance evaluation (`node
 * test/bench/search-tune.mjs`). In one process: the skills the server serves from the
 * evaluation's roots (`skills-mcp list --json`), their SKILL.md parsed and split as the server
 * does it (src/skills/Frontmatter.ts), indexed with src/catalog/Search.ts (both bundled with
 * esbuild) once, then ranked under each weighting of a coarse grid, every query as list_skills
 * ranks it (an exact id or name first). Prints the best weightings by MRR@10, then recall@5, and
 * the defaults' figures for comparison. The grid is the same for every query: no query is tuned
 * on its own. The typo weight is not in the grid (MiniSearch's 0.45 is kept).
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { parseArgs } from "node:util"
import * as esbuild from "esbuild"
import { BIN, ensureBuilt, evalRoots, judge, LIMIT, PROJECT, queries, score } from "./search-eval/corpus.mjs"

ensureBuilt()
const roots = evalRoots()
const listed = JSON.parse(
  execFileSync(
    process.execPath,
    [BIN, "list", "--json", ...roots.flatMap((root) => ["--skills-dir", root])],
    {
      encoding: "utf8",
      maxBuffer: 64 * 1024 * 1024,
    },
  ),
)

// Inside the project, so that the packages it imports (left out of the bundle) are found.
const bundle = path.join(PROJECT, "node_modules", ".cache", "search-tune", "bundle.mjs")
await esbuild.build({
  stdin: {
    contents:
      'export { DEFAULT_WEIGHTS, makeSearchIndex } from "./src/catalog/Search.ts"\n' +
      'export { parseSkillText } from "./src/skills/Frontmatter.ts"\n',
    resolveDir: PROJECT,
    loader: "ts",
  },
  bundle: true,
  packages: "external",
  format: "esm",
  platform: "node",
  outfile: bundle,
  logLevel: "warning",
})
const { DEFAULT_WEIGHTS, makeSearchIndex, parseSkillText } = await import(pathToFileURL(bundle).href)

/** A served skill as the index sees it: its frontmatter's name and description, and its body. */
const skills = listed.served.map(({ id, file }) => {
  const parsed = parseSkillText(file, fs.readFileSync(file, "utf8"))
  if (parsed._tag === "Left") throw new Error(`${file}: ${parsed.left.reason}`)
  const { fields, body } = parsed.right
  return { id, name: fields.name, description: fields.description, body }
})

const index = makeSearchIndex()
index.sync(skills, new Map(skills.map((skill) => [skill.id, skill])))
for (const skill of skills) index.addBody(skill, skill.body)

/** The evaluation's figures under some weights. */
const evaluate = (weights) => {
  const results = queries.map((query) => {
    const key = query.query.trim().toLowerCase()
    const exact = skills.find((skill) => skill.id.toLowerCase() === key || skill.name.toLowerCase() === key)
    const ids = index
      .rank(query.query, { weights, first: exact })
      .slice(0, LIMIT)
      .map((skill) => skill.id)
    return judge(query, ids)
  })
  return { ...score(results), results }
}

const line = (weights, figures) =>
  `MRR@10 ${figures.mrr10.toFixed(3)}  recall@5 ${figures.recall5.toFixed(3)}  recall@1 ${figures.recall1.toFixed(3)}  fields ${weights.fields.join("/")}  b ${weights.b}  k ${weights.k}  d ${weights.d}  prefix ${weights.prefix}`
const { values: options } = parseArgs({ options: { weights: { type: "string" } } })
if (options.weights !== undefined) {
  // One weighting (JSON over the defaults): its figures and the queries it does not put first.
  const weights = { ...DEFAULT_WEIGHTS, ...JSON.parse(options.weights) }
  const figures = evaluate(weights)
  for (const row of figures.results.filter((row) => row.rank !== 1))
    process.stdout.write(
      `${String(row.rank ?? "-").padStart(3)}  ${row.query}  -> ${row.top.slice(0, 3).join(", ")}  (wanted ${row.relevant.join(", ")})\n`,
    )
  process.stdout.write(`${line(weights, figures)}\n`)
  process.exit(0)
}

const grid = []
for (const name of [1, 2, 3, 5])
  for (const headings of [0.2, 0.5, 1])
    for (const body of [0.03, 0.05, 0.1, 0.2])
      for (const b of [0.5, 0.75, 0.9])
        for (const k of [0.8, 1.2, 2])
          for (const d of [0, 0.5])
            for (const prefix of [0, 0.1, 0.2, 0.375])
              grid.push({ ...DEFAULT_WEIGHTS, fields: [name, 1, headings, body], b, k, d, prefix })

const tried = grid.map((weights) => ({ weights, figures: evaluate(weights) }))
tried.sort((x, y) => y.figures.mrr10 - x.figures.mrr10 || y.figures.recall5 - x.figures.recall5)
const lines = [`${skills.length} skills, ${queries.length} queries, ${grid.length} weightings`, "best:"]
for (const { weights, figures } of tried.slice(0, 10)) lines.push(`  ${line(weights, figures)}`)
lines.push("defaults:", `  ${line(DEFAULT_WEIGHTS, evaluate(DEFAULT_WEIGHTS))}`)
process.stdout.write(`${lines.join("\n")}\n`)
