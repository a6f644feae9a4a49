/**
 * Manifests: what the Skills extension publishes of a skill. Its inventory (every file with its
 * size, within the extension's limits), the files no `skill://` URI could read back (withheld),
 * SHA-256 digests (computed on first use, kept by file stamp in Inventories.ts), and the manifest
 * itself, with SKILL.md's frontmatter parsed from the very bytes hashed.
 *
 * A skill's inventory is the one kept (Inventories.ts) while it holds; otherwise a walk finds it,
 * and the walk's inventory is kept when its folders and files have settled. A manifest's walk and
 * reads make synchronous calls (Fs `containedNow`): a few system calls per file cost less than as
 * many waits for the thread pool.
 */
import * as path from "node:path"
import * as Effect from "effect/Effect"
import { FileNotFound, SkillNotPublished, SkillUnreadable } from "../Errors.js"
import type { FsShape } from "../platform/Fs.js"
import type { Fingerprint } from "../platform/Paths.js"
import { fingerprintOf, isInside, sameFingerprint } from "../platform/Paths.js"
import { SKILL_FILE } from "../skills/Discovery.js"
import type { Frontmatter, ParsedFrontmatter } from "../skills/Frontmatter.js"
import { beginsWithFrontmatter } from "../skills/Frontmatter.js"
import type { ResolvedPath, SkillRef } from "./Containment.js"
import { fileUriProblem, skillBase, skillBaseNow } from "./Containment.js"
import { MAX_EXAMINED, MAX_LISTING_DEPTH, SETTLED_MS, settled, walk } from "./Folders.js"
import type { FoundFile, FoundFolder, RecheckPace } from "./Inventories.js"
import { DIGEST_PREFIX, makeInventories } from "./Inventories.js"
import type { KeptInventory } from "./KeptInventory.js"
import { keptSize, keptStamp } from "./KeptInventory.js"
import type { ManifestStore } from "./ManifestStore.js"
import { fileReader, isSkillError, readResolvedNow } from "./Reading.js"

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

/** The buffer a manifest's files are read into (`readEntries`); larger ones get their own. */
const SCRATCH_BYTES = 256 * 1024

/** Folders are opened with their kernel path checked only on Linux (Folders.ts). */
const onLinux = process.platform === "linux"

/** Why a SKILL.md that does not begin with its frontmatter is left out (see beginsWithFrontmatter). */
const FRONTMATTER_FIRST =
  "its SKILL.md does not begin with '---' (remove the blank lines or byte order mark before it)"

/** The Skills extension's per-skill limits: files, and bytes over all files. */
export const MAX_SKILL_FILES = 512
export const MAX_SKILL_BYTES = 16 * 1024 * 1024

/**
 * SHA-256 in hex; `node:crypto` is loaded on the first digest, not at start-up. One call, no Hash
 * object (`crypto.hash`): a third of the time for the small texts of frontmatter keys, made for
 * every skill of a fresh process's first sync.
 */
const sha256Hex = (bytes: Uint8Array | string): string =>
  process.getBuiltinModule("node:crypto").hash("sha256", bytes, "hex")

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

/** A file of a covered skill, resolved without a realpath, and its kept stamp (Manifests `coveredFile`). */
export interface CoveredFile {
  readonly resolved: ResolvedPath
  /** The file as kept: the file opened must be this one (Reading `readResolved`'s `found`). */
  readonly found: Fingerprint
}

export const makeManifests = (
  fs: FsShape,
  maxFileBytes: number,
  frontmatter: Frontmatter,
  store: ManifestStore,
  /** Whether the server's file watcher is on (kept skills may then be covered: Watches.ts). */
  watching: boolean,
  recheckPace?: RecheckPace["Type"],
  /** How long after a change a folder or file is trusted as it was (Folders `SettleWindow`). */
  settleMs: number = SETTLED_MS,
) => {
  // A manifest's reads are small and many: synchronous calls (see Fs `containedNow`).
  const readFile = fileReader(fs, maxFileBytes, true)
  const readNow = readResolvedNow(fs, maxFileBytes)
  /** What a manifest's files are read into, one after the other, to be hashed at once. */
  const scratch = Buffer.allocUnsafe(SCRATCH_BYTES)
  const inventories = makeInventories(
    fs,
    { maxFiles: MAX_SKILL_FILES, maxBytes: MAX_SKILL_BYTES, maxFileBytes },
    store,
    watching,
    recheckPace,
  )
  /** The manifest last made of each kept inventory, with the catalog's frontmatter it was made with. */
  const memos = new WeakMap<
    KeptInventory,
    { readonly frontmatter: ParsedFrontmatter; readonly manifest: Manifest }
  >()
  /** Skills found unservable over the extension, by folder, with the reason. */
  const leftOut = new Map<string, string>()
  /** Files left out of skills' manifests, by skill folder (see `fileUriProblem`). */
  const withheld = new Map<string, ReadonlyArray<WithheldFile>>()

  const noteLeftOut = (skill: SkillRef, problem: string | undefined) => {
    if (problem === undefined) leftOut.delete(skill.dir)
    else leftOut.set(skill.dir, problem)
  }

  // --- Inventories: walked here, kept in Inventories.ts -----------------------------------------

  /**
   * A skill's files as the Skills extension would list them (path order), or why the extension
   * cannot serve the skill: over its limits (files, bytes), a file over --max-file-bytes, or
   * folders too deep. Nothing is read or hashed. A walk whose every folder and file had settled,
   * with no link, no withheld file and no problem, is kept for the next call (Inventories.ts).
   */
  const walkInventory = (skill: SkillRef, base: string) =>
    Effect.gen(function* () {
      // Before the walk: a folder or file changed while it is walked has a later time than this.
      const walkedAt = Date.now()
      // Watched before it is read, so that a change during the walk is seen (Watches.ts); not a
      // skill that could not be kept when last walked (a file withheld, over a limit).
      let watched = !withheld.has(skill.dir) && !leftOut.has(skill.dir) && inventories.beginWatch(base)
      let severalLinks = false
      const top = fs.sync.lstat(base)
      const folders: Array<FoundFolder> = []
      const files: Array<FoundFile> = []
      const unservable: Array<WithheldFile> = []
      let total = 0
      let problem: string | undefined
      let keep = false
      if (top !== null) {
        folders.push({ path: "", stamp: fingerprintOf(top) })
        keep = top.isDirectory() && settled(top, walkedAt, settleMs)
      }
      const end = yield* walk(fs, skill, base, base, "", (entry, entryPath) => {
        // Found through a link (its real path is not where its name is): walked every time.
        if (entry.real !== path.join(base, ...entryPath.split("/"))) keep = false
        else if (!settled(entry.info, walkedAt, settleMs)) keep = false
        // On another file system (a mount inside the skill): its changes may reach no watch.
        if (entry.info.dev !== top?.dev) watched = false
        if (entry.type === "directory") {
          folders.push({ path: entryPath, stamp: fingerprintOf(entry.info) })
          // Watched before the walk reads it (it is read once `visit` returns).
          if (keep && watched) watched = inventories.watchFolder(base, entry.real)
          return true
        }
        if (entry.info.nlink > 1) severalLinks = true
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
        else files.push({ path: entryPath, real: entry.real, stamp: fingerprintOf(entry.info) })
        return problem === undefined
      })
      if (problem === undefined && end === "too deep")
        problem = `its folders nest deeper than ${MAX_LISTING_DEPTH} levels`
      if (problem === undefined && end === "too many")
        problem = `its folders hold more than ${MAX_EXAMINED} names (links, pipes and the like included)`
      if (unservable.length === 0) withheld.delete(skill.dir)
      else withheld.set(skill.dir, unservable)
      if (keep && problem === undefined && unservable.length === 0)
        inventories.keep(skill.rootReal, base, folders, files, watched, severalLinks)
      else inventories.forget(skill.rootReal, base)
      return { files, problem }
    })

  // --- Digests ----------------------------------------------------------------------------------

  /**
   * One file's manifest entry; SKILL.md's with its frontmatter, which always comes from the very
   * bytes hashed. When SKILL.md's digest is known, the catalog's frontmatter (`indexed`) is taken
   * only if, when those bytes were hashed, they parsed to the same frontmatter as the catalog's
   * and had the fingerprint the catalog has (its stat of the file, taken apart from its read).
   * Undefined when the file is to be read (and SKILL.md parsed) again.
   */
  const knownEntry = (
    file: FoundFile,
    indexed: IndexedSkillMd | undefined,
    digest: string | undefined,
    key: string | undefined,
  ): KnownEntry | undefined => {
    if (digest === undefined) return undefined
    const entry: ManifestFile = { path: file.path, size: file.stamp.size, digest }
    if (file.path !== SKILL_FILE) return { entry, frontmatter: undefined }
    return sameAsIndexed(indexed, key, file.stamp) ? { entry, frontmatter: indexed?.frontmatter } : undefined
  }

  /** Whether SKILL.md hashed with this stamp and frontmatter key is the catalog's version of it (see `knownEntry`). */
  const sameAsIndexed = (indexed: IndexedSkillMd | undefined, key: string | undefined, stamp: Fingerprint) =>
    indexed !== undefined &&
    key === frontmatterKey(indexed.frontmatter) &&
    sameFingerprint(indexed.fingerprint, stamp)

  /**
   * The files' manifest entries, read and hashed now, one after the other, with synchronous calls
   * and no promise (each read is a few system calls); SKILL.md's frontmatter parsed from the bytes
   * hashed. A file that fits is read into one buffer (`scratch`), hashed, and SKILL.md's text
   * decoded, before the next is read.
   */
  const readEntries = (skill: SkillRef, base: string, toRead: ReadonlyArray<FoundFile>) =>
    Effect.gen(function* () {
      // Before the opens: a file written while it is read has a later time than this.
      const readAt = Date.now()
      // Read where the walk just found them (inside the skill), checked again as each is opened.
      const reads = yield* Effect.try({
        try: () =>
          toRead.map((file) => {
            const resolved = { real: file.real, base, relative: file.path }
            const { content, opened } = readNow(skill, resolved, file.path, file.stamp, scratch)
            const { bytes } = content
            const skillMd = file.path !== SKILL_FILE ? undefined : beginsWithFrontmatter(bytes)
            const text =
              skillMd === true
                ? Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString("utf8")
                : ""
            return { file, size: content.size, opened, digest: sha256Hex(bytes), skillMd, text }
          }),
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
      for (const { file, size, opened, skillMd, text, ...read } of reads) {
        const digest = `${DIGEST_PREFIX}${read.digest}`
        let parsed: ParsedFrontmatter | undefined
        if (skillMd === false) {
          noteLeftOut(skill, FRONTMATTER_FIRST)
          return yield* new SkillNotPublished({ skillId: skill.id, reason: FRONTMATTER_FIRST })
        }
        if (skillMd === true) parsed = yield* frontmatter.parse(path.join(skill.dir, SKILL_FILE), text)
        // Changed since the walk found it: what is kept of the skill is checked again next time.
        if (!sameFingerprint(fingerprintOf(opened), file.stamp)) inventories.unsure(base)
        if (settled(opened, readAt, settleMs)) {
          const key = parsed === undefined ? undefined : frontmatterKey(parsed)
          const cached = { ...fingerprintOf(opened), digest, frontmatterKey: key }
          inventories.keepDigest(skill.rootReal, base, file.real, cached)
        }
        entries.set(file, { entry: { path: file.path, size, digest }, frontmatter: parsed })
      }
      return entries
    })

  /** Real paths of skills' parent folders, as resolved in the current turn (one page of skills). */
  let parentsNow: Map<string, string | null> | undefined
  const realParent = (dir: string): string | null => {
    if (parentsNow === undefined) {
      const resolved = new Map<string, string | null>()
      parentsNow = resolved
      queueMicrotask(() => {
        if (parentsNow === resolved) parentsNow = undefined
      })
    }
    let real = parentsNow.get(dir)
    if (real === undefined) {
      real = fs.sync.realpath(dir)
      parentsNow.set(dir, real)
    }
    return real
  }

  /** Whether the skill folder's path is real up to its own name (its parent's real path is itself). */
  const ownPathIsReal = (skill: SkillRef) => {
    const parent = path.dirname(skill.dir)
    return isInside(skill.rootReal, skill.dir) && realParent(parent) === parent
  }

  /**
   * The skill folder's real path, checked (Containment `skillBaseNow`): its own path when that is
   * real up to its name (`ownPathIsReal`) and it is a folder, not a link; else resolved. On
   * Linux only, where the folder's first open checks the kernel's path of it again (Folders.ts):
   * elsewhere folders are read by path, and a realpath now is the check nearest the walk.
   */
  const baseNow = (skill: SkillRef) =>
    onLinux && ownPathIsReal(skill) && fs.sync.lstat(skill.dir)?.isDirectory() === true
      ? Effect.succeed(skill.dir)
      : skillBaseNow(fs, skill)

  /**
   * Each skill's manifest made without a wait, when it can be: its inventory is kept and holds,
   * every digest is known and SKILL.md's is the catalog's version of it (`knownEntry`); the same
   * object while all of that stays so. Undefined otherwise (`manifest` then walks, reads and
   * reports problems). Every kept inventory of the page is checked first, then the manifests are
   * made: a page's stats then come one after the other, with no other work between them to push
   * what the kernel just used out of the processor's caches (a fresh process's first sync makes
   * tens of thousands: a third less time in them, in a benchmark of plain stats).
   */
  const keptManifests = (
    skills: ReadonlyArray<SkillRef & Partial<IndexedSkillMd>>,
  ): ReadonlyArray<Manifest | undefined> => {
    const held = skills.map(heldInventory)
    return skills.map((skill, index) => {
      const kept = held[index]
      return kept === undefined ? undefined : manifestOfKept(skill, kept)
    })
  }

  /** The inventory kept for an indexed skill, while it holds (see `keptManifests`). */
  const heldInventory = (skill: SkillRef & Partial<IndexedSkillMd>): KeptInventory | undefined => {
    if (skill.fingerprint === undefined || skill.frontmatter === undefined) return undefined
    // Covered by watches: no look at the disk at all (Watches.ts).
    const covered = inventories.covered(skill.rootReal, skill.dir)
    if (covered !== undefined) return covered
    // Kept at its own path: that is its real path if its parent's is (resolved once for a page
    // of skills) and it is a folder, not a link, as `held`'s stat of it checks first.
    if (ownPathIsReal(skill)) {
      if (inventories.justKept(skill.rootReal, skill.dir) !== undefined)
        return inventories.held(skill.rootReal, skill.dir)
      // Nothing kept at its own path: if that is its real path (a folder, not a link), nothing is kept.
      if (fs.sync.lstat(skill.dir)?.isDirectory() === true) return undefined
    }
    const base = fs.sync.realpath(skill.dir)
    return base === null || !isInside(skill.rootReal, base)
      ? undefined
      : inventories.held(skill.rootReal, base)
  }

  /** The manifest of a kept inventory, when every digest is known (see `keptManifests`). */
  const manifestOfKept = (
    skill: SkillRef & Partial<IndexedSkillMd>,
    kept: KeptInventory,
  ): Manifest | undefined => {
    if (skill.fingerprint === undefined || skill.frontmatter === undefined) return undefined
    withheld.delete(skill.dir)
    noteLeftOut(skill, undefined)
    const memo = memos.get(kept)
    if (memo?.frontmatter === skill.frontmatter) return memo.manifest
    const indexed = { fingerprint: skill.fingerprint, frontmatter: skill.frontmatter }
    // From the kept numbers and digests, with no object per file but the manifest's own.
    const files: Array<ManifestFile> = []
    for (let index = 0; index < kept.files.length; index++) {
      const relative = kept.files[index] ?? ""
      const digest = inventories.keptDigest(kept, index)
      if (digest === undefined) return undefined
      // SKILL.md as the catalog indexed it (see `knownEntry`).
      if (
        relative === SKILL_FILE &&
        !sameAsIndexed(indexed, inventories.keptFrontmatterKey(kept, index), keptStamp(kept, index))
      )
        return undefined
      files.push({ path: relative, size: keptSize(kept, index), digest })
    }
    if (!files.some((file) => file.path === SKILL_FILE)) return undefined
    const manifest: Manifest = { files, frontmatter: skill.frontmatter }
    memos.set(kept, { frontmatter: skill.frontmatter, manifest })
    return manifest
  }

  /** Every file of a skill with its size and `sha256:` digest (see `inventory`, `knownEntry`). */
  const manifest = (skill: SkillRef & Partial<IndexedSkillMd>) =>
    Effect.gen(function* () {
      const covered = inventories.covered(skill.rootReal, skill.dir)
      const coveredAnswer = covered === undefined ? undefined : manifestOfKept(skill, covered)
      if (coveredAnswer !== undefined) return coveredAnswer
      const base = yield* baseNow(skill)
      // The kept inventory is checked against the disk once per call: it answers, or it gives
      // the files (with the digests still to compute), or a walk does.
      const held = inventories.held(skill.rootReal, base)
      const answer = held === undefined ? undefined : manifestOfKept(skill, held)
      if (answer !== undefined) return answer
      if (held !== undefined) withheld.delete(skill.dir)
      const { files, problem } =
        held === undefined
          ? yield* walkInventory(skill, base)
          : { files: inventories.filesOf(held), problem: undefined }
      noteLeftOut(skill, problem)
      if (problem !== undefined) return yield* new SkillNotPublished({ skillId: skill.id, reason: problem })
      inventories.trim()
      const indexed =
        skill.fingerprint !== undefined && skill.frontmatter !== undefined
          ? { fingerprint: skill.fingerprint, frontmatter: skill.frontmatter }
          : undefined
      // Digests known: kept with the inventory that held, or by real path for a walk's files.
      const known = files.map((file, index) => {
        if (held !== undefined) {
          const digest = inventories.keptDigest(held, index)
          return knownEntry(file, indexed, digest, inventories.keptFrontmatterKey(held, index))
        }
        const cached = inventories.digestOf(file)
        return knownEntry(file, indexed, cached?.digest, cached?.frontmatterKey)
      })
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
      const keptNow = inventories.justKept(skill.rootReal, base)
      return (keptNow === undefined ? undefined : manifestOfKept(skill, keptNow)) ?? result
    })

  /**
   * A file of a skill covered by watches (Watches.ts), as its kept inventory lists it, resolved
   * without a realpath: while covered, the skill folder is still its own real path and the file
   * a regular file in it. A stat of the folder must still find the kept one (a skill folder
   * swapped for a link just now fails it, before the watches' events arrive), and the file opened
   * must be the very file kept (`found`: a subfolder swapped for a link just now leads to
   * another). Undefined when it is not so (then resolve the path: Containment `resolveIn`).
   */
  const coveredFile = (skill: SkillRef, relative: string): CoveredFile | undefined => {
    const kept = inventories.covered(skill.rootReal, skill.dir)
    const file = kept === undefined ? undefined : keptFile(kept, relative)
    if (kept === undefined || file === undefined) return undefined
    // The skill folder's stamp comes first: dev, then ino (Inventories `KeptInventory`).
    const info = fs.sync.lstat(skill.dir)
    if (info === null || !info.isDirectory() || info.dev !== kept.stamps[0] || info.ino !== kept.stamps[1])
      return undefined
    return { resolved: { real: file.real, base: skill.dir, relative }, found: file.stamp }
  }

  /** A kept inventory's file at a path, as Inventories `filesOf` gives it. */
  const keptFile = (kept: KeptInventory, relative: string): FoundFile | undefined => {
    const index = kept.files.indexOf(relative)
    return index < 0 ? undefined : inventories.filesOf(kept)[index]
  }

  /** Why the Skills extension cannot serve a skill (limits, SKILL.md's first bytes), if it cannot. */
  const publicationProblem = (skill: SkillRef) =>
    Effect.gen(function* () {
      const base = yield* skillBase(fs, skill)
      const found = yield* walkInventory(skill, base)
      let problem = found.problem
      // SKILL.md read where the walk found it, as `readEntries` does.
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
    keptManifests,
    coveredFile,
    publicationProblem,
    // What is kept of skills' files, and its record (Inventories.ts).
    close: inventories.close,
    yieldRoom: inventories.yieldRoom,
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
