#!/usr/bin/env node
/**
 * Tunes the search's ranking weights on the relevance evaluation (`npm run bench:search --
 * --tune`, or `node test/bench/search-tune.mjs`). In one process: the skills the server serves
 * from the evaluation's roots (`skills-mcp list --json`), their SKILL.md read as the server reads
 * them, indexed with src/catalog/Search.ts (bundled with esbuild) under each weighting of a
 * coarse grid; every query ranked as list_skills ranks it (an exact id or name first). Prints
 * the best weightings by MRR@10, then recall@5, and the defaults' figures for comparison. The
 * grid is the same for every query: no query is tuned on its own.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { parseArgs } from "node:util"
import * as esbuild from "esbuild"
import { parse as parseYaml } from "yaml"
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

/** A served skill as the index sees it: its frontmatter's name and description, and its body. */
const skills = listed.served.map(({ id, file }) => {
  const text = fs.readFileSync(file, "utf8")
  const split = /^---\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/.exec(text)
  const fields = split === null ? {} : parseYaml(split[1] ?? "")
  const body = (split === null ? text : text.slice(split[0].length)).replace(/^(?:[ \t]*\r?\n)+/, "")
  return { id, name: String(fields.name ?? id), description: String(fields.description ?? ""), body }
})

const bundle = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "search-tune-")), "Search.mjs")
await esbuild.build({
  entryPoints: [path.join(PROJECT, "src", "catalog", "Search.ts")],
  bundle: true,
  format: "esm",
  platform: "node",
  outfile: bundle,
  logLevel: "warning",
})
const { DEFAULT_WEIGHTS, makeSearchIndex } = await import(pathToFileURL(bundle).href)

const index = makeSearchIndex()
index.sync(skills, new Map(skills.map((skill) => [skill.id, skill])))
for (const skill of skills) index.addBody(skill, skill.body)

/** The evaluation's figures under some weights. */
const evaluate = (weights) => {
  const results = queries.map((query) => {
    const key = query.query.trim().toLowerCase()
    const exact = skills.find((skill) => skill.id.toLowerCase() === key || skill.name.toLowerCase() === key)
    const ranked = index.rank(query.query, weights).skills.map((skill) => skill.id)
    const ids = exact === undefined ? ranked : [exact.id, ...ranked.filter((id) => id !== exact.id)]
    return judge(query, ids.slice(0, LIMIT))
  })
  return { ...score(results), results }
}

const line = (weights, figures) =>
  `MRR@10 ${figures.mrr10.toFixed(3)}  recall@5 ${figures.recall5.toFixed(3)}  recall@1 ${figures.recall1.toFixed(3)}  fields ${weights.fields.join("/")}  b ${weights.b}  k ${weights.k}  d ${weights.d}  prefix ${weights.prefix}  allWords ${weights.allWords}`
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
              for (const allWords of [true, false])
                grid.push({
                  ...DEFAULT_WEIGHTS,
                  fields: [name, 1, headings, body],
                  b,
                  k,
                  d,
                  prefix,
                  allWords,
                })

const tried = grid.map((weights) => ({ weights, figures: evaluate(weights) }))
tried.sort((x, y) => y.figures.mrr10 - x.figures.mrr10 || y.figures.recall5 - x.figures.recall5)
const lines = [`${skills.length} skills, ${queries.length} queries, ${grid.length} weightings`, "best:"]
for (const { weights, figures } of tried.slice(0, 10)) lines.push(`  ${line(weights, figures)}`)
// The rule that lists only skills matching every word (when any does), against the same
// weighting without it.
const twin = (weights) => JSON.stringify({ ...weights, allWords: undefined })
const without = new Map(
  tried.filter(({ weights }) => !weights.allWords).map((t) => [twin(t.weights), t.figures]),
)
const allWords = tried.filter(({ weights }) => weights.allWords)
const better = allWords.filter(
  ({ weights, figures }) => figures.mrr10 > (without.get(twin(weights))?.mrr10 ?? 1),
)
lines.push(
  `all words only: best ${line(allWords[0].weights, allWords[0].figures)}; above its twin without the rule in ${better.length} of ${allWords.length} weightings`,
)
lines.push("defaults:", `  ${line(DEFAULT_WEIGHTS, evaluate(DEFAULT_WEIGHTS))}`)
process.stdout.write(`${lines.join("\n")}\n`)
