/**
 * Inventories: what is kept of skills' files between calls, and between runs. A skill's inventory
 * (its folders and files, each with the stamp, device, inode, size and times, the walk found) is
 * kept once the walk (Manifests.ts) found every folder and file settled, with no link inside, no
 * withheld file and no problem; any other skill is walked every time. The SHA-256 digests of
 * files are kept here too, by real path, each with the stamp of the file as it was hashed.
 *
 * A kept inventory holds while its stamps do: a call checks them (a stat per folder and file, no
 * folder read), unless the skill is covered by watches (Watches.ts: with the watcher on, on
 * Linux), which say it is unchanged since its stamps last held; covered skills' stamps are also
 * re-checked in the background (`RecheckPace`: 250 skills a second while the process has time
 * to spare), for what watches cannot see.
 * Any difference (a file edited, added, removed or renamed in any folder, a file or folder
 * replaced by a link) means the inventory no longer holds: the caller walks again, and re-hashes
 * only the files whose stamps changed. Kept inventories and their digests are also recorded in
 * the user's cache folder (ManifestStore.ts), so a fresh process checks stamps instead of
 * walking and hashing again.
 */
import * as Context from "effect/Context"
import { SLICE_MS } from "../platform/EventLoop.js"
import type { FsShape } from "../platform/Fs.js"
import type { Fingerprint } from "../platform/Paths.js"
import { isInside, sameFingerprint } from "../platform/Paths.js"
import { SKILL_FILE } from "../skills/Discovery.js"
import type { KeptInventory } from "./KeptInventory.js"
import {
  FILE_FIELDS,
  FOLDER_FIELDS,
  fileAt,
  isKeptStamp,
  keptSize,
  keptStamp,
  listable,
  realOf,
  walkable,
} from "./KeptInventory.js"
import type { ManifestStore, StoredSkill } from "./ManifestStore.js"
import type { WatchesOptions } from "./Watches.js"
import { makeWatches } from "./Watches.js"

/** A file found by the inventory: where, and its stamp as the walk found it. */
export interface FoundFile {
  readonly path: string
  readonly real: string
  readonly stamp: Fingerprint
}

/** A folder of a skill as the walk found it ("" for the skill folder), before it was read. */
export interface FoundFolder {
  readonly path: string
  readonly stamp: Fingerprint
}

export const DIGEST_PREFIX = "sha256:"

/** A digest, and the stamp of the file as it was opened to be hashed. */
export interface CachedDigest extends Fingerprint {
  readonly digest: string
  /** SKILL.md's only: the key of the frontmatter the bytes hashed parse to (Manifests.ts). */
  readonly frontmatterKey: string | undefined
}

/** The limits within which every kept inventory stays (the Skills extension's, Manifests.ts). */
export interface InventoryLimits {
  readonly maxFiles: number
  /** Bytes over all files. */
  readonly maxBytes: number
  /** Bytes of one file (--max-file-bytes). */
  readonly maxFileBytes: number
}

/** The digests (and the inventories kept) are dropped when they grow past this many files. */
const MAX_CACHED_DIGESTS = 200_000
/** Kept skills are covered by watches once calls have checked no stamps for this long (see `coverSome`). */
const COVER_QUIET_MS = 100
/** A root's record in the cache folder is written once its changes pause this long... */
const STORE_DELAY_MS = 2_000
/** ...or this long after the first change not yet written, and as the server stops. */
const MAX_UNSAVED_MS = 30_000

/**
 * How covered skills' stamps are re-checked in the background (see the top): `perTick` skills
 * every `everyMs`, checked in slices of SLICE_MS, one per turn of the event loop (so fewer only
 * while the process has no time to spare); `perTick` 0: never (tests that must see a change
 * through the watches alone).
 */
export class RecheckPace extends Context.Reference<RecheckPace>()("skills-mcp/RecheckPace", {
  defaultValue: (): { readonly everyMs: number; readonly perTick: number } => ({
    everyMs: 1_000,
    perTick: 250,
  }),
}) {}

/** What a check of a kept inventory's stamps found. */
type Check = "changed" | "holds" | "holds, with a file of several links"

export const makeInventories = (
  fs: FsShape,
  limits: InventoryLimits,
  store: ManifestStore,
  /** Whether the server's file watcher is on: kept skills may then be covered by watches. */
  watching: boolean,
  recheckPace: RecheckPace["Type"] = RecheckPace.defaultValue(),
  watchesOptions?: WatchesOptions,
) => {
  /** Digests by real file path, valid while the stamp holds; kept once settled. */
  const digests = new Map<string, CachedDigest>()
  /** Inventories kept, by the skill folder's real path. */
  const inventories = new Map<string, KeptInventory>()
  /** How many files the inventories kept list. */
  let keptFiles = 0
  /** Roots whose record in the cache folder was read, and those with changes not yet written. */
  const loadedRoots = new Set<string>()
  const unsavedRoots = new Set<string>()
  let saveTimer: NodeJS.Timeout | undefined
  let unsavedSince: number | undefined
  const watches = makeWatches(watching, watchesOptions)
  /** Kept skills with a file of more than one link: never covered (a write through another link reaches no watch). */
  const linked = new Set<string>()
  /**
   * Kept skills whose watches could not be made though there was room (a file system whose
   * watches miss changes, a folder above not readable, a mount inside): not tried again until
   * the skill is walked again.
   */
  const uncoverable = new Set<string>()
  /** Whether a kept skill may be covered (now or later). */
  const coverable = (base: string) => !linked.has(base) && !uncoverable.has(base)

  // --- Kept between runs (ManifestStore.ts) ---------------------------------------------------

  /** What a root's kept skills are, as recorded: those whose every file has its digest. */
  const recordOf = (rootReal: string): Array<StoredSkill> => {
    const skills: Array<StoredSkill> = []
    for (const kept of inventories.values()) {
      if (kept.rootReal !== rootReal) continue
      let digestsInHex = ""
      let skillMdKey: string | null = null
      for (let index = 0; index < kept.files.length; index++) {
        const digest = keptDigest(kept, index)
        if (digest === undefined) break
        digestsInHex += digest.slice(DIGEST_PREFIX.length)
        if (kept.files[index] === SKILL_FILE) skillMdKey = keptFrontmatterKey(kept, index) ?? null
      }
      if (digestsInHex.length < kept.files.length * 64) continue
      const { base, folders, files, stamps } = kept
      skills.push({ base, folders, files, stamps, digests: digestsInHex, skillMdKey })
    }
    return skills
  }

  const saveAll = () => {
    if (saveTimer !== undefined) clearTimeout(saveTimer)
    saveTimer = undefined
    unsavedSince = undefined
    for (const rootReal of unsavedRoots) store.save(rootReal, recordOf(rootReal))
    unsavedRoots.clear()
  }

  /**
   * Notes that a root's record is behind. It is written once changes pause for STORE_DELAY_MS
   * (a first sync changes it thousands of times), or MAX_UNSAVED_MS after the first change.
   */
  const unsaved = (rootReal: string) => {
    unsavedRoots.add(rootReal)
    const now = Date.now()
    unsavedSince ??= now
    if (saveTimer !== undefined && now - unsavedSince < MAX_UNSAVED_MS) {
      clearTimeout(saveTimer)
      saveTimer = undefined
    }
    saveTimer ??= setTimeout(saveAll, STORE_DELAY_MS).unref()
  }

  /**
   * Takes in what was recorded for a root, the first time one of its skills is looked at: each
   * skill below the root, within the limits, with names a URI reads back (as a kept inventory
   * has), shaped as a walk shapes it (`walkable`), and not known here already. Kept as recorded
   * (its stamps are checked when it is looked at).
   */
  const loadRoot = (rootReal: string) => {
    if (loadedRoots.has(rootReal)) return
    loadedRoots.add(rootReal)
    for (const skill of store.load(rootReal)) {
      const { base, folders, files, stamps } = skill
      if (!isInside(rootReal, base) || base === rootReal || inventories.has(base)) continue
      if (files.length > limits.maxFiles) continue
      if (stamps.length !== (folders.length + 1) * FOLDER_FIELDS + files.length * FILE_FIELDS) continue
      if (skill.digests.length !== files.length * 64 || !walkable(skill)) continue
      const recorded = { digests: skill.digests, skillMdKey: skill.skillMdKey ?? undefined }
      const kept: KeptInventory = { rootReal, base, folders, files, stamps, recorded }
      let total = 0
      for (let index = 0; index < files.length; index++) {
        const size = keptSize(kept, index)
        total += size
        if (size > limits.maxFileBytes || !listable(files[index] ?? "")) total = Number.POSITIVE_INFINITY
      }
      if (total <= limits.maxBytes) setKept(kept)
    }
  }

  /**
   * Keeps a recorded inventory's digests by real path, as hashed ones are kept, and no longer
   * with the inventory: before one of its files' digests is replaced (Manifests.ts reads a file
   * of a recorded skill again when what was recorded cannot answer, e.g. SKILL.md's frontmatter).
   */
  const unrecord = (kept: KeptInventory) => {
    const { recorded } = kept
    if (recorded === undefined) return
    kept.recorded = undefined
    for (const [index, file] of filesOf(kept).entries()) {
      // One hashed since (of a nested skill, or the same file) is as new, or newer.
      if (digests.has(file.real)) continue
      const digest = `${DIGEST_PREFIX}${recorded.digests.slice(index * 64, index * 64 + 64)}`
      const frontmatterKey = file.path === SKILL_FILE ? recorded.skillMdKey : undefined
      digests.set(file.real, { ...file.stamp, digest, frontmatterKey })
    }
  }

  /**
   * Keeps an inventory, in place of any kept for its skill folder. A recorded one replaced (or
   * forgotten: `deleteKept`) leaves its digests by real path, so that a walk of the skill hashes
   * only the files whose stamps changed.
   */
  const setKept = (kept: KeptInventory) => {
    const before = inventories.get(kept.base)
    if (before !== undefined) unrecord(before)
    keptFiles += kept.files.length - (before?.files.length ?? 0)
    inventories.set(kept.base, kept)
  }

  /** Forgets the inventory kept for a skill folder (see `setKept`); whether there was one. */
  const deleteKept = (base: string) => {
    const before = inventories.get(base)
    if (before === undefined) return false
    unrecord(before)
    keptFiles -= before.files.length
    return inventories.delete(base)
  }

  // --- Digests ----------------------------------------------------------------------------------

  /** The digest kept by real path for a kept file (`index`), hashed with its kept stamp. */
  const hashedDigest = (kept: KeptInventory, index: number): CachedDigest | undefined => {
    const cached = digests.get(realOf(kept.base, kept.files[index] ?? ""))
    return cached !== undefined && isKeptStamp(kept, index, cached) ? cached : undefined
  }

  /** A kept file's digest (`sha256:` and hex): recorded with the inventory, or hashed since with its kept stamp. */
  const keptDigest = (kept: KeptInventory, index: number): string | undefined =>
    kept.recorded === undefined
      ? hashedDigest(kept, index)?.digest
      : `${DIGEST_PREFIX}${kept.recorded.digests.slice(index * 64, index * 64 + 64)}`

  /** The key of the frontmatter a kept SKILL.md's bytes parse to (Manifests.ts), with `keptDigest`. */
  const keptFrontmatterKey = (kept: KeptInventory, index: number): string | undefined =>
    kept.recorded === undefined ? hashedDigest(kept, index)?.frontmatterKey : kept.recorded.skillMdKey

  /** A kept inventory's files as FoundFile objects, made once per inventory (the same objects while it is kept). */
  const foundFiles = new WeakMap<KeptInventory, ReadonlyArray<FoundFile>>()
  const filesOf = (kept: KeptInventory): ReadonlyArray<FoundFile> => {
    let found = foundFiles.get(kept)
    if (found === undefined) {
      found = kept.files.map((relative, index) => ({
        path: relative,
        real: realOf(kept.base, relative),
        stamp: keptStamp(kept, index),
      }))
      foundFiles.set(kept, found)
    }
    return found
  }

  // --- Kept between calls ---------------------------------------------------------------------

  /**
   * Whether a kept inventory still holds: every folder and file has the stamp the walk found (a
   * synchronous stat each: no folder is read, and a stat costs less than a wait for the thread
   * pool), compared number by number. Folders first, from the top: a folder replaced by a link
   * fails its own check.
   */
  const holds = (kept: KeptInventory): Check => {
    const { base, folders, files, stamps } = kept
    let at = 0
    for (let index = -1; index < folders.length; index++, at += FOLDER_FIELDS) {
      const info = fs.sync.lstat(index < 0 ? base : realOf(base, folders[index] ?? ""))
      if (info === null || !info.isDirectory()) return "changed"
      if (info.dev !== stamps[at] || info.ino !== stamps[at + 1]) return "changed"
      if (info.mtimeMs !== stamps[at + 2] || info.ctimeMs !== stamps[at + 3]) return "changed"
    }
    let links = 1
    for (let index = 0; index < files.length; index++) {
      const info = fs.sync.lstat(realOf(base, files[index] ?? ""))
      if (info === null || !info.isFile() || !isKeptStamp(kept, index, info)) return "changed"
      if (info.nlink > links) links = info.nlink
    }
    return links > 1 ? "holds, with a file of several links" : "holds"
  }

  /**
   * Covers a kept skill by watches (Watches.ts): they begin, then the skill folder's path must
   * still be its real path (nothing above it became a link before the watches began) and its
   * stamps must hold (`holds`); covered from then on if so. Nothing is checked when the watches
   * could not all be made (the next call checks its stamps).
   */
  const coverNow = (base: string, kept: KeptInventory) => {
    // Every folder and file on the skill folder's file system (each stamp begins with its dev).
    const { stamps } = kept
    const filesFrom = fileAt(kept, 0)
    let oneFileSystem = true
    for (let at = FOLDER_FIELDS; at < filesFrom; at += FOLDER_FIELDS)
      oneFileSystem &&= stamps[at] === stamps[0]
    for (let at = filesFrom; at < stamps.length; at += FILE_FIELDS) oneFileSystem &&= stamps[at] === stamps[0]
    const watched =
      oneFileSystem &&
      watches.begin(base) &&
      kept.folders.every((folder) => watches.folder(base, realOf(base, folder))) &&
      fs.sync.realpath(base) === base
    if (!watched) {
      watches.release(base)
      // Not for want of room: watches of this skill cannot be made (see `uncoverable`).
      if (watches.room()) uncoverable.add(base)
      return
    }
    const check = holds(kept)
    if (check === "holds") return cover(base)
    watches.release(base)
    if (check === "holds, with a file of several links") linked.add(base)
  }

  /**
   * Kept skills whose stamps held on a call, to be covered in the background, a slice of
   * SLICE_MS at a time, once calls have checked no stamps for COVER_QUIET_MS: a fresh process's
   * first sync checks stamps only (its pages come one after the other, and covering between them
   * would slow it), and watches thousands of folders after it.
   */
  const toCover = new Set<string>()
  /** The wait for a pause in calls, then the next slice. */
  let coverLater: NodeJS.Timeout | undefined
  let coverNext: NodeJS.Immediate | undefined
  /** When a call last checked a kept skill's stamps (`stillHolds`). */
  let checkedAt = 0
  const coverSome = () => {
    coverLater = undefined
    coverNext = undefined
    const quietFor = performance.now() - checkedAt
    if (quietFor < COVER_QUIET_MS) {
      coverLater = setTimeout(coverSome, COVER_QUIET_MS - quietFor).unref()
      return
    }
    const started = performance.now()
    for (const base of toCover) {
      if (performance.now() - started >= SLICE_MS) break
      toCover.delete(base)
      const kept = inventories.get(base)
      if (kept !== undefined && !watches.covered(base) && coverable(base) && watches.room())
        coverNow(base, kept)
    }
    if (toCover.size > 0) coverNext = setImmediate(coverSome).unref()
  }

  /**
   * Whether a kept inventory holds (`holds`); if so, it is covered once calls pause (`toCover`),
   * unless watches cannot be made now (Watches `room`).
   */
  const stillHolds = (base: string, kept: KeptInventory): boolean => {
    checkedAt = performance.now()
    const check = holds(kept)
    if (check === "holds, with a file of several links") linked.add(base)
    else if (check === "holds" && watches.room() && coverable(base)) {
      toCover.add(base)
      if (coverLater === undefined && coverNext === undefined)
        coverLater = setTimeout(coverSome, COVER_QUIET_MS).unref()
    }
    return check !== "changed"
  }

  // --- Covered by watches, re-checked in the background ----------------------------------------

  let recheckTimer: NodeJS.Timeout | undefined
  let recheckRest: NodeJS.Immediate | undefined
  let rechecking: Iterator<string> | undefined
  /** Skills still to re-check of this tick's `perTick`. */
  let recheckOwed = 0

  /** A tick of the re-check: `perTick` more skills to check (at most one tick's worth owed). */
  const recheckTick = () => {
    recheckOwed = recheckPace.perTick
    recheckRest ??= setImmediate(recheck).unref()
  }

  /**
   * Checks the stamps of the next covered skills (in turn, round and round), as many as are owed,
   * a slice of SLICE_MS at a time: a slice that ends with some owed goes on at the next turn of
   * the event loop.
   */
  const recheck = () => {
    recheckRest = undefined
    const started = performance.now()
    let restarted = false
    for (; recheckOwed > 0; recheckOwed--) {
      if (performance.now() - started >= SLICE_MS) {
        recheckRest = setImmediate(recheck).unref()
        return
      }
      let next = rechecking?.next()
      if (next === undefined || next.done === true) {
        if (restarted) return
        restarted = true
        rechecking = watches.coveredNow().values()
        next = rechecking.next()
        if (next.done === true) return
      }
      const base = next.value
      const kept = inventories.get(base)
      if (kept === undefined || holds(kept) !== "holds") watches.release(base)
    }
    recheckOwed = 0
  }

  const cover = (base: string) => {
    watches.confirm(base)
    if (recheckPace.perTick > 0) recheckTimer ??= setInterval(recheckTick, recheckPace.everyMs).unref()
  }

  const dropAll = () => {
    toCover.clear()
    if (coverLater !== undefined) clearTimeout(coverLater)
    if (coverNext !== undefined) clearImmediate(coverNext)
    coverLater = undefined
    coverNext = undefined
    watches.close()
    linked.clear()
    uncoverable.clear()
    if (recheckTimer !== undefined) clearInterval(recheckTimer)
    if (recheckRest !== undefined) clearImmediate(recheckRest)
    recheckTimer = undefined
    recheckRest = undefined
    recheckOwed = 0
    rechecking = undefined
  }

  return {
    /**
     * The inventory kept for the skill folder `base` (a real path) of a skill below `rootReal`,
     * while it holds (`holds`); the root's record is read first, the first time.
     */
    held: (rootReal: string, base: string): KeptInventory | undefined => {
      loadRoot(rootReal)
      const kept = inventories.get(base)
      if (kept === undefined || kept.rootReal !== rootReal) return undefined
      return watches.covered(base) || stillHolds(base, kept) ? kept : undefined
    },
    /**
     * The inventory kept for the skill folder `dir` of a skill below `rootReal`, when watches
     * cover it (Watches.ts): then `dir` is still its own real path, and nothing in it changed.
     */
    covered: (rootReal: string, dir: string): KeptInventory | undefined => {
      if (!watches.covered(dir)) return undefined
      const kept = inventories.get(dir)
      return kept?.rootReal === rootReal && isInside(rootReal, dir) ? kept : undefined
    },
    /**
     * Begins watching a skill folder about to be walked (Watches.ts `begin`), and each of its
     * subfolders as the walk finds them, before it reads them (`watchFolder`); false: not
     * watched (watcher off, refused, or a skill with a file of several links).
     */
    beginWatch: (base: string): boolean => !linked.has(base) && watches.begin(base),
    /** The catalog's watcher could not watch every folder: these watches give it the room (Watches `yieldRoom`). */
    yieldRoom: watches.yieldRoom,
    watchFolder: (base: string, dir: string): boolean => watches.folder(base, dir),
    /** A file of the skill was found other than its kept stamp says: no longer covered. */
    unsure: (base: string) => watches.release(base),
    /**
     * The inventory kept for `base`, without checking it against the disk: for the call whose
     * walk (or `held`) has just found it. The root's record is read first, the first time.
     */
    justKept: (rootReal: string, base: string): KeptInventory | undefined => {
      loadRoot(rootReal)
      const kept = inventories.get(base)
      return kept?.rootReal === rootReal ? kept : undefined
    },
    /**
     * Keeps what a walk found of a settled skill (see the top of this file); covered when every
     * folder was watched before it was read (`watched`) and no file has several links.
     */
    keep: (
      rootReal: string,
      base: string,
      folders: ReadonlyArray<FoundFolder>,
      files: ReadonlyArray<FoundFile>,
      watched: boolean,
      severalLinks: boolean,
    ) => {
      const stamps: Array<number> = []
      for (const { stamp } of folders) stamps.push(stamp.dev, stamp.ino, stamp.mtimeMs, stamp.ctimeMs)
      for (const { stamp } of files)
        stamps.push(stamp.dev, stamp.ino, stamp.size, stamp.mtimeMs, stamp.ctimeMs)
      const kept: KeptInventory = {
        rootReal,
        base,
        // The walk's first folder is the skill folder itself.
        folders: folders.slice(1).map((folder) => folder.path),
        files: files.map((file) => file.path),
        stamps,
        recorded: undefined,
      }
      foundFiles.set(kept, files)
      setKept(kept)
      uncoverable.delete(base)
      if (severalLinks) linked.add(base)
      else linked.delete(base)
      if (watched && !severalLinks) cover(base)
      else watches.release(base)
      unsaved(rootReal)
    },
    /** Forgets what was kept of a skill folder, if anything (it is walked every time). */
    forget: (rootReal: string, base: string) => {
      watches.release(base)
      linked.delete(base)
      uncoverable.delete(base)
      if (deleteKept(base)) unsaved(rootReal)
    },
    /** A file's digest, while the file has the stamp it had when it was hashed. */
    digestOf: (file: FoundFile): CachedDigest | undefined => {
      const cached = digests.get(file.real)
      return cached === undefined || !sameFingerprint(cached, file.stamp) ? undefined : cached
    },
    keptDigest,
    keptFrontmatterKey,
    /** A kept inventory's files, with their stamps as kept: the same objects while it is kept. */
    filesOf,
    /**
     * Keeps a settled file's digest; recorded with the skill folder `base`'s inventory, if kept
     * (whose recorded digests are then kept by real path, as hashed ones are, to be overridden).
     */
    keepDigest: (rootReal: string, base: string, real: string, digest: CachedDigest) => {
      const kept = inventories.get(base)
      if (kept?.recorded !== undefined) unrecord(kept)
      digests.set(real, digest)
      if (kept !== undefined) unsaved(rootReal)
    },
    /** Drops every digest and inventory kept, when there are more than MAX_CACHED_DIGESTS. */
    trim: () => {
      if (digests.size > MAX_CACHED_DIGESTS || keptFiles > MAX_CACHED_DIGESTS) {
        digests.clear()
        inventories.clear()
        keptFiles = 0
        dropAll()
      }
    },
    /** Writes what is not yet recorded, and closes every watch (on shutdown). */
    close: () => {
      saveAll()
      dropAll()
    },
  } as const
}
