#!/usr/bin/env node
/**
 * The executable's first stage: loads the bundled server (`skills-mcp.cjs`, next to this
 * file) with V8's code cache, so an editor starting the server does not pay for compiling
 * two megabytes of JavaScript every time (Node 20 has no built-in compile cache).
 *
 * The cache lives in the user's own cache folder (`$XDG_CACHE_HOME/skills-mcp` or
 * `~/.cache/skills-mcp`, or `SKILLS_MCP_CACHE_DIR`), never in a shared temporary folder:
 * it is used only when that folder belongs to the user and nobody else can write to it. It is
 * keyed by the bundle file, Node's version and the machine; V8 also rejects data that does not
 * match, and the cache is then rewritten. `SKILLS_MCP_COMPILE_CACHE=0` turns it off. Any problem
 * with the cache falls back to a plain load. Only Node's own modules are used here.
 */
import * as fs from "node:fs"
import { createRequire, Module } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import * as vm from "node:vm"
import { tuneHeap } from "./HeapTuning.js"

const bundle = path.join(__dirname, "skills-mcp.cjs")

/** Save the cache this long after start, once start-up and the first requests have compiled. */
const SAVE_AFTER_MS = 1_500

const cacheFolder = (): string | undefined => {
  if (process.env.SKILLS_MCP_COMPILE_CACHE === "0") return undefined
  const base =
    process.env.SKILLS_MCP_CACHE_DIR ??
    path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), ".cache"), "skills-mcp")
  try {
    fs.mkdirSync(base, { recursive: true, mode: 0o700 })
    const info = fs.statSync(base)
    const mine = typeof process.getuid !== "function" || info.uid === process.getuid()
    return info.isDirectory() && mine && (info.mode & 0o022) === 0 ? base : undefined
  } catch {
    return undefined
  }
}

const run = (source: string, cachedData: Buffer | undefined) => {
  const script = new vm.Script(Module.wrap(source), {
    filename: bundle,
    ...(cachedData === undefined ? {} : { cachedData }),
  })
  const module = { exports: {} }
  const compiled: unknown = script.runInThisContext()
  if (typeof compiled !== "function") throw new Error("the bundle did not compile to a module wrapper")
  compiled.call(module.exports, module.exports, createRequire(bundle), module, bundle, path.dirname(bundle))
  return script
}

const main = () => {
  // Heap settings for a long-running server whose live data is small (the catalog: about 2 KB
  // per skill) while request handling allocates fast: V8's defaults let the young generation
  // grow to 2 x 16 MB and the old one to several times the live data before collecting, which
  // was most of the peak memory at 10,000 skills (254 MB against 170 with these in one A/B
  // run, for about 15% more time to `initialize`; see the README's Performance section). The
  // young generation keeps its initial size (the server lets it grow during its first scan:
  // src/HeapTuning.ts) and the old one grows by at most 30% between full collections. Flags
  // the user gives Node (command line or NODE_OPTIONS) about the same take precedence.
  tuneHeap()
  const folder = cacheFolder()
  if (folder === undefined) return void require(bundle)
  const source = fs.readFileSync(bundle, "utf8")
  // Keyed by the bundle file's identity (an edited or reinstalled bundle has another) and by
  // Node; hashing two megabytes at every start would cost more than the cache saves, and V8
  // rejects data whose source or flags do not match in any case.
  const { size, mtimeMs, ino, dev } = fs.statSync(bundle)
  const key = `${process.version}-${process.platform}-${process.arch}-${dev}-${ino}-${size}-${Math.trunc(mtimeMs)}`
  const file = path.join(folder, `${key}.v8cache`)
  let cachedData: Buffer | undefined
  try {
    cachedData = fs.readFileSync(file)
  } catch {
    cachedData = undefined
  }
  const script = run(source, cachedData)
  // Only a server run writes the cache: by then the code it needs has been compiled.
  if ((cachedData !== undefined && !script.cachedDataRejected) || !isServe(process.argv.slice(2))) return
  /** The cache is in place: written and renamed. */
  let saved = false
  /** Older caches (another bundle or Node) and temporary files a stopped process left. */
  const stale = (names: ReadonlyArray<string>) =>
    names
      .filter((name) => (name.endsWith(".v8cache") || name.endsWith(".tmp")) && name !== path.basename(file))
      .map((name) => path.join(folder, name))
  // V8 records the flags in effect in the cache and rejects it under others: the heap flags
  // are set as a start sets them (the first scan changes one for a while).
  const cachedDataNow = () => {
    tuneHeap()
    return script.createCachedData()
  }
  // While serving, the cache is written without blocking the event loop.
  const saveLater = () => {
    const temporary = `${file}.${process.pid}.tmp`
    const data = cachedDataNow()
    fs.promises
      .writeFile(temporary, data, { mode: 0o600 })
      .then(() => fs.promises.rename(temporary, file))
      .then(() => {
        saved = true
        return fs.promises.readdir(folder)
      })
      .then((names) => Promise.all(stale(names).map((name) => fs.promises.rm(name, { force: true }))))
      .catch(() => fs.promises.rm(temporary, { force: true }).catch(() => undefined))
  }
  // At exit nothing is served any more: the cache is written synchronously if it is not in
  // place yet (a session shorter than SAVE_AFTER_MS, or one that ends while the write above is
  // under way, whose temporary file then goes with the stale ones).
  const saveNow = () => {
    if (saved) return
    saved = true
    const temporary = `${file}.${process.pid}.exit.tmp`
    try {
      fs.writeFileSync(temporary, cachedDataNow(), { mode: 0o600 })
      fs.renameSync(temporary, file)
      for (const name of stale(fs.readdirSync(folder))) fs.rmSync(name, { force: true })
    } catch {
      // No cache this time; the next start tries again.
    }
  }
  setTimeout(saveLater, SAVE_AFTER_MS).unref()
  process.once("exit", saveNow)
}

/** `skills-mcp [serve] ...`: the server, as opposed to a one-shot command. */
const isServe = (args: ReadonlyArray<string>) =>
  !args.includes("--help") &&
  !args.includes("-h") &&
  !args.includes("--version") &&
  !args.includes("-v") &&
  !["instructions", "validate", "list"].includes(args[0] ?? "")

main()
