/**
 * What the search evaluation runs on (search-eval.mjs through the server, search-tune.mjs in
 * process): the skill roots (the fixtures, the examples, and the public packages of
 * sources.json, fetched once with `npm pack` into a cache folder), the queries of queries.json,
 * and how results are scored.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

export const PROJECT = fileURLToPath(new URL("../../..", import.meta.url))
export const BIN = path.join(PROJECT, "dist", "bin.cjs")
const HERE = path.join(PROJECT, "test", "bench", "search-eval")
const CACHE = process.env.XDG_CACHE_HOME
  ? path.join(process.env.XDG_CACHE_HOME, "skills-mcp", "eval")
  : path.join(os.tmpdir(), "skills-mcp-eval")
/** Results asked for per query: MRR is counted over the first 10. */
export const LIMIT = 10
export const log = (message) => process.stderr.write(`[search-eval] ${message}\n`)

const readJson = (file) => JSON.parse(fs.readFileSync(path.join(HERE, file), "utf8"))
export const { sources } = readJson("sources.json")
export const { queries } = readJson("queries.json")

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

/** The skill roots, in the order the server is given them (the first wins on a duplicate id). */
export const evalRoots = () => [
  path.join(PROJECT, "fixtures", "valid"),
  path.join(PROJECT, "examples", "skills"),
  ...sources.flatMap((source) => {
    const dir = fetchSource(source)
    return source.dirs.map((folder) => path.join(dir, folder))
  }),
]

/** Builds dist/bin.cjs when it is missing. */
export const ensureBuilt = () => {
  if (fs.existsSync(BIN)) return
  log("dist/bin.cjs is missing: npm run build")
  execFileSync("npm", ["run", "build"], { cwd: PROJECT, stdio: ["ignore", process.stderr, "inherit"] })
}

/** A query's result: the rank of its first relevant id (null when not in the first LIMIT). */
export const judge = ({ query, kind, relevant }, ids) => {
  const index = ids.findIndex((id) => relevant.includes(id))
  return { query, kind, relevant, rank: index === -1 ? null : index + 1, top: ids }
}

/** recall@1, recall@5 and MRR@10 of some results. */
export const score = (rows) => {
  const share = (predicate) => rows.filter(predicate).length / rows.length
  return {
    queries: rows.length,
    recall1: share((row) => row.rank === 1),
    recall5: share((row) => row.rank !== null && row.rank <= 5),
    mrr10: rows.reduce((sum, row) => sum + (row.rank === null ? 0 : 1 / row.rank), 0) / rows.length,
  }
}
