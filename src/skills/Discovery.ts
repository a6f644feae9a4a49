/**
 * Discovery: finds `SKILL.md` files under the configured roots.
 *
 * A folder holding a `SKILL.md` is a skill and is not searched further. Other folders are
 * groups, searched down to `maxDepth` levels below the root. `node_modules` and dot-folders
 * are skipped, except `.claude/skills` and `.agents/skills` directly in a root (and, with
 * --include-dot-folders, every dot-folder but `.git`). A root that holds no skill gets a
 * notice, which names the dot-folders that hold skills when there are any. A symbolic
 * link is followed only when its real path stays inside the root's real path; a folder
 * reached through a link is read only if no other path has led to it yet, so link loops end
 * and links between sibling folders cost one read per real folder, not one per path.
 */
import * as path from "node:path"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Stream from "effect/Stream"
import type { IdFilter } from "../Access.js"
import { idFilter } from "../Access.js"
import type { FsPort } from "../platform/Fs.js"
import { Fs, mapLimit } from "../platform/Fs.js"
import type { Fingerprint } from "../platform/Paths.js"
import { childPath, fingerprintOf, isInside } from "../platform/Paths.js"
import type { Root } from "../Settings.js"
import { Settings } from "../Settings.js"

export const SKILL_FILE = "SKILL.md"

export interface Candidate {
  readonly root: Root
  /** The root's real path, pinned when the server started (see `Discovery`). */
  readonly rootReal: string
  /** Position of the root in priority order (0 wins). */
  readonly rootIndex: number
  /** Absolute skill folder, below the root as configured. */
  readonly dir: string
  /** The skill folder's real path. */
  readonly real: string
  /** Absolute path of the skill's SKILL.md. */
  readonly file: string
  /** The folder name: the skill's id. */
  readonly id: string
  /** Folder path below its collection (root, root/skills or root/.claude/skills), for URIs. */
  readonly segments: ReadonlyArray<string>
  readonly fingerprint: Fingerprint
}

export interface DiscoveryNotice {
  readonly path: string
  readonly reason: string
  /**
   * "empty-root": a root that holds no skill (the notice's path is the root); "source": a git
   * source's problem (its path is the source, `URL#REF:SUBDIR`); else a folder not followed.
   */
  readonly kind?: "empty-root" | "source"
  /** With "empty-root": the dot-folders below the root that hold skills, relative to it. */
  readonly dotFolders?: ReadonlyArray<string>
}

/** A skill folder inside another skill's folder: not a skill of its own. */
export interface NestedSkill {
  readonly candidate: Candidate
  /** The SKILL.md of the skill whose folder holds it. */
  readonly outer: string
  /** That skill's id. */
  readonly outerId: string
}

/** Why a nested skill folder is not served (the `skill-nested` rule). */
export const nestedReason = ({ outer }: NestedSkill): string =>
  `its folder is inside the folder of the skill ${outer}: its files are that skill's, not a skill of their own`

export interface DiscoveryResult {
  readonly candidates: ReadonlyArray<Candidate>
  readonly nested: ReadonlyArray<NestedSkill>
  readonly notices: ReadonlyArray<DiscoveryNotice>
  /** The folders that were read (roots and groups): where a new skill folder would appear. */
  readonly folders: ReadonlyArray<string>
  /**
   * Folders looked at but not read: groups at the depth limit, where only a new SKILL.md
   * would make a skill, and a root's `.claude`/`.agents` without `skills` yet. A watcher
   * follows them too, or a skill appearing there would go unseen.
   */
  readonly edges: ReadonlyArray<string>
}

/** One root's findings; `denied`: the real folders of skills the operator's lists leave out. */
export type RootResult = Omit<DiscoveryResult, "nested"> & { readonly denied: ReadonlyArray<string> }

/** Dot-folders searched in a root, each only for its `skills` child. */
const NAMED_DOT_FOLDERS = new Set([".claude", ".agents"])

const skipFolder = (name: string, includeDotFolders = false) =>
  name === "node_modules" || name === ".git" || (!includeDotFolders && name.startsWith("."))

/**
 * The notice of a root in which discovery found no skill. When dot-folders (skipped) hold
 * skills, as in a collection that keeps them under `.curated/` and `.system/`, it names them
 * and says how to serve them; looking costs a second walk, made only for a root found empty.
 */
const emptyRootNotice = (
  root: Root,
  maxDepth: number,
  /** What a search of the dot-folders found (nothing when they were searched already). */
  inDotFolders: ReadonlyArray<Candidate>,
  /** Skill folders passed over for --allow/--deny. */
  denied: number,
): DiscoveryNotice => {
  const counts = new Map<string, number>()
  for (const candidate of inDotFolders) {
    const parts = path.relative(root.path, candidate.dir).split(path.sep)
    const dot = parts.findIndex((part) => part.startsWith("."))
    if (dot < 0) continue
    const folder = parts.slice(0, dot + 1).join("/")
    counts.set(folder, (counts.get(folder) ?? 0) + 1)
  }
  const dotFolders = [...counts.keys()].sort()
  const where = dotFolders.map((folder) => `${folder} (${counts.get(folder)})`).join(", ")
  const deniedNote =
    denied > 0 ? `; ${denied} skill folder${denied === 1 ? " is" : "s are"} left out by --allow/--deny` : ""
  const reason =
    dotFolders.length === 0
      ? `no skill found in this skills folder (a skill is a folder holding a SKILL.md, at most ${maxDepth} levels down)${deniedNote}`
      : `no skill found outside dot-folders, which discovery skips; skills are in ${where}: pass --include-dot-folders (or set SKILLS_MCP_INCLUDE_DOT_FOLDERS=1) to serve them${deniedNote}`
  return { path: root.path, reason, kind: "empty-root", dotFolders }
}

interface Pending {
  readonly dir: string
  /** The folder's name: the last part of `dir`. */
  readonly name: string
  /** The folder's real path (derived without a syscall for plain sub-folders). */
  readonly real: string
  readonly segments: ReadonlyArray<string>
  readonly depth: number
  /** Reached through a symbolic link: another path may lead to the same folder. */
  readonly viaLink: boolean
}

/**
 * A link that does not lead to something inside the root. One wording whether its target
 * exists, is a folder or a file: diagnostics never tell what lies outside the root.
 */
const LEAVES_ROOT = "symbolic link leads outside the skills folder (or nowhere); not followed"

/** A root whose path no longer leads where it led at start (swapped for a link, say). */
const ROOT_MOVED =
  "the skills folder no longer leads to the folder it was when the server started; nothing in it is served until the server is restarted"

interface Found {
  readonly candidate: Candidate
  readonly viaLink: boolean
}

/** How discovery searches a root. */
export interface ScanOptions {
  readonly maxDepth: number
  /** Skills the operator exposes (`--allow`/`--deny`); others are passed over unread. */
  readonly permits?: IdFilter | undefined
  /** Search dot-folders too (never `.git` nor `node_modules`). */
  readonly includeDotFolders?: boolean
}

/** Finds the skills under one root through `port` (sync on the first scan, async later). */
export const discoverRoot = async (
  port: FsPort,
  root: Root,
  /** The root's real path as pinned at start (see `Discovery`); null while it cannot be resolved. */
  pinned: string | null,
  rootIndex: number,
  options: ScanOptions,
): Promise<RootResult> => {
  const { maxDepth, permits, includeDotFolders = false } = options
  const found: Array<Found> = []
  /** Skill folders passed over for the operator's lists (real paths: no skill below them is served). */
  const deniedFolders: Array<string> = []
  const notices: Array<DiscoveryNotice> = []
  const folders: Array<string> = []
  const edges: Array<string> = []
  /** Real folders already reached (directly or through a link). */
  const reached = new Set<string>()
  const rootReal = pinned === null ? null : await port.realpath(root.path)
  if (rootReal === null) {
    notices.push({ path: root.path, reason: "the skills folder cannot be read" })
    return { candidates: [], notices, folders, edges, denied: [] }
  }
  if (rootReal !== pinned) {
    notices.push({ path: root.path, reason: ROOT_MOVED })
    return { candidates: [], notices, folders, edges, denied: [] }
  }

  /** The skill in a folder: none, refused (a SKILL.md that leaves the folder), or a candidate. */
  const skillIn = async (pending: Pending): Promise<Candidate | "refused" | null> => {
    const file = childPath(pending.dir, SKILL_FILE)
    // The operator's lists apply to the folder's name and to its real name: a link cannot
    // give a denied skill another id. A denied one is only looked at (skill or group?), not read.
    const permitted = permits === undefined || (permits(pending.name) && permits(path.basename(pending.real)))
    let info = await port.lstat(file)
    if (info === null) return null
    if (!permitted) {
      deniedFolders.push(pending.real)
      return "refused"
    }
    if (info.isSymbolicLink()) {
      const real = await port.realpath(file)
      if (real === null || !isInside(pending.real, real)) {
        notices.push({
          path: file,
          reason: "SKILL.md is a symbolic link that leaves its skill folder; skipped",
        })
        return "refused"
      }
      info = await port.stat(real)
      if (info === null) return "refused"
    }
    if (!info.isFile()) return null
    return {
      root,
      rootReal,
      rootIndex,
      dir: pending.dir,
      real: pending.real,
      file,
      id: pending.name,
      segments: pending.segments.length > 0 ? pending.segments : [pending.name],
      fingerprint: fingerprintOf(info),
    }
  }

  /**
   * A linked folder's real path, when it is a folder inside the root and not an ancestor (a
   * loop). A link that leads outside the root, or nowhere, gets one notice, whatever is there.
   */
  const linked = async (parent: Pending, dir: string): Promise<string | null> => {
    const real = await port.realpath(dir)
    if (real === null || !isInside(rootReal, real)) {
      notices.push({ path: dir, reason: LEAVES_ROOT })
      return null
    }
    if ((await port.stat(real))?.isDirectory() !== true) return null
    return isInside(real, parent.real) ? null : real
  }

  /** Examines one folder: a skill, or a group whose sub-folders are returned. */
  const visit = async (pending: Pending): Promise<Array<Pending>> => {
    // Checked and marked before the first await: visits of one level run interleaved. A folder
    // reached directly is always read (its path is the one a skill is served at).
    if (pending.viaLink && reached.has(pending.real)) return []
    reached.add(pending.real)
    const skill = await skillIn(pending)
    if (skill === "refused") return []
    if (skill !== null) {
      found.push({ candidate: skill, viaLink: pending.viaLink })
      return []
    }
    if (pending.depth >= maxDepth) {
      edges.push(pending.dir)
      return []
    }
    const entries = await port.readdir(pending.dir)
    if (entries === null) {
      notices.push({ path: pending.dir, reason: "folder cannot be read; skipped" })
      return []
    }
    folders.push(pending.dir)
    const next: Array<Pending> = []
    const replaced = new Set<string>()
    for (const entry of entries) {
      const name = entry.name
      // Node decodes a name that is not UTF-8 with U+FFFD for the bad bytes: a path made of it
      // names another folder (one whose name holds U+FFFD itself, read once) or none.
      if (name.includes("\uFFFD") && (entry.isDirectory() || entry.isSymbolicLink())) {
        if (replaced.has(name) || (await port.lstat(childPath(pending.dir, name))) === null) {
          notices.push({
            path: childPath(pending.dir, name),
            reason: "a folder name that is not UTF-8; skipped",
          })
          continue
        }
        replaced.add(name)
      }
      if (pending.depth === 0 && NAMED_DOT_FOLDERS.has(name)) {
        const dir = path.join(pending.dir, name, "skills")
        const real = (await port.lstat(dir)) === null ? null : await linked(pending, dir)
        const direct = path.join(rootReal, name, "skills")
        if (real !== null)
          next.push({ dir, name: "skills", real, segments: [], depth: 2, viaLink: real !== direct })
        else if (entry.isDirectory()) edges.push(path.join(pending.dir, name))
        continue
      }
      if (skipFolder(name, includeDotFolders) || !(entry.isDirectory() || entry.isSymbolicLink())) continue
      const dir = childPath(pending.dir, name)
      const segments = pending.depth === 0 && name === "skills" ? [] : [...pending.segments, name]
      const depth = pending.depth + 1
      // A plain sub-folder needs no system call (and no await: a root holds thousands). Below a
      // folder that is its own real path, it is too (one string for both).
      if (entry.isDirectory()) {
        const real = pending.real === pending.dir ? dir : childPath(pending.real, name)
        next.push({ dir, name, real, segments, depth, viaLink: pending.viaLink })
        continue
      }
      const real = await linked(pending, dir)
      if (real !== null) next.push({ dir, name, real, segments, depth, viaLink: true })
    }
    return next
  }

  let level: Array<Pending> = [
    {
      dir: root.path,
      name: path.basename(root.path),
      real: rootReal,
      segments: [],
      depth: 0,
      viaLink: false,
    },
  ]
  while (level.length > 0) {
    const next = await mapLimit(level, port.concurrency, visit)
    level = next.flat()
  }
  if (found.length === 0) {
    const inDotFolders = includeDotFolders
      ? []
      : (await discoverRoot(port, root, pinned, rootIndex, { ...options, includeDotFolders: true }))
          .candidates
    notices.push(emptyRootNotice(root, maxDepth, inDotFolders, deniedFolders.length))
  }
  return { candidates: onePathPerFolder(found), notices, folders, edges, denied: deniedFolders }
}

/**
 * Every root through `port`, roots in priority order, each root's skills in path order. A root
 * given as undefined (a source with nothing to serve yet) keeps its place and finds nothing.
 */
const discoverAll = async (
  port: FsPort,
  roots: ReadonlyArray<{ readonly root: Root; readonly pinned: string | null } | undefined>,
  options: ScanOptions,
): Promise<DiscoveryResult> => {
  const perRoot = await mapLimit(roots, 4, (entry, index) =>
    entry === undefined
      ? Promise.resolve({ candidates: [], notices: [], folders: [], edges: [], denied: [] })
      : discoverRoot(port, entry.root, entry.pinned, index, options),
  )
  const { candidates, nested } = oneSkillPerFolder(
    perRoot.flatMap((result) => result.candidates),
    perRoot.flatMap((result) => result.denied),
  )
  return {
    candidates,
    nested,
    notices: perRoot.flatMap((result) => result.notices),
    folders: perRoot.flatMap((result) => result.folders),
    edges: perRoot.flatMap((result) => result.edges),
  }
}

/**
 * Path order, and one candidate per real folder: a folder reached both directly and through
 * a link is kept at its direct path.
 */
const onePathPerFolder = (found: ReadonlyArray<Found>): Array<Candidate> => {
  // Each key made once, not at every comparison.
  const sorted = found
    .map((entry) => ({ entry, key: segmentsKey(entry.candidate.segments) }))
    .sort((a, b) => compareKeys(a.key, b.key))
    .map(({ entry }) => entry)
  const chosen = new Map<string, (typeof sorted)[number]>()
  for (const entry of sorted) {
    const current = chosen.get(entry.candidate.real)
    if (current === undefined || (current.viaLink && !entry.viaLink)) chosen.set(entry.candidate.real, entry)
  }
  const kept = new Set(chosen.values())
  return sorted.filter((entry) => kept.has(entry)).map((entry) => entry.candidate)
}

/**
 * Across roots: a folder found from two roots (one root inside another) is the first one's
 * skill only, and a skill folder inside another skill's folder (a root or a link inside a
 * skill) is no skill of its own: its files are the outer skill's. One inside the folder of a skill
 * the operator's lists leave out (`denied`) is left out too, as that skill's files are.
 */
const oneSkillPerFolder = (
  found: ReadonlyArray<Candidate>,
  denied: ReadonlyArray<string>,
): { readonly candidates: Array<Candidate>; readonly nested: Array<NestedSkill> } => {
  const byReal = new Map<string, Candidate>()
  for (const candidate of found) if (!byReal.has(candidate.real)) byReal.set(candidate.real, candidate)
  const candidates: Array<Candidate> = []
  const nested: Array<NestedSkill> = []
  const deniedFolders = new Set(denied)
  for (const candidate of found) {
    if (byReal.get(candidate.real) !== candidate) continue
    let outer: Candidate | undefined
    let inDenied = false
    for (let dir = path.dirname(candidate.real); outer === undefined && !inDenied; dir = path.dirname(dir)) {
      outer = byReal.get(dir)
      inDenied = deniedFolders.has(dir)
      if (dir === path.dirname(dir)) break
    }
    if (inDenied) continue
    if (outer === undefined) candidates.push(candidate)
    else nested.push({ candidate, outer: outer.file, outerId: outer.id })
  }
  return { candidates, nested }
}

const segmentsKey = (segments: ReadonlyArray<string>) => segments.join("/")

const compareKeys = (left: string, right: string) => (left < right ? -1 : left > right ? 1 : 0)

/** The folder a source root (a git repository) stands for now: a checkout of `commit`. */
export interface SourceFolder {
  readonly path: string
  readonly commit: string
}

/**
 * Roots that are not folders of their own (`--skills-git`, src/sources/Git.ts): the folder each
 * stands for now, swapped as a whole when the source changes. Discovery reads that folder as any
 * other root's, so containment, digests and notices need nothing of their own; without this
 * service, such roots serve nothing.
 */
export class SourceFolders extends Context.Tag("skills-mcp/SourceFolders")<
  SourceFolders,
  {
    /** The folder to read for a source root now; undefined: nothing to serve (yet). */
    readonly current: (root: Root) => SourceFolder | undefined
    /** The sources' problems (a failed fetch, a refused commit), shown with discovery's notices. */
    readonly notices: () => ReadonlyArray<DiscoveryNotice>
    /** Emits when a source's folder or problems changed: the catalog discovers again. */
    readonly changes: Stream.Stream<void>
  }
>() {}

export class Discovery extends Effect.Service<Discovery>()("skills-mcp/Discovery", {
  effect: Effect.gen(function* () {
    const settings = yield* Settings
    const fs = yield* Fs
    const sources = Option.getOrUndefined(yield* Effect.serviceOption(SourceFolders))
    const options: ScanOptions = {
      maxDepth: settings.maxDepth,
      permits: idFilter(settings.allow, settings.deny),
      includeDotFolders: settings.includeDotFolders,
    }
    /**
     * Each root's real path, resolved once, when the service is built: a root swapped for a link
     * later serves nothing (ROOT_MOVED). A root that cannot be resolved yet is pinned when it
     * first can be.
     */
    const roots = settings.roots.map((root) => ({
      root,
      pinned: root.git === undefined ? fs.sync.realpath(root.path) : null,
    }))
    /** A source root's folder as discovery reads it now (its real path pinned per folder). */
    const sourceRoots = new Map<string, { readonly root: Root; readonly pinned: string | null }>()
    const currentOf = (root: Root) => {
      const folder = sources?.current(root)
      if (folder === undefined) return undefined
      const known = sourceRoots.get(folder.path)
      if (known !== undefined && known.pinned !== null) return known
      const entry = {
        root: { ...root, path: folder.path, commit: folder.commit },
        pinned: fs.sync.realpath(folder.path),
      }
      sourceRoots.set(folder.path, entry)
      return entry
    }
    /** Every SKILL.md under every root, through `port` (sync for the first scan). */
    const discover = (port: FsPort = fs.async): Effect.Effect<DiscoveryResult> =>
      Effect.suspend(() => {
        const now = roots.map((entry) => {
          if (entry.root.git !== undefined) return currentOf(entry.root)
          entry.pinned ??= fs.sync.realpath(entry.root.path)
          return entry
        })
        // Folders of commits no longer served are forgotten.
        const current = new Set(now.flatMap((entry) => (entry === undefined ? [] : [entry.root.path])))
        for (const folder of sourceRoots.keys()) if (!current.has(folder)) sourceRoots.delete(folder)
        return Effect.promise(async () => {
          const found = await discoverAll(port, now, options)
          const extra = sources?.notices() ?? []
          return extra.length === 0 ? found : { ...found, notices: [...extra, ...found.notices] }
        })
      }).pipe(Effect.withSpan("Discovery.discover"))
    return { discover } as const
  }),
}) {}
