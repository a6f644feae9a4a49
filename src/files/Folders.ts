/**
 * Folders: reading the folders of a skill, recursively (`walk`, `listFolder`) or one page of a
 * folder's direct children (`makeFolderPages`).
 *
 * A folder found inside the skill can be replaced by a link to elsewhere before it is read: read
 * by its path, the link's target would be listed under the folder's name. On Linux a folder is
 * opened without following a final link, the kernel's path of what was opened must be the
 * folder's real path, and its names and stats are read through the open descriptor
 * (`/proc/self/fd/N`), which stays that very folder whatever happens to the path; its subfolders
 * are opened through it. Elsewhere folders are read by path (docs/SECURITY.md, "Swaps").
 * Links are resolved, and kept only when they lead inside the skill.
 *
 * Folders are read with synchronous calls (Fs `containedNow`), one entry after the other: a
 * system call or two per entry costs less than a wait for the thread pool, and one walk serves
 * manifests and listings alike. A walk makes its calls for MAX_EXAMINED names at most (those
 * left out included: links that lead out, pipes), a page for its page size; each folder's names
 * are still read whole (and sorted) once.
 */
import type { Stats } from "node:fs"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import { FileNotFound, InvalidArgument, SkillUnreadable } from "../Errors.js"
import type { FsShape } from "../platform/Fs.js"
import { describeIoError, errorCode } from "../platform/Fs.js"
import type { Fingerprint } from "../platform/Paths.js"
import { childPath, fingerprintOf, isInside, sameFingerprint } from "../platform/Paths.js"
import type { ResolvedPath, SkillRef } from "./Containment.js"
import { openedInside, resolveIn } from "./Containment.js"

/** A file or folder inside a skill, with its real path and stat (a link's, of its target). */
export interface FolderEntry {
  readonly name: string
  readonly real: string
  readonly type: "file" | "directory"
  readonly info: Stats
}

export interface ListingEntry {
  readonly path: string
  readonly type: "file" | "directory"
  readonly size?: number
}

export interface Listing {
  readonly path: string
  readonly entries: ReadonlyArray<ListingEntry>
  /** True when the listing stopped at MAX_LISTING entries, MAX_LISTING_DEPTH levels or MAX_EXAMINED names. */
  readonly truncated: boolean
  /** Which of those limits stopped it, when it did. */
  readonly stoppedBy?: "entries" | "depth" | "names"
}

/** A listing stops after this many entries... */
export const MAX_LISTING = 2_000
/** ...and a walk after looking at this many names, those it leaves out included. */
export const MAX_EXAMINED = 10_000
/** ...and descends at most this many folder levels. */
export const MAX_LISTING_DEPTH = 16
/**
 * A folder or file is trusted to be as it was only once it has not changed for this long: file
 * system timestamps lag the clock (a coarse clock ticks every few ms; some file systems keep
 * seconds), so one changed just now could change again and keep its timestamp.
 */
export const SETTLED_MS = 2_000

/** The wait after a change before a folder or file is trusted as it was: SETTLED_MS (tests shorten it). */
export class SettleWindow extends Context.Reference<SettleWindow>()("skills-mcp/SettleWindow", {
  defaultValue: (): { readonly ms: number } => ({ ms: SETTLED_MS }),
}) {}

/**
 * Whether a folder or file had settled by `now`, `windowMs` after its last change: judged by the
 * later of its modification and change times, as tools that copy or unpack files (`cp -a`,
 * `rsync -a`, `tar -x`) set the modification time back while the kernel moves the change time.
 * A modification time in the future (a clock ahead where the file was made) says nothing of when
 * it changed here: the change time alone then does.
 */
export const settled = (info: Pick<Stats, "mtimeMs" | "ctimeMs">, now: number, windowMs: number): boolean =>
  now - (info.mtimeMs > now ? info.ctimeMs : Math.max(info.mtimeMs, info.ctimeMs)) > windowMs
/** Folders of at least this many entries keep their sorted names between pages... */
const KEPT_FOLDER_MIN = 1_000
/** ...and this many such folders at most (the oldest is dropped first). */
const KEPT_FOLDERS = 16
/** Entries examined at a time while walking a folder: a walk that stops early examines no more. */
const WALK_PAGE = 256

/** Errors that say a folder is not (or no longer) one to read here: it reads as empty. */
const SKIPPED_CODES: ReadonlySet<unknown> = new Set(["ENOENT", "ENOTDIR", "ELOOP", "EACCES", "EPERM"])

const unreadable = (skill: SkillRef, relative: string) => (reason: string) =>
  new SkillUnreadable({
    skillId: skill.id,
    path: relative || ".",
    reason: `cannot read the folder (${reason}); try again`,
  })

/** `call`'s answer; `skipped` when it fails with an error in SKIPPED_CODES; else it throws `fail`'s. */
const orSkipped = <A>(call: () => A, skipped: A, fail: (reason: string) => SkillUnreadable): A => {
  try {
    return call()
  } catch (error) {
    if (SKIPPED_CODES.has(errorCode(error))) return skipped
    throw fail(describeIoError(error))
  }
}

/**
 * Runs `use` on the real folder `real` opened for reading (Fs `openFolder`), then closes it. A
 * folder gone, moved, replaced by a link or not readable gives `empty`; one that cannot be opened
 * now (out of descriptors, an I/O error) fails rather than be left out.
 */
const inFolder = <A>(
  fs: FsShape,
  folder: { readonly real: string; readonly within?: string | undefined },
  fail: (reason: string) => SkillUnreadable,
  empty: A,
  use: (at: string) => A,
): A => {
  const open = orSkipped(() => fs.containedNow.openFolder(folder.real, folder.within), null, fail)
  if (open === null) return empty
  try {
    return use(open.at)
  } finally {
    open.close()
  }
}

/** The folder's names, sorted; none when it is gone or not readable. */
const sortedNames = (fs: FsShape, at: string, fail: (reason: string) => SkillUnreadable) =>
  orSkipped(() => fs.containedNow.readdir(at).sort(), [], fail)

/**
 * The given names of one real folder of the skill (reached through `at`), examined: links
 * resolved, and any that leave the skill (or dangle) left out, as is anything but files and
 * folders. A link whose target cannot be looked at now fails with `fail`.
 */
const examine = (
  fs: FsShape,
  base: string,
  real: string,
  at: string,
  names: ReadonlyArray<string>,
  fail: (reason: string) => SkillUnreadable,
): Array<FolderEntry> => {
  const entries: Array<FolderEntry> = []
  for (const name of names) {
    let target = childPath(real, name)
    let info = fs.sync.lstat(childPath(at, name))
    if (info?.isSymbolicLink() === true) {
      const resolved = fs.sync.realpath(target)
      if (resolved === null || !isInside(base, resolved)) continue
      // Stat'ed through a descriptor of the target whose kernel path must still be inside: a
      // folder on the way swapped for a link since it was resolved would stat something elsewhere.
      const named = orSkipped(() => fs.containedNow.statNamed(resolved), null, fail)
      info = named !== null && openedInside(base, named.opened) ? named.info : null
      target = resolved
    }
    if (info?.isDirectory() === true) entries.push({ name, real: target, type: "directory", info })
    else if (info?.isFile() === true) entries.push({ name, real: target, type: "file", info })
  }
  return entries
}

/**
 * A read of folders as one effect (not an effect per folder or entry). A `SkillUnreadable` it
 * throws is the failure; anything else it throws is a defect.
 */
const folderRead = <A>(read: () => A): Effect.Effect<A, SkillUnreadable> =>
  Effect.try({ try: read, catch: (error) => error }).pipe(
    Effect.catchAll((error) => (error instanceof SkillUnreadable ? Effect.fail(error) : Effect.die(error))),
  )

/**
 * How a walk ended: every entry visited; `visit` stopped it; folders nest deeper than
 * MAX_LISTING_DEPTH (those below were not read); or MAX_EXAMINED names were looked at.
 */
export type WalkEnd = "complete" | "stopped" | "too deep" | "too many"

/**
 * Walks the real folder `start` of the skill (`base` its real folder, `relative` its path in
 * it) depth-first in name order, calling `visit` for each entry with its `/`-separated path;
 * stops when `visit` answers false. Each real folder is read once.
 */
export const walk = (
  fs: FsShape,
  skill: SkillRef,
  base: string,
  start: string,
  relative: string,
  visit: (entry: FolderEntry, path: string) => boolean,
): Effect.Effect<WalkEnd, SkillUnreadable> =>
  folderRead(() => {
    const visited = new Set<string>([start])
    let tooDeep = false
    let examined = 0
    const go = (folder: string, prefix: string, depth: number, within?: string): WalkEnd => {
      const fail = unreadable(skill, prefix)
      return inFolder(fs, { real: folder, within }, fail, "complete", (at): WalkEnd => {
        const names = sortedNames(fs, at, fail)
        for (let from = 0; from < names.length; from += WALK_PAGE) {
          const page = names.slice(from, from + WALK_PAGE)
          examined += page.length
          if (examined > MAX_EXAMINED) return "too many"
          for (const entry of examine(fs, base, folder, at, page, fail)) {
            const path = prefix === "" ? entry.name : `${prefix}/${entry.name}`
            if (!visit(entry, path)) return "stopped"
            if (entry.type !== "directory" || visited.has(entry.real)) continue
            if (depth + 1 >= MAX_LISTING_DEPTH) {
              tooDeep = true
              continue
            }
            visited.add(entry.real)
            // A folder found here (not through a link) is opened through this one.
            const plain = entry.real === childPath(folder, entry.name) && at !== folder
            const end = go(entry.real, path, depth + 1, plain ? childPath(at, entry.name) : undefined)
            if (end !== "complete") return end
          }
        }
        return "complete"
      })
    }
    const end = go(start, relative, 0)
    return end === "complete" && tooDeep ? "too deep" : end
  })

const listingEntry = (path: string, entry: FolderEntry): ListingEntry =>
  entry.type === "directory" ? { path, type: "directory" } : { path, type: "file", size: entry.info.size }

/** A folder of the skill, or a failure saying why the path is not one. */
export const folderOf = (fs: FsShape, skill: SkillRef, requested: string) =>
  Effect.gen(function* () {
    const resolved = yield* resolveIn(fs, skill, requested)
    const info = yield* Effect.promise(async () => fs.async.stat(resolved.real))
    if (info === null) return yield* new FileNotFound({ skillId: skill.id, path: resolved.relative })
    if (!info.isDirectory()) {
      return yield* new InvalidArgument({
        argument: "path",
        reason: `'${resolved.relative}' is a file, not a folder`,
      })
    }
    return resolved
  })

/** A folder of the skill, listed recursively (files with sizes); stops at MAX_LISTING entries. */
export const listFolder = (fs: FsShape, skill: SkillRef, folder: ResolvedPath) =>
  Effect.suspend(() => {
    const entries: Array<ListingEntry> = []
    const visit = (entry: FolderEntry, path: string) => {
      if (entries.length >= MAX_LISTING) return false
      entries.push(listingEntry(path, entry))
      return true
    }
    return Effect.map(walk(fs, skill, folder.base, folder.real, folder.relative, visit), (end): Listing => {
      if (end === "complete") return { path: folder.relative, entries, truncated: false }
      const stoppedBy = end === "stopped" ? "entries" : end === "too deep" ? "depth" : "names"
      return { path: folder.relative, entries, truncated: true, stoppedBy }
    })
  })

/**
 * One page of a folder's direct children, in name order. A folder of KEPT_FOLDER_MIN entries or
 * more keeps its sorted names while its fingerprint holds (read and sorted once per change, not
 * per page): it is marked on its first read, and from the next on stat'ed first and its names
 * kept once settled (SETTLED_MS). Smaller folders are read without a stat (one wait, not two).
 */
export const makeFolderPages = (fs: FsShape, settleMs: number = SETTLED_MS) => {
  const kept = new Map<string, { readonly fingerprint: Fingerprint | null; readonly names: Array<string> }>()

  const keep = (real: string, info: Stats | null, names: Array<string>) => {
    kept.delete(real) // re-inserted last: the oldest is dropped first
    if (names.length < KEPT_FOLDER_MIN) return
    if (kept.size >= KEPT_FOLDERS) kept.delete(kept.keys().next().value ?? "")
    const known = info !== null && settled(info, Date.now(), settleMs)
    kept.set(real, known ? { fingerprint: fingerprintOf(info), names } : { fingerprint: null, names: [] })
  }

  const namesIn = (real: string, at: string, fail: (reason: string) => SkillUnreadable) => {
    const known = kept.get(real)
    let info: Stats | null = null
    if (known !== undefined) {
      info = fs.sync.stat(at)
      if (info === null) return []
      if (known.fingerprint !== null && sameFingerprint(known.fingerprint, fingerprintOf(info)))
        return known.names
    }
    const names = sortedNames(fs, at, fail)
    keep(real, info, names)
    return names
  }

  return (skill: SkillRef, folder: ResolvedPath, offset: number, limit: number) =>
    folderRead(() => {
      const fail = unreadable(skill, folder.relative)
      const prefix = folder.relative === "" ? "" : `${folder.relative}/`
      return inFolder(fs, folder, fail, { entries: [], more: false }, (at) => {
        const names = namesIn(folder.real, at, fail)
        const page = names.slice(offset, offset + limit)
        const entries = examine(fs, folder.base, folder.real, at, page, fail)
        return {
          entries: entries.map((entry) => listingEntry(`${prefix}${entry.name}`, entry)),
          more: offset + limit < names.length,
        }
      })
    })
}
