/**
 * HeapTuning: the V8 heap settings of the executable, and how the heap may grow during
 * start-up.
 *
 * The launcher (src/launch.ts) keeps V8's young generation at its initial size (1 MB
 * semi-spaces) and has the old one grow by 30% between full collections (instead of V8's own
 * factor): the server's live data is small and request handling allocates fast, so V8's
 * defaults were most of the peak memory at 10,000 skills.
 *
 * The first scan is the exception. It allocates about 15 KB per skill before `initialize`,
 * most of it short-lived, and with 1 MB semi-spaces a 10,000-skill scan took 170 scavenges.
 * While the first scan runs, the young generation may double, to 2 MB: 93 scavenges, and
 * `initialize` about 45 ms (6%) sooner at 10,000 skills, for about 2 MB more peak (see the
 * README's Performance section). V8 fixes the young generation's upper bound when it creates the heap,
 * before any code of ours runs, and grows it at a scavenge once more has survived since the
 * last growth than it holds. So the scan calls `scanStep` for each folder entry and file it
 * handles, each call looks at the young generation's size, and growth stops once it reaches
 * 2 MB, or when the scan ends; after that it does not grow again (V8 may still shrink it when
 * the server is idle). The size is looked at between steps, not within one: a single step
 * that keeps much alive (a folder listing of 100,000 entries, a frontmatter of 160 KB) can
 * double it more than once, up to V8's own bound, as it would without the launcher's flags.
 *
 * The old generation, too, grows faster (by 45%) from the first scan until the start-up work
 * in the background is over (`endStartUp`), and by 30% after.
 *
 * Only the executable changes V8's flags (`manageHeap`, from bin.ts), and not when the user
 * gave Node flags of the same kind (`*semi-space*`, `--heap-growing-percent`); the library
 * leaves them alone. This module uses only Node's own modules: the launcher imports it.
 */
import { getHeapSpaceStatistics, setFlagsFromString } from "node:v8"

/** How the old generation grows between full collections once start-up is over: by 30%. */
const OLD_GROWTH = "--heap-growing-percent=30"
/** ...and during start-up (see `endStartUp`): by 45%. */
const START_UP_GROWTH = "--heap-growing-percent=45"
/** The launcher's flags: the young generation keeps its size, the old one grows by 30%. */
const HEAP_FLAGS = ["--semi-space-growth-factor=1", OLD_GROWTH] as const

/** Whether the user gave Node a flag matching `pattern` (command line or NODE_OPTIONS). */
export const userGaveNodeFlag = (pattern: RegExp): boolean =>
  pattern.test(`${process.execArgv.join(" ")} ${process.env.NODE_OPTIONS ?? ""}`)

/** Whether the user gave Node flags about the heap's growth. */
const userTunesHeap = (): boolean => userGaveNodeFlag(/semi[-_]space|heap[-_]growing/)

/** How large the young generation's semi-spaces may grow during the first scan. */
const SCAN_SEMI_SPACE_BYTES = 2 * 1024 * 1024

let managed = false
let growing = false

/**
 * The old generation's growth flag while it is not the launcher's, that is while start-up
 * lasts (set by `beginFirstScan`, removed by `endStartUp`): a global both copies of this module
 * see, the launcher's and the server's (see `underStartFlags`).
 */
const GROWTH_NOW = Symbol.for("skills-mcp/oldGenerationGrowth")
/** Start-up ends by this time after the first scan began, whatever the work in the background. */
const START_UP_LIMIT_MS = 30_000

/** Sets the launcher's flags, unless the user's Node flags are about the same. */
export const tuneHeap = (): boolean => {
  if (userTunesHeap()) return false
  for (const flag of HEAP_FLAGS) setFlagsFromString(flag)
  return true
}

/**
 * The executable manages the heap: the launcher's flags (again, for a bundle started without
 * the launcher), and growth during the first scan. Not when the user's Node flags do.
 */
export const manageHeap = (): void => {
  managed = tuneHeap()
}

/**
 * The first scan begins: the young generation may grow to its bound (once per process), and
 * until the start-up work is over (`endStartUp`) the old one grows by 45%.
 */
export const beginFirstScan = (): void => {
  if (!managed) return
  managed = false
  growing = true
  setFlagsFromString("--semi-space-growth-factor=2")
  setFlagsFromString(START_UP_GROWTH)
  Reflect.set(globalThis, GROWTH_NOW, START_UP_GROWTH)
  // A check in the background that never ends (a stalled file system) must not keep it so.
  setTimeout(endStartUp, START_UP_LIMIT_MS).unref()
}

/**
 * The start-up work in the background (search index, watches) is over, or has lasted
 * START_UP_LIMIT_MS: the old generation grows by 30% again, from the next full collection on
 * (the idle collection that follows start-up, src/IdleGc.ts). Until then it grew by 45%: at
 * 30%, the garbage the first scan, the search index and the watches make at 10,000 skills
 * brought a full collection, and the concurrent marking of it, into the first half second
 * after `initialize`, where requests then took up to 14 to 25 ms in five runs of six. At 45%
 * the slowest took 4.3 to 9.4 ms over 20 runs; at 60%, 11 to 37 ms in five of 20, with a
 * higher peak (see the README's Performance section).
 */
export const endStartUp = (): void => {
  if (Reflect.get(globalThis, GROWTH_NOW) === undefined) return
  setFlagsFromString(OLD_GROWTH)
  Reflect.deleteProperty(globalThis, GROWTH_NOW)
}

/**
 * Runs `make` under the flags a start has (V8 records them in a code cache it makes, and
 * rejects the cache under others), then puts back the old generation's growth as it was.
 * The launcher's copy of this module runs it; the server's sets the growth.
 */
export const underStartFlags = <A>(make: () => A): A => {
  if (!tuneHeap()) return make()
  try {
    return make()
  } finally {
    const growth: unknown = Reflect.get(globalThis, GROWTH_NOW)
    if (typeof growth === "string") setFlagsFromString(growth)
  }
}

/** The first scan is over (or failed): the young generation grows no more. */
export const endFirstScan = (): void => {
  if (!growing) return
  growing = false
  setFlagsFromString("--semi-space-growth-factor=1")
}

/** One entry or file handled by a scan; a no-op unless the first scan lets the heap grow. */
export const scanStep = (): void => {
  if (!growing) return
  const young = getHeapSpaceStatistics().find((space) => space.space_name === "new_space")
  // The new space's size counts both semi-spaces (once the first scavenge has used the second).
  if (young === undefined || young.space_size >= 2 * SCAN_SEMI_SPACE_BYTES) endFirstScan()
}
