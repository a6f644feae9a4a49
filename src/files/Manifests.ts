/**
 * Manifests: what the Skills extension publishes of a skill. Its inventory (every file with its
 * size, within the extension's limits), the files no `skill://` URI could read back (withheld),
 * SHA-256 digests (computed on first use, cached by file fingerprint), and the manifest itself,
 * with SKILL.md's frontmatter parsed from the very bytes hashed.
 *
 * A skill's inventory is kept between calls once its folders and files have settled, with the
 * stamp (device, inode, size, times) of each folder and file as the walk found them. While a file
 * watcher is on, every folder of a kept skill is watched and, once its stamps were found to hold
 * after the watches existed, it is answered without a look at the disk until a watch sees a
 * change in one of its folders (`changed`). Otherwise each call checks the stamps (a stat each,
 * no folder read). Any difference (a file edited, added, removed or renamed in any folder, a file
 * or folder replaced by a link) means a new walk, which re-hashes only the files whose stamps
 * changed. A skill with a link inside, a withheld file or a problem is walked every time. Kept
 * inventories and their digests are also recorded in the user's cache folder (ManifestStore.ts),
 * so a fresh process checks stamps instead of walking and hashing again. A manifest's walk and
 * reads make synchronous calls (Fs `containedNow`): a few system calls per file cost less than as
 * many waits for the thread pool.
 */
import type { Stats } from "node:fs"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import { FileNotFound, SkillNotPublished, SkillUnreadable } from "../Errors.js"
import type { FsShape } from "../platform/Fs.js"
import type { Fingerprint } from "../platform/Paths.js"
import { isInside, sameFingerprint } from "../platform/Paths.js"
import { SKILL_FILE } from "../skills/Discovery.js"
import type { Frontmatter, ParsedFrontmatter } from "../skills/Frontmatter.js"
import { beginsWithFrontmatter } from "../skills/Frontmatter.js"
import { MANIFEST_SEGMENT } from "../skills/Uris.js"
import type { SkillRef } from "./Containment.js"
import { fileUriProblem, skillBase, skillBaseNow } from "./Containment.js"
import { MAX_LISTING_DEPTH, SETTLED_MS, walk } from "./Folders.js"
import type { ManifestStore, StoredSkill } from "./ManifestStore.js"
import { fileReader, isSkillError, readResolved } from "./Reading.js"

export interface ManifestFile {
  /** `/`-separated path relative to the skill folder. */
  readonly path: string
  readonly size: number
  /** `sha256:` and 64 lowercase hex digits, over the raw bytes. */
  readonly digest: string
}

export interface Manifest {
  /** Every file of the skill, SKILL.md included, in path order. */
  readonly files: ReadonlyArray<ManifestFile>
  /** SKILL.md's frontmatter, parsed from the bytes that were hashed. */
  readonly frontmatter: ParsedFrontmatter
}

/** A file of a skill that no manifest lists, and why (see `fileUriProblem`). */
export interface WithheldFile {
  /** `/`-separated path relative to the skill folder. */
  readonly path: string
  readonly reason: string
}

/**
 * A skill's SKILL.md as the catalog indexed it: the frontmatter it parsed, and the file's
 * fingerprint as it found it (a catalog `Skill` has both).
 */
export interface IndexedSkillMd {
  readonly fingerprint: Fingerprint
  readonly frontmatter: ParsedFrontmatter
}

/** Why a SKILL.md that does not begin with its frontmatter is left out (see beginsWithFrontmatter). */
const FRONTMATTER_FIRST =
  "its SKILL.md does not begin with '---' (remove the blank lines or byte order mark before it)"

/** The Skills extension's per-skill limits: files, and bytes over all files. */
export const MAX_SKILL_FILES = 512
export const MAX_SKILL_BYTES = 16 * 1024 * 1024
/** The digest cache (and the inventories kept) is dropped when it grows past this many files. */
const MAX_CACHED_DIGESTS = 200_000
/** A root's record in the cache folder is written once its changes pause this long... */
const STORE_DELAY_MS = 2_000
/** ...or this long after the first change not yet written, and as the server stops. */
const MAX_UNSAVED_MS = 30_000

/** A path below a real folder, given `/`-separated (as recorded), without `path.join`'s pass. */
const realOf = (base: string, relative: string) =>
  `${base}${path.sep}${path.sep === "/" ? relative : relative.replaceAll("/", path.sep)}`

/**
 * Whether a recorded path may be listed (see `fileUriProblem`); names of letters, digits, `.`,
 * `_` and `-` always may (a record is checked path by path: thousands of them).
 */
const listable = (relative: string) =>
  (/^[\w.-]+(?:\/[\w.-]+)*$/.test(relative) && relative !== MANIFEST_SEGMENT) ||
  fileUriProblem(relative) === undefined

/** What identifies one version of a file or folder: any change to a field means "look again". */
interface Stamp extends Fingerprint {
  readonly ctimeMs: number
}

const stampOf = (info: Stats): Stamp => ({
  dev: info.dev,
  ino: info.ino,
  size: info.size,
  mtimeMs: info.mtimeMs,
  ctimeMs: info.ctimeMs,
})

const sameStamp = (a: Stamp, b: Stamp): boolean => sameFingerprint(a, b) && a.ctimeMs === b.ctimeMs

/** A file found by the inventory: where, and its stamp as the walk found it. */
interface FoundFile {
  readonly path: string
  readonly real: string
  readonly stamp: Stamp
}

/** A folder of a skill as the walk found it ("" for the skill folder), before it was read. */
interface FoundFolder {
  readonly path: string
  readonly stamp: Stamp
}

/** A skill's inventory kept between calls (see the top of this file). */
interface KeptInventory {
  readonly rootReal: string
  readonly folders: ReadonlyArray<FoundFolder>
  readonly files: ReadonlyArray<FoundFile>
  /** The manifest last made of it, with the catalog's frontmatter it was made with. */
  memo: { readonly frontmatter: ParsedFrontmatter; readonly manifest: Manifest } | undefined
  /**
   * Every folder of it was watched before its stamps were last found to hold, and no change
   * was seen in any since: it holds without a look at the disk (see `useWatcher`).
   */
  covered: boolean
}

const DIGEST_PREFIX = "sha256:"

/** A digest, and the stamp of the file as it was opened to be hashed. */
interface CachedDigest extends Stamp {
  readonly digest: string
  /** SKILL.md's only: the key (`frontmatterKey`) of the frontmatter the bytes hashed parse to. */
  readonly frontmatterKey: string | undefined
}

/** SHA-256 in hex; `node:crypto` is loaded on the first digest, not at start-up. */
const sha256Hex = (bytes: Uint8Array | string): string =>
  process.getBuiltinModule("node:crypto").createHash("sha256").update(bytes).digest("hex")

/** Keys of parses, by parse (the catalog's parses are kept objects). */
const frontmatterKeys = new WeakMap<ParsedFrontmatter, string>()

/** What two parses of a SKILL.md that found the same frontmatter share (`raw` is JSON data). */
const frontmatterKey = (parsed: ParsedFrontmatter): string => {
  let key = frontmatterKeys.get(parsed)
  if (key === undefined) {
    key = sha256Hex(`${parsed.endLine}\n${JSON.stringify(parsed.raw)}`)
    frontmatterKeys.set(parsed, key)
  }
  return key
}

/** A file's manifest entry, and for SKILL.md the frontmatter its bytes parse to. */
interface KnownEntry {
  readonly entry: ManifestFile
  readonly frontmatter: ParsedFrontmatter | undefined
}

export const makeManifests = (
  fs: FsShape,
  maxFileBytes: number,
  frontmatter: Frontmatter,
  store: ManifestStore,
) => {
  // A manifest's reads are small and many: synchronous calls (see Fs `containedNow`).
  const readFile = fileReader(fs, maxFileBytes, true)
  const readNow = readResolved(fs, maxFileBytes, true)
  /** Digests by real file path, valid while the stamp holds; kept once settled (SETTLED_MS). */
  const digests = new Map<string, CachedDigest>()
  /** Inventories kept, by the skill folder's real path. */
  const inventories = new Map<string, KeptInventory>()
  /** Roots whose record in the cache folder was read, and those with changes not yet written. */
  const loadedRoots = new Set<string>()
  const unsavedRoots = new Set<string>()
  let saveTimer: NodeJS.Timeout | undefined
  let unsavedSince: number | undefined
  /** Skills found unservable over the extension, by folder, with the reason. */
  const leftOut = new Map<string, string>()
  /** Files left out of skills' manifests, by skill folder (see `fileUriProblem`). */
  const withheld = new Map<string, ReadonlyArray<WithheldFile>>()

  const noteLeftOut = (skill: SkillRef, problem: string | undefined) => {
    if (problem === undefined) leftOut.delete(skill.dir)
    else leftOut.set(skill.dir, problem)
  }

  // --- Kept between runs (ManifestStore.ts) ---------------------------------------------------

  /** What a root's kept skills are, as recorded: those whose every file has its digest. */
  const recordOf = (rootReal: string): Array<StoredSkill> => {
    const skills: Array<StoredSkill> = []
    for (const [base, kept] of inventories) {
      if (kept.rootReal !== rootReal) continue
      const stamps: Array<number> = []
      for (const { stamp } of kept.folders) stamps.push(stamp.dev, stamp.ino, stamp.mtimeMs, stamp.ctimeMs)
      let digestsInHex = ""
      let skillMdKey: string | null = null
      for (const file of kept.files) {
        const cached = digests.get(file.real)
        if (cached === undefined || !sameStamp(cached, file.stamp)) break
        const { dev, ino, size, mtimeMs, ctimeMs } = file.stamp
        stamps.push(dev, ino, size, mtimeMs, ctimeMs)
        digestsInHex += cached.digest.slice(DIGEST_PREFIX.length)
        if (file.path === SKILL_FILE) skillMdKey = cached.frontmatterKey ?? null
      }
      if (digestsInHex.length < kept.files.length * 64) continue
      skills.push({
        base,
        folders: kept.folders.slice(1).map((folder) => folder.path),
        files: kept.files.map((file) => file.path),
        stamps,
        digests: digestsInHex,
        skillMdKey,
      })
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
   * skill below the root, within the extension's limits, with names a URI reads back (as a kept
   * inventory has), and not known here already.
   */
  const loadRoot = (rootReal: string) => {
    if (loadedRoots.has(rootReal)) return
    loadedRoots.add(rootReal)
    for (const skill of store.load(rootReal)) {
      const { base, stamps } = skill
      const folderCount = skill.folders.length + 1
      if (!isInside(rootReal, base) || base === rootReal || inventories.has(base)) continue
      if (skill.files.length > MAX_SKILL_FILES) continue
      if (stamps.length !== folderCount * 4 + skill.files.length * 5) continue
      if (skill.digests.length !== skill.files.length * 64) continue
      const at = (index: number) => stamps[index] ?? Number.NaN
      const folders: Array<FoundFolder> = []
      for (let index = 0; index < folderCount; index++) {
        const [dev, ino, mtimeMs, ctimeMs] = [
          at(index * 4),
          at(index * 4 + 1),
          at(index * 4 + 2),
          at(index * 4 + 3),
        ]
        folders.push({
          path: index === 0 ? "" : (skill.folders[index - 1] ?? ""),
          stamp: { dev, ino, size: 0, mtimeMs, ctimeMs },
        })
      }
      let total = 0
      const files: Array<FoundFile> = []
      for (const [index, relative] of skill.files.entries()) {
        const from = folderCount * 4 + index * 5
        const stamp = {
          dev: at(from),
          ino: at(from + 1),
          size: at(from + 2),
          mtimeMs: at(from + 3),
          ctimeMs: at(from + 4),
        }
        total += stamp.size
        if (stamp.size > maxFileBytes || !listable(relative)) break
        files.push({ path: relative, real: realOf(base, relative), stamp })
      }
      if (files.length < skill.files.length || total > MAX_SKILL_BYTES) continue
      keepInventory(base, { rootReal, folders, files, memo: undefined, covered: false })
      for (const [index, file] of files.entries()) {
        if (digests.has(file.real)) continue
        const digest = `${DIGEST_PREFIX}${skill.digests.slice(index * 64, index * 64 + 64)}`
        const frontmatterKey = file.path === SKILL_FILE ? (skill.skillMdKey ?? undefined) : undefined
        digests.set(file.real, { ...file.stamp, digest, frontmatterKey })
      }
    }
  }

  // --- Inventories ------------------------------------------------------------------------------

  /** Watches a folder, while a file watcher is on (see `useWatcher`). */
  let watch: ((dir: string) => boolean) | undefined
  /** The kept skills (real paths) by each of their folders, watched or to be watched. */
  const skillOfFolder = new Map<string, string>()

  const foldersOf = (base: string, kept: KeptInventory) =>
    kept.folders.map((folder) => (folder.path === "" ? base : path.join(base, ...folder.path.split("/"))))

  const keepInventory = (base: string, kept: KeptInventory) => {
    drop(base)
    inventories.set(base, kept)
    for (const folder of foldersOf(base, kept)) skillOfFolder.set(folder, base)
  }

  /** Forgets a kept inventory; false when there was none. */
  const drop = (base: string): boolean => {
    const kept = inventories.get(base)
    if (kept === undefined) return false
    inventories.delete(base)
    for (const folder of foldersOf(base, kept))
      if (skillOfFolder.get(folder) === base) skillOfFolder.delete(folder)
    return true
  }

  /** A change was seen at `changed` (a file or folder): the kept skill it is in is looked at again. */
  const changed = (changedPath: string) => {
    for (const folder of [changedPath, path.dirname(changedPath)]) {
      const base = skillOfFolder.get(folder)
      const kept = base === undefined ? undefined : inventories.get(base)
      if (kept !== undefined) kept.covered = false
    }
  }

  /**
   * Whether a kept inventory holds, without a look at the disk while it is covered. Otherwise its
   * folders are first watched (when a watcher is on), then its stamps checked (`holds`): if they
   * hold, any later change is seen by a watch, and it is covered from then on.
   */
  const stillHolds = (base: string, kept: KeptInventory): boolean => {
    if (kept.covered) return true
    const watched = watch !== undefined && foldersOf(base, kept).every(watch)
    if (!holds(base, kept)) return false
    kept.covered = watched
    return true
  }

  /**
   * Whether a kept inventory still holds: every folder and file has the stamp the walk found (a
   * synchronous stat each: no folder is read, and a stat costs less than a wait for the thread
   * pool). Folders first, from the top: a folder replaced by a link fails its own check.
   */
  const holds = (base: string, kept: KeptInventory): boolean => {
    for (const folder of kept.folders) {
      const info = fs.sync.lstat(folder.path === "" ? base : path.join(base, ...folder.path.split("/")))
      if (info === null || !info.isDirectory()) return false
      const { stamp } = folder
      if (info.dev !== stamp.dev || info.ino !== stamp.ino) return false
      if (info.mtimeMs !== stamp.mtimeMs || info.ctimeMs !== stamp.ctimeMs) return false
    }
    for (const file of kept.files) {
      const info = fs.sync.lstat(file.real)
      if (info === null || !info.isFile() || !sameStamp(stampOf(info), file.stamp)) return false
    }
    return true
  }

  /**
   * A skill's files as the Skills extension would list them (path order), or why the extension
   * cannot serve the skill: over its limits (files, bytes), a file over --max-file-bytes, or
   * folders too deep. Nothing is read or hashed. A walk whose every folder and file had settled,
   * with no link, no withheld file and no problem, is kept for the next call (see `holds`).
   */
  const walkInventory = (skill: SkillRef, base: string) =>
    Effect.gen(function* () {
      // Before the walk: a folder or file changed while it is walked has a later time than this.
      const walkedAt = Date.now()
      const top = fs.sync.lstat(base)
      const folders: Array<FoundFolder> = []
      const files: Array<FoundFile> = []
      const unservable: Array<WithheldFile> = []
      let total = 0
      let problem: string | undefined
      let keep = false
      if (top !== null) {
        folders.push({ path: "", stamp: stampOf(top) })
        keep = top.isDirectory() && walkedAt - top.mtimeMs > SETTLED_MS
      }
      const complete = yield* walk(
        fs,
        skill,
        base,
        base,
        "",
        (entry, entryPath) => {
          // Found through a link (its real path is not where its name is): walked every time.
          if (entry.real !== path.join(base, ...entryPath.split("/"))) keep = false
          else if (walkedAt - entry.info.mtimeMs <= SETTLED_MS) keep = false
          if (entry.type === "directory") {
            folders.push({ path: entryPath, stamp: stampOf(entry.info) })
            return true
          }
          const uriProblem = fileUriProblem(entryPath)
          if (uriProblem !== undefined) {
            unservable.push({ path: entryPath, reason: uriProblem })
            return true
          }
          total += entry.info.size
          if (files.length >= MAX_SKILL_FILES) problem = `it has more than ${MAX_SKILL_FILES} files`
          else if (entry.info.size > maxFileBytes) {
            problem = `'${entryPath}' is ${entry.info.size} bytes, over the ${maxFileBytes}-byte file limit (--max-file-bytes)`
          } else if (total > MAX_SKILL_BYTES)
            problem = `its files add up to more than ${MAX_SKILL_BYTES} bytes (16 MiB)`
          else files.push({ path: entryPath, real: entry.real, stamp: stampOf(entry.info) })
          return problem === undefined
        },
        true,
      )
      if (problem === undefined && !complete)
        problem = `its folders nest deeper than ${MAX_LISTING_DEPTH} levels`
      if (unservable.length === 0) withheld.delete(skill.dir)
      else withheld.set(skill.dir, unservable)
      if (keep && problem === undefined && unservable.length === 0) {
        const kept: KeptInventory = {
          rootReal: skill.rootReal,
          folders,
          files,
          memo: undefined,
          covered: false,
        }
        keepInventory(base, kept)
        // Watched and checked now, so the next call needs no look at the disk (`stillHolds`).
        if (watch !== undefined) stillHolds(base, kept)
        unsaved(skill.rootReal)
      } else if (drop(base)) unsaved(skill.rootReal)
      return { files, problem }
    })

  /** A skill's inventory: the kept one while it holds, else a new walk (see `walkInventory`). */
  const inventory = (skill: SkillRef, base: string) =>
    Effect.gen(function* () {
      loadRoot(skill.rootReal)
      const kept = inventories.get(base)
      if (kept !== undefined && kept.rootReal === skill.rootReal && stillHolds(base, kept)) {
        withheld.delete(skill.dir)
        return { files: kept.files, problem: undefined }
      }
      return yield* walkInventory(skill, base)
    })

  // --- Digests ----------------------------------------------------------------------------------

  /**
   * One file's manifest entry; SKILL.md's with its frontmatter, which always comes from the very
   * bytes hashed. When SKILL.md's digest is known, the catalog's frontmatter (`indexed`) is taken
   * only if, when those bytes were hashed, they parsed to the same frontmatter as the catalog's
   * and had the fingerprint the catalog has (its stat of the file, taken apart from its read).
   * Undefined when the file is to be read (and SKILL.md parsed) again.
   */
  const knownEntry = (file: FoundFile, indexed: IndexedSkillMd | undefined) => {
    const cached = digests.get(file.real)
    if (cached === undefined || !sameStamp(cached, file.stamp)) return undefined
    const entry: ManifestFile = { path: file.path, size: file.stamp.size, digest: cached.digest }
    if (file.path !== SKILL_FILE) return { entry, frontmatter: undefined }
    const sameAsIndexed =
      indexed !== undefined &&
      cached.frontmatterKey === frontmatterKey(indexed.frontmatter) &&
      sameFingerprint(indexed.fingerprint, cached)
    return sameAsIndexed ? { entry, frontmatter: indexed.frontmatter } : undefined
  }

  /**
   * The files' manifest entries, read and hashed now, one after the other, in one effect (each
   * read is a few synchronous calls); SKILL.md's frontmatter parsed from the bytes hashed.
   */
  const readEntries = (skill: SkillRef, base: string, toRead: ReadonlyArray<FoundFile>) =>
    Effect.gen(function* () {
      // Before the opens: a file written while it is read has a later time than this.
      const readAt = Date.now()
      // Read where the walk just found them (inside the skill), checked again as each is opened.
      const reads = yield* Effect.tryPromise({
        try: async () => {
          const done = []
          for (const file of toRead) {
            const resolved = { real: file.real, base, relative: file.path }
            done.push(await readNow(skill, resolved, file.path, file.stamp))
          }
          return done
        },
        catch: (error) =>
          isSkillError(error)
            ? error
            : new SkillUnreadable({
                skillId: skill.id,
                path: ".",
                reason: "cannot read the skill's files; try again",
              }),
      })
      const entries = new Map<FoundFile, KnownEntry>()
      for (const [index, file] of toRead.entries()) {
        const read = reads[index]
        if (read === undefined) continue
        const { content, opened } = read
        const digest = `${DIGEST_PREFIX}${sha256Hex(content.bytes)}`
        let parsed: ParsedFrontmatter | undefined
        if (file.path === SKILL_FILE) {
          if (!beginsWithFrontmatter(content.bytes)) {
            noteLeftOut(skill, FRONTMATTER_FIRST)
            return yield* new SkillNotPublished({ skillId: skill.id, reason: FRONTMATTER_FIRST })
          }
          const text = Buffer.from(content.bytes).toString("utf8")
          parsed = yield* frontmatter.parse(path.join(skill.dir, SKILL_FILE), text)
        }
        if (readAt - opened.mtimeMs > SETTLED_MS) {
          const key = parsed === undefined ? undefined : frontmatterKey(parsed)
          digests.set(file.real, { ...stampOf(opened), digest, frontmatterKey: key })
          if (inventories.has(base)) unsaved(skill.rootReal)
        }
        entries.set(file, { entry: { path: file.path, size: content.size, digest }, frontmatter: parsed })
      }
      return entries
    })

  /**
   * A skill's manifest made without a wait, when it can be: its inventory is kept and holds,
   * every digest is known and SKILL.md's is the catalog's version of it (`knownEntry`). The same
   * object while all of that stays so. Undefined otherwise (`manifest` then walks, reads and
   * reports problems).
   */
  const keptManifest = (skill: SkillRef & Partial<IndexedSkillMd>): Manifest | undefined => {
    const base = fs.sync.realpath(skill.dir)
    return base === null || !isInside(skill.rootReal, base) ? undefined : keptManifestAt(skill, base)
  }

  /** `keptManifest`, given the skill folder's real path, checked. */
  const keptManifestAt = (skill: SkillRef & Partial<IndexedSkillMd>, base: string): Manifest | undefined => {
    if (skill.fingerprint === undefined || skill.frontmatter === undefined) return undefined
    loadRoot(skill.rootReal)
    const kept = inventories.get(base)
    if (kept === undefined || kept.rootReal !== skill.rootReal || !stillHolds(base, kept)) return undefined
    withheld.delete(skill.dir)
    noteLeftOut(skill, undefined)
    if (kept.memo?.frontmatter === skill.frontmatter) return kept.memo.manifest
    const indexed = { fingerprint: skill.fingerprint, frontmatter: skill.frontmatter }
    const files: Array<ManifestFile> = []
    for (const file of kept.files) {
      const known = knownEntry(file, indexed)
      if (known === undefined) return undefined
      files.push(known.entry)
    }
    if (!files.some((file) => file.path === SKILL_FILE)) return undefined
    const manifest: Manifest = { files, frontmatter: skill.frontmatter }
    kept.memo = { frontmatter: skill.frontmatter, manifest }
    return manifest
  }

  /** Every file of a skill with its size and `sha256:` digest (see `inventory`, `knownEntry`). */
  const manifest = (skill: SkillRef & Partial<IndexedSkillMd>) =>
    Effect.gen(function* () {
      const base = yield* skillBaseNow(fs, skill)
      const kept = keptManifestAt(skill, base)
      if (kept !== undefined) return kept
      const { files, problem } = yield* inventory(skill, base)
      noteLeftOut(skill, problem)
      if (problem !== undefined) return yield* new SkillNotPublished({ skillId: skill.id, reason: problem })
      if (digests.size > MAX_CACHED_DIGESTS) {
        digests.clear()
        inventories.clear()
        skillOfFolder.clear()
      }
      const indexed =
        skill.fingerprint !== undefined && skill.frontmatter !== undefined
          ? { fingerprint: skill.fingerprint, frontmatter: skill.frontmatter }
          : undefined
      const known = files.map((file) => knownEntry(file, indexed))
      const read = yield* readEntries(
        skill,
        base,
        files.filter((_, index) => known[index] === undefined),
      )
      const entries = files.flatMap((file, index) => known[index] ?? read.get(file) ?? [])
      const skillMd = entries.find((entry) => entry.entry.path === SKILL_FILE)?.frontmatter
      if (skillMd === undefined) {
        return yield* new SkillUnreadable({
          skillId: skill.id,
          path: SKILL_FILE,
          reason: "SKILL.md is missing",
        })
      }
      const result: Manifest = { files: entries.map((entry) => entry.entry), frontmatter: skillMd }
      // Kept now, with every digest: the manifest the next calls will answer (the catalog's
      // frontmatter when the bytes hashed parse to it), so that they answer the very same object.
      return keptManifestAt(skill, base) ?? result
    })

  /** Why the Skills extension cannot serve a skill (limits, SKILL.md's first bytes), if it cannot. */
  const publicationProblem = (skill: SkillRef) =>
    Effect.gen(function* () {
      const base = yield* skillBase(fs, skill)
      const found = yield* walkInventory(skill, base)
      let problem = found.problem
      // SKILL.md read where the walk found it, as `readEntry` does.
      const skillMd = found.files.find((file) => file.path === SKILL_FILE)
      if (problem === undefined) {
        if (skillMd === undefined) return yield* new FileNotFound({ skillId: skill.id, path: SKILL_FILE })
        const resolved = { real: skillMd.real, base, relative: SKILL_FILE }
        const { content } = yield* readFile(skill, resolved, SKILL_FILE, skillMd.stamp)
        if (!beginsWithFrontmatter(content.bytes)) problem = FRONTMATTER_FIRST
      }
      noteLeftOut(skill, problem)
      return problem
    })

  return {
    manifest,
    keptManifest,
    publicationProblem,
    /** Writes what is not yet recorded in the cache folder now (on shutdown). */
    saveNow: saveAll,
    changed,
    /**
     * A file watcher is on, and `watchNow` watches one more folder (false: refused); or, with
     * undefined, none is, and kept inventories are checked on every call.
     */
    useWatcher: (watchNow: ((dir: string) => boolean) | undefined) => {
      watch = watchNow
      if (watchNow === undefined) for (const kept of inventories.values()) kept.covered = false
    },
    /** The folders of kept skills, to keep watched. */
    watchedFolders: (): ReadonlyArray<string> => [...skillOfFolder.keys()],
    /**
     * Skills found unservable over the extension (over its limits, SKILL.md not beginning with
     * `---`) when they were last listed, fetched or checked: skill folder -> reason. These show
     * only once looked at: the catalog never walks a skill's files by itself.
     */
    leftOut: (): ReadonlyMap<string, string> => leftOut,
    /** Files withheld from skills' manifests, by skill folder, as found when last listed or fetched. */
    withheld: (): ReadonlyMap<string, ReadonlyArray<WithheldFile>> => withheld,
  } as const
}
