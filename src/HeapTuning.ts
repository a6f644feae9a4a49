/**
 * HeapTuning: the V8 heap settings of the executable, and how the heap may grow during
 * start-up; and how soon, and how far, V8 optimizes a function once the handshake is done
 * (`optimizeLater`).
 *
 * Once started, the server keeps V8's young generation at the size it has reached and has the
 * old one grow by 30% between full collections (instead of V8's own factor): its live data is
 * small and request handling allocates fast, so V8's defaults were most of the peak memory at
 * 10,000 skills.
 *
 * Start-up is the exception. Loading the bundle makes several megabytes of objects, nearly all of
 * which live on, and the first scan allocates about 15 KB per skill, most of it short-lived. With
 * the young generation held at its initial 1 MB semi-spaces, a 10-skill start made 15 scavenges
 * before answering `initialize`, and a 10,000-skill scan 170. So from the launch the young
 * generation grows as V8 grows it: it doubles at a scavenge once more has survived since the last
 * growth than it holds. V8 fixes the upper bound when it creates the heap, before any code of ours
 * runs, so the first scan looks at the size as it begins and between its steps (`scanStep`, for
 * each folder entry and file it handles): the growth stops once the semi-spaces have reached 2 MB,
 * or when the scan ends, and the young generation does not grow again after that (V8 may still
 * shrink it when the server is idle). A single step that keeps much alive (a folder listing of
 * 100,000 entries, a frontmatter of 160 KB) can double it more than once, up to V8's own bound, as
 * it would without these flags. Loading the bundle alone takes the semi-spaces to 4 MB on Node 20
 * (the 10-skill start makes 6 scavenges), so in practice the growth stops as the scan begins; at
 * 10 skills `initialize` came about 2 ms sooner, at 10,000 skills about 17 ms, for about 3 MB more
 * peak (see the README's Performance section). That is with the old generation's growth left to V8
 * while the bundle loads: with a percentage of ours set then, the start took as long as with the
 * small young generation.
 *
 * The old generation grows by V8's own factor while the bundle loads, by 100% from the first
 * scan until the start-up work in the background is over (`endStartUp`), and by 30% after.
 * A one-shot command whose scans are not the catalog's (`validate`) stops the young
 * generation's growth at its first step and leaves the old one's to V8: it exits once done.
 *
 * Only the executable changes V8's flags (the launcher before the bundle compiles, `manageHeap`
 * from bin.ts once it has loaded, the server at the handshake and its idle collector as start-up
 * ends), and not when the user gave Node flags of the same kind (`*semi-space*`,
 * `--heap-growing-percent`, `--interrupt-budget`, `--max-inlined-bytecode-size-cumulative`); the
 * library leaves them alone. This module uses only Node's own modules: the launcher imports it.
 */
import { getHeapSpaceStatistics, setFlagsFromString } from "node:v8"

/**
 * The young generation grows by V8's own factor. Set by name at launch, as when the code cache
 * is made (`underStartFlags`, which must put concrete values back afterwards): a start and the
 * cache it uses have the same flags, whatever V8's defaults are (V8 rejects a cache made under
 * other flags).
 */
const YOUNG_GROWS = "--semi-space-growth-factor=2"
/** ...and keeps its size. */
const YOUNG_KEEPS = "--semi-space-growth-factor=1"
/** The old generation grows as V8 decides (0: V8's own factor), named as YOUNG_GROWS is. */
const OLD_BY_V8 = "--heap-growing-percent=0"
/** How the old generation grows between full collections once start-up is over: by 30%. */
const OLD_GROWTH = "--heap-growing-percent=30"
/** ...and from the first scan until the start-up work is over (see `endStartUp`): by 100%. */
const START_UP_GROWTH = "--heap-growing-percent=100"
/** The flags a start has, from the launch: both generations grow as V8 grows them. */
const START_FLAGS = [YOUNG_GROWS, OLD_BY_V8] as const

/** Whether the user gave Node a flag matching `pattern` (command line or NODE_OPTIONS). */
export const userGaveNodeFlag = (pattern: RegExp): boolean =>
  pattern.test(`${process.execArgv.join(" ")} ${process.env.NODE_OPTIONS ?? ""}`)

/** Whether the user gave Node flags about the heap's growth. */
const userTunesHeap = (): boolean => userGaveNodeFlag(/semi[-_]space|heap[-_]growing/)

/** The young generation's semi-spaces at which the first scan stops their growth. */
const SCAN_SEMI_SPACE_BYTES = 2 * 1024 * 1024

/** Whether this process is the executable (`manageHeap` ran): only it changes V8's flags. */
let executable = false
/** Whether this process manages the heap and the catalog's first scan has not begun yet. */
let managed = false
/** Whether the young generation may still grow: until the first scan stops it. */
let growing = false

/**
 * The flags set last (young generation, old generation): a global both copies of this module
 * see, the launcher's and the server's (see `underStartFlags`). Absent when none were set.
 */
const FLAGS_NOW = Symbol.for("skills-mcp/heapFlags")
/** Start-up ends by this time after the first scan began, whatever the work in the background. */
const START_UP_LIMIT_MS = 30_000

const flagsNow = (): readonly [string, string] | undefined => {
  const flags: unknown = Reflect.get(globalThis, FLAGS_NOW)
  return Array.isArray(flags) && typeof flags[0] === "string" && typeof flags[1] === "string"
    ? [flags[0], flags[1]]
    : undefined
}

const setFlags = (young: string, old: string): void => {
  setFlagsFromString(young)
  setFlagsFromString(old)
  Reflect.set(globalThis, FLAGS_NOW, [young, old])
}

/**
 * The flags a start has (the launcher sets them before the bundle compiles), unless the user's
 * Node flags are about the same.
 */
export const tuneHeap = (): boolean => {
  if (userTunesHeap()) return false
  setFlags(...START_FLAGS)
  return true
}

/**
 * The executable manages the heap, once the bundle has loaded: the start's flags (again, for a
 * bundle started without the launcher), until the first scan. Not when the user's Node flags
 * are about the heap.
 */
export const manageHeap = (): void => {
  executable = true
  managed = tuneHeap()
  growing = managed
}

/**
 * The catalog's first scan begins (once per process): until the start-up work is over
 * (`endStartUp`) the old generation grows by 100%, and the young one stops growing if it has
 * already reached the scan's bound.
 */
export const beginFirstScan = (): void => {
  if (!managed) return
  managed = false
  setFlags(flagsNow()?.[0] ?? YOUNG_GROWS, START_UP_GROWTH)
  // A check in the background that never ends (a stalled file system) must not keep it so.
  setTimeout(endStartUp, START_UP_LIMIT_MS).unref()
  scanStep()
}

/**
 * The start-up work in the background (search index, watches) is over, or has lasted
 * START_UP_LIMIT_MS: the old generation grows by 30% again, from the next full collection on
 * (the idle collection that follows start-up, src/IdleGc.ts). Until then it grew by 100%: with
 * the full collection made as the handshake completes when the heap is large
 * (`collectAtHandshake`, src/IdleGc.ts), that is the start-up work's headroom, and in two
 * traced starts at 10,000 skills no other full collection came while that work ran (one that
 * does makes the requests made meanwhile wait for its marking). Without the collection at the
 * handshake no percentage kept it out: at 45%, chosen in an earlier session, the slowest
 * `get_skill` right after `initialize` took 4.3 to 9.4 ms over 20 runs against 14 to 25 ms at
 * 30%, and later builds moved the collection back into that work (figures in src/IdleGc.ts).
 * The peak at 10,000 skills was 2 to 4 MB higher at 100% than at 45%, without the collection at
 * the handshake (see the README's Performance section).
 */
export const endStartUp = (): void => {
  const now = flagsNow()
  if (now === undefined || now[1] !== START_UP_GROWTH) return
  setFlags(now[0], OLD_GROWTH)
}

/**
 * How V8's optimizing compiler (TurboFan) works once the handshake is done (the first scan
 * over), against how a start has it: a function is optimized only after ten times V8's
 * bytecode budget between its checks (`--interrupt-budget`), and a compile inlines at most 200
 * bytes of bytecode in all instead of 920 (`--max-inlined-bytecode-size-cumulative`). Only for
 * V8 11.3 (Node 20), whose defaults the start's values are: V8 rejects a code cache made under
 * other flags than a start has, so the start's values must be known to make one later
 * (`underStartFlags`), and later V8s have other defaults (and Maglev, a faster optimizing tier
 * between); there V8 keeps its own. A flag the user gave Node is left as given.
 *
 * Why the budget: the code that handles requests (Effect's fiber runtime, the SDK's zod parsing,
 * the tools) is not hot enough during start-up to be optimized, and V8 optimized it during the
 * first few hundred requests, on a helper thread: 53 compiles in the first 400 `get_skill` calls
 * at rest at 10,000 skills (88 ms of compiling, up to 12 ms for one function). On a machine of
 * two cores that thread takes a core from the server or its client, and the slowest calls were
 * those that met a compile. With the larger budget from the end of start-up, 41 compiles (50
 * ms), and the p99 of the bench's calls at rest fell; from the handshake on, the calls made
 * while the start-up work runs (the search index, the watches) gained too (see the README's
 * Performance section). Not optimizing at all after start-up (`--max-opt=1`) removed every
 * compile but made a search at 50,000 skills three times as slow (p50 4.1 ms against 1.3).
 *
 * Why the inlining: the compiles left still came, and a request that met a long one waited for
 * most of it. In a replay of the bench's 800 calls at rest at 10,000 skills, zod's object parse
 * (every message goes through it) was compiled once, at the same call of every run, in 9.1 ms,
 * and that `skills/get` took 8.6 ms in the server; with 200 bytes from the handshake on, 5.6 ms
 * (all the compiles of those calls: 138 ms against 170; one traced run of each). The scan keeps
 * V8's values.
 */
const OPTIMIZER_FLAGS = [
  { name: "interrupt-budget", start: 67_584, rest: 675_840 },
  { name: "max-inlined-bytecode-size-cumulative", start: 920, rest: 200 },
] as const
/** The V8 whose defaults the start's values are. */
const OPTIMIZER_V8 = /^11\.3\./

/**
 * The flags set at the handshake and their values at start, if any: a global both copies of this
 * module see (the launcher's makes the code cache, the server's sets them).
 */
const OPTIMIZER_NOW = Symbol.for("skills-mcp/optimizerFlags")

interface OptimizerFlags {
  readonly start: string
  readonly rest: string
}

const optimizerNow = (): OptimizerFlags | undefined => {
  const flags: unknown = Reflect.get(globalThis, OPTIMIZER_NOW)
  return typeof flags === "object" &&
    flags !== null &&
    "start" in flags &&
    typeof flags.start === "string" &&
    "rest" in flags &&
    typeof flags.rest === "string"
    ? { start: flags.start, rest: flags.rest }
    : undefined
}

/**
 * The handshake is done: from now on functions are optimized later, and their compiles inline
 * less (once per process, in the executable only).
 */
export const optimizeLater = (): void => {
  if (!executable || optimizerNow() !== undefined || !OPTIMIZER_V8.test(process.versions.v8)) return
  const ours = OPTIMIZER_FLAGS.filter(
    ({ name }) => !userGaveNodeFlag(new RegExp(name.replaceAll("-", "[-_]"))),
  )
  if (ours.length === 0) return
  const flags: OptimizerFlags = {
    start: ours.map(({ name, start }) => `--${name}=${start}`).join(" "),
    rest: ours.map(({ name, rest }) => `--${name}=${rest}`).join(" "),
  }
  setFlagsFromString(flags.rest)
  Reflect.set(globalThis, OPTIMIZER_NOW, flags)
}

/**
 * Runs `make` under the flags a start has (V8 records them in a code cache it makes, and
 * rejects the cache under others), then puts back the flags set before. The launcher's copy of
 * this module runs it; the server's sets the flags meanwhile. (A scavenge while `make` runs may
 * grow the young generation once more; nothing shrinks it back.)
 */
export const underStartFlags = <A>(make: () => A): A => {
  const heap = flagsNow()
  const optimizer = optimizerNow()
  const tuned = tuneHeap()
  if (optimizer !== undefined) setFlagsFromString(optimizer.start)
  try {
    return make()
  } finally {
    if (tuned && heap !== undefined) setFlags(...heap)
    if (optimizer !== undefined) setFlagsFromString(optimizer.rest)
  }
}

/** The first scan is over (or failed), or the young generation reached its bound: it grows no more. */
export const endFirstScan = (): void => {
  if (!growing) return
  growing = false
  setFlags(YOUNG_KEEPS, flagsNow()?.[1] ?? OLD_BY_V8)
}

/** One entry or file handled by a scan; a no-op once the young generation grows no more. */
export const scanStep = (): void => {
  if (!growing) return
  const young = getHeapSpaceStatistics().find((space) => space.space_name === "new_space")
  // The new space's size counts both semi-spaces (once the first scavenge has used the second).
  if (young === undefined || young.space_size >= 2 * SCAN_SEMI_SPACE_BYTES) endFirstScan()
}
