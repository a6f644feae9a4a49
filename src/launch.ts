#!/usr/bin/env node
/**
 * The executable's first stage: loads the bundled server (`skills-mcp.cjs`, next to this
 * file) with V8's code cache, so an editor starting the server does not pay for compiling
 * a megabyte of JavaScript every time (Node 20 has no built-in compile cache).
 *
 * The cache lives in the user's own cache folder (`$XDG_CACHE_HOME/skills-mcp` or
 * `~/.cache/skills-mcp`, or `SKILLS_MCP_CACHE_DIR`), never in a shared temporary folder:
 * it is used only when that folder belongs to the user and nobody else can write to it. It is
 * keyed by the bundle file, Node's version and the machine; V8 also rejects data that does not
 * match, and the cache is then rewritten. `SKILLS_MCP_COMPILE_CACHE=0` turns it off. Any problem
 * with the cache falls back to a plain load. Only Node's own modules are used here.
 *
 * Without a cache of the user's (a first start, or an empty or throwaway `HOME`, as in
 * containers and sandboxes), the build's own cache is used: `npm run build` leaves one beside
 * the bundle (scripts/code-cache.mjs), made for that very bundle by a server session under the
 * Node.js that built it. When V8 takes it, the user's cache is then a copy of it.
 */
import * as fs from "node:fs"
import { createRequire, Module } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import * as vm from "node:vm"
import { errorCode, fsCalls } from "./FsPort.js"
import { tuneHeap, underStartFlags } from "./HeapTuning.js"
import { quietStackTraces, restoreStackTraces } from "./LoadStacks.js"

const bundle = path.join(__dirname, "skills-mcp.cjs")

/** The build's code cache: the SHA-256 of the bundle it was made for, then V8's data. */
const builtCache = `${bundle}.v8cache`
const DIGEST_BYTES = 32

/** Save the cache this long after start, once start-up and the first requests have compiled. */
const SAVE_AFTER_MS = 1_500

const cacheFolder = (): string | undefined => {
  const base =
    process.env.SKILLS_MCP_CACHE_DIR ??
    path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), ".cache"), "skills-mcp")
  try {
    makeFolder(base)
    const info = fs.statSync(base)
    const mine = typeof process.getuid !== "function" || info.uid === process.getuid()
    return info.isDirectory() && mine && (info.mode & 0o022) === 0 ? base : undefined
  } catch {
    return undefined
  }
}

/**
 * `mkdir -p` for the cache folder (new folders `0700`). Not `fs.mkdirSync`'s own `recursive`:
 * where the kernel answers "no such file" for a folder whose parent exists (under `/proc`, for
 * one), Node 20's loops for ever, and the server would never start.
 */
const makeFolder = (folder: string): void => {
  try {
    fs.mkdirSync(folder, { mode: 0o700 })
  } catch (error) {
    const code = errorCode(error)
    if (code === "EEXIST") return
    const parent = path.dirname(folder)
    if (code !== "ENOENT" || parent === folder) throw error
    makeFolder(parent)
    // Once more only: a second "no such file" is the answer. Another process starting at the
    // same moment may have made it meanwhile.
    try {
      fs.mkdirSync(folder, { mode: 0o700 })
    } catch (again) {
      if (!fs.statSync(folder, { throwIfNoEntry: false })?.isDirectory()) throw again
    }
  }
}

/**
 * V8's data from the build's cache, if it was made for these very bytes (V8 itself checks only
 * the source's length, its own version and its flags) and is as protected as the bundle: a
 * regular file with the bundle's owner, that nobody else can write to.
 */
const builtCacheFor = (bundleBytes: Buffer, bundleOwner: number): Buffer | undefined => {
  let fd: number
  try {
    // No link followed, and no wait for a writer if a pipe stands there (it is refused below).
    fd = fs.openSync(builtCache, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK)
  } catch {
    return undefined
  }
  try {
    const info = fs.fstatSync(fd)
    if (!info.isFile() || info.uid !== bundleOwner || (info.mode & 0o022) !== 0) return undefined
    const content = fs.readFileSync(fd)
    // Loaded only here: a start with the user's own cache never needs it (about 3 ms).
    const digest = process.getBuiltinModule("node:crypto").createHash("sha256").update(bundleBytes).digest()
    return content.length > DIGEST_BYTES && digest.equals(content.subarray(0, DIGEST_BYTES))
      ? content.subarray(DIGEST_BYTES)
      : undefined
  } catch {
    return undefined
  } finally {
    try {
      fs.closeSync(fd)
    } catch {
      // nothing to release
    }
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
  loading(() =>
    compiled.call(
      module.exports,
      module.exports,
      createRequire(bundle),
      module,
      bundle,
      path.dirname(bundle),
    ),
  )
  return script
}

/**
 * Runs the bundle with no stack trace formatted while its modules load (src/LoadStacks.ts):
 * the server puts the limit back once they have loaded, and this does if it did not.
 */
const loading = (load: () => void) => {
  quietStackTraces()
  try {
    load()
  } finally {
    restoreStackTraces()
  }
}

const main = () => {
  // The start's heap flags: both generations grow by V8's own factors, named, while the bundle
  // loads (src/HeapTuning.ts). Set before the bundle compiles: V8 checks a code cache against
  // the flags in effect. The server tightens them from its first scan on: for a long-running
  // server whose live data is small (the catalog: about 2 KB per skill) while request handling
  // allocates fast, V8's defaults let the young generation grow to 2 x 16 MB and the old one to
  // several times the live data before collecting, most of the peak memory at 10,000 skills
  // (see the README's Performance section). Flags the user gives Node (command line or
  // NODE_OPTIONS) about the same take precedence.
  tuneHeap()
  if (process.env.SKILLS_MCP_COMPILE_CACHE === "0") return loading(() => require(bundle))
  const folder = cacheFolder()
  const bytes = fs.readFileSync(bundle)
  // Keyed by the bundle file's identity (an edited or reinstalled bundle has another) and by
  // Node, not by the bundle's digest: hashing it at every start would add 4 to 5 ms (1.2 to 1.5
  // ms of SHA-256, and 2.8 to 4 ms to load node:crypto), about 5% of a start at 10 skills (the
  // build's cache, used only without one of the user's, is checked by its digest). V8 itself
  // rejects data made under other flags, another V8, or for a source of another length only.
  const { size, mtimeMs, ino, dev, uid } = fs.statSync(bundle)
  const key = `${process.version}-${process.platform}-${process.arch}-${dev}-${ino}-${size}-${Math.trunc(mtimeMs)}`
  const file = folder === undefined ? undefined : path.join(folder, `${key}.v8cache`)
  let users: Buffer | undefined
  try {
    users = file === undefined ? undefined : fs.readFileSync(file)
  } catch {
    users = undefined
  }
  const built = users === undefined ? builtCacheFor(bytes, uid) : undefined
  const script = run(bytes.toString("utf8"), users ?? built)
  // Only a server run writes the cache: by then the code it needs has been compiled.
  if (folder === undefined || file === undefined || !isServe(process.argv.slice(2))) return
  if (users !== undefined && !script.cachedDataRejected) return
  /** The cache is in place: written and renamed. */
  let saved = false
  /** Older caches (another bundle or Node) and temporary files a stopped process left. */
  const stale = (names: ReadonlyArray<string>) =>
    names
      .filter((name) => (name.endsWith(".v8cache") || name.endsWith(".tmp")) && name !== path.basename(file))
      .map((name) => path.join(folder, name))
  // V8 records the flags in effect in the cache and rejects it under others: the heap flags
  // are as a start sets them while it is made (the server's start-up changes them a while).
  const cachedDataNow = () => underStartFlags(() => script.createCachedData())
  /** What the user's cache gets: a copy of the build's when V8 took it, else V8's data by then. */
  const content = built !== undefined && !script.cachedDataRejected ? () => built : cachedDataNow
  // While serving, the cache is written without blocking the event loop. Through the
  // callback API, as the server's own reads (`fsCalls`, src/FsPort.ts): `fs.promises` would
  // load eight modules of Node's in the middle of serving.
  const saveLater = () => {
    const temporary = `${file}.${process.pid}.tmp`
    const data = content()
    fsCalls
      .writeFile(temporary, data, { mode: 0o600 })
      .then(() => fsCalls.rename(temporary, file))
      .then(() => {
        saved = true
        return fsCalls.readdir(folder)
      })
      .then((names) => Promise.all(stale(names).map((name) => fsCalls.rm(name, { force: true }))))
      .catch(() => fsCalls.rm(temporary, { force: true }).catch(() => undefined))
  }
  // At exit nothing is served any more: the cache is written synchronously if it is not in
  // place yet (a session shorter than SAVE_AFTER_MS, or one that ends while the write above is
  // under way, whose temporary file then goes with the stale ones).
  const saveNow = () => {
    if (saved) return
    saved = true
    const temporary = `${file}.${process.pid}.exit.tmp`
    try {
      fs.writeFileSync(temporary, content(), { mode: 0o600 })
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
