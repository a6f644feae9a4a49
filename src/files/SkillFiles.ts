/**
 * SkillFiles: every read of a file or folder inside a skill, as one service. It composes the
 * rooms of this folder: Containment (is a path inside the skill?), Reading (one regular file,
 * safely), Folders (listings and pages) and Manifests (what the Skills extension publishes,
 * with what is kept of it in Inventories).
 * The file system is reached through the Fs service, SKILL.md's text parsed through Frontmatter.
 */
import type { Stats } from "node:fs"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type { SkillError } from "../Errors.js"
import { Fs } from "../platform/Fs.js"
import type { Fingerprint } from "../platform/Paths.js"
import { childPath, fingerprintOf, isInside, sameFingerprint } from "../platform/Paths.js"
import { Settings } from "../Settings.js"
import { SKILL_FILE } from "../skills/Discovery.js"
import type { ParsedSkill } from "../skills/Frontmatter.js"
import { Frontmatter } from "../skills/Frontmatter.js"
import type { ResolvedPath, SkillRef } from "./Containment.js"
import { checkRelativePath, resolveIn } from "./Containment.js"
import { folderOf, listFolder, makeFolderPages, SettleWindow, settled } from "./Folders.js"
import { RecheckPace } from "./Inventories.js"
import { makeManifestStore } from "./ManifestStore.js"
import type { CoveredFile, IndexedSkillMd } from "./Manifests.js"
import { makeManifests } from "./Manifests.js"
import { fileReader, textOf } from "./Reading.js"
import { seesEveryChange } from "./Watches.js"

/** SKILL.md as `loadSkill` gives it. */
interface LoadedSkill {
  readonly name: string
  readonly description: string
  /** SKILL.md after its frontmatter, without leading blank lines. */
  readonly body: string
  readonly frontmatter: ParsedSkill
}

/** At most this much SKILL.md text (bytes as read) is remembered (`makeSkillMdMemory`). */
const MAX_REMEMBERED_SKILL_MD_BYTES = 16 * 1024 * 1024

/**
 * SKILL.md files as `loadSkill` read and parsed them, by skill folder, each with the stamp of the
 * file read (inside the skill, as every read is) and the device and inode of the skill folder:
 * answered again without reading while an lstat of the skill folder still finds that very folder
 * (not a link to it: a skill folder moved out and linked back is read, and checked, anew) and one
 * of its SKILL.md path still finds that very stamp (an edit, a replacement: another stamp). Only
 * a file settled before it was read (`settleMs`, Folders `settled`) is kept: a later change then
 * moves the change time, even where timestamps are coarse. Only a file of one link, on a file system where every change goes through
 * this kernel (Watches `seesEveryChange`), is kept: elsewhere (NFS, FUSE, SMB) a stat may be
 * answered from a cache of the file's attributes, and a change made on another machine missed.
 * At most `maxBytes` of files, least recently used first out.
 */
const makeSkillMdMemory = (maxBytes: number, lstat: (target: string) => Stats | null, settleMs: number) => {
  const entries = new Map<
    string,
    {
      readonly file: string
      readonly stamp: Fingerprint
      readonly folder: { readonly dev: number; readonly ino: number }
      readonly loaded: LoadedSkill
      readonly size: number
    }
  >()
  let total = 0
  const drop = (dir: string) => {
    const entry = entries.get(dir)
    if (entry === undefined) return
    entries.delete(dir)
    total -= entry.size
  }
  return {
    /** The SKILL.md remembered for `dir`, when `dir` is still the folder and its SKILL.md the file kept. */
    get: (dir: string): LoadedSkill | undefined => {
      const entry = entries.get(dir)
      if (entry === undefined) return undefined
      const folder = lstat(dir)
      if (
        folder === null ||
        !folder.isDirectory() ||
        folder.dev !== entry.folder.dev ||
        folder.ino !== entry.folder.ino
      )
        return undefined
      const now = lstat(entry.file)
      if (now === null || !sameFingerprint(fingerprintOf(now), entry.stamp)) return undefined
      // Most recently used last.
      entries.delete(dir)
      entries.set(dir, entry)
      return entry.loaded
    },
    /** Remembers what was read of `dir`'s SKILL.md (`file`), opened with the stat `opened`. */
    set: (dir: string, file: string, opened: Stats, loaded: LoadedSkill, size: number) => {
      drop(dir)
      if (size > maxBytes || !settled(opened, Date.now(), settleMs) || opened.nlink !== 1) return
      if (!seesEveryChange(path.dirname(file))) return
      // The folder it was read in: not remembered when that is a link now (or gone).
      const folder = lstat(dir)
      if (folder === null || !folder.isDirectory()) return
      entries.set(dir, {
        file,
        stamp: fingerprintOf(opened),
        folder: { dev: folder.dev, ino: folder.ino },
        loaded,
        size,
      })
      total += size
      for (const [oldest] of entries) {
        if (total <= maxBytes) break
        drop(oldest)
      }
    },
  } as const
}

export class SkillFiles extends Effect.Service<SkillFiles>()("skills-mcp/SkillFiles", {
  scoped: Effect.gen(function* () {
    const fs = yield* Fs
    const { maxFileBytes, manifestCache, gitCache, watch } = yield* Settings
    const frontmatter = yield* Frontmatter
    const { ms: settleMs } = yield* SettleWindow
    const readFile = fileReader(fs, maxFileBytes)
    const readFileNow = fileReader(fs, maxFileBytes, true)
    const page = makeFolderPages(fs, settleMs)
    // Git sources' checkouts live one process and one commit: their records would never be read.
    const gitCacheReal = gitCache === undefined ? undefined : (fs.sync.realpath(gitCache) ?? gitCache)
    const store = makeManifestStore(
      manifestCache,
      (rootReal) => gitCacheReal !== undefined && isInside(gitCacheReal, rootReal),
    )
    const manifests = makeManifests(fs, maxFileBytes, frontmatter, store, watch, yield* RecheckPace, settleMs)
    // What the cache folder does not have yet is written as the server stops; watches closed.
    yield* Effect.addFinalizer(() => Effect.sync(manifests.close))
    const skillMds = makeSkillMdMemory(MAX_REMEMBERED_SKILL_MD_BYTES, fs.sync.lstat, settleMs)
    /**
     * The file `requested` names in a skill whose kept inventory watches cover, resolved at once
     * (Manifests `coveredFile`: one stat, no realpath); undefined otherwise.
     */
    const coveredFile = (skill: SkillRef, requested: string): CoveredFile | undefined => {
      const segments = checkRelativePath(skill.id, requested)
      return Either.isLeft(segments) || segments.right.length === 0
        ? undefined
        : manifests.coveredFile(skill, segments.right.join("/"))
    }
    /**
     * `read` of the file resolved at once when it can be (`coveredFile`: the file opened must be
     * the one kept), else `slow` (the path resolved first: Containment `resolveIn`); a read of
     * the first kind that fails is left for `slow` (say, the file was replaced by a link an
     * instant ago), which says what is so.
     */
    const readIn = <A, E, R, B, E2, R2>(
      skill: SkillRef,
      requested: string,
      read: (resolved: ResolvedPath, found: CoveredFile["found"]) => Effect.Effect<A, E, R>,
      slow: Effect.Effect<B, E2, R2>,
    ): Effect.Effect<A | B, E2, R | R2> => {
      const covered = coveredFile(skill, requested)
      return covered === undefined ? slow : Effect.orElse(read(covered.resolved, covered.found), () => slow)
    }
    // Each public method is one span (Effect.fn); they share plain forms, not each other's
    // traced ones, so one call makes one span.
    const bytesOf = (skill: SkillRef, requested: string) => {
      const read = (resolved: ResolvedPath, found?: CoveredFile["found"]) =>
        Effect.map(readFile(skill, resolved, requested, found), ({ content }) => content)
      return readIn(
        skill,
        requested,
        read,
        Effect.flatMap(resolveIn(fs, skill, requested), (at) => read(at)),
      )
    }

    /** Resolves `requested` inside the skill, or fails without revealing anything outside it. */
    const resolve = Effect.fn("SkillFiles.resolve")(function* (skill: SkillRef, requested: string) {
      return yield* resolveIn(fs, skill, requested)
    })

    /** A file of the skill as bytes, within the size limit. */
    const readBytes = Effect.fn("SkillFiles.readBytes")(function* (skill: SkillRef, requested: string) {
      return yield* bytesOf(skill, requested)
    })

    /** A text file of the skill; binary files are refused with their size and type. */
    const readText = Effect.fn("SkillFiles.readText")(function* (skill: SkillRef, requested: string) {
      return yield* textOf(skill, yield* bytesOf(skill, requested))
    })

    /** A folder of the skill, listed recursively (files with sizes), at most MAX_LISTING entries. */
    const list = Effect.fn("SkillFiles.list")(function* (skill: SkillRef, requested: string) {
      return yield* listFolder(fs, skill, yield* folderOf(fs, skill, requested))
    })

    /** The direct children of a folder of the skill, one page at a time, in name order. */
    const children = Effect.fn("SkillFiles.children")(function* (
      skill: SkillRef,
      requested: string,
      offset: number,
      limit: number,
    ) {
      return yield* page(skill, yield* folderOf(fs, skill, requested), offset, limit)
    })

    /** What the path names, resolved once: a folder, or a file's bytes (within the size limit). */
    const fileOrFolder = (skill: SkillRef, requested: string) => {
      const resolvedFirst = Effect.gen(function* () {
        const resolved = yield* resolveIn(fs, skill, requested)
        const info = yield* Effect.promise(async () => fs.async.stat(resolved.real))
        if (info?.isDirectory() === true) return { _tag: "Folder", resolved } as const
        const { content } = yield* readFile(skill, resolved, requested)
        return { _tag: "File", content } as const
      })
      // A file a covered skill's kept inventory lists is read at once (see `readIn`).
      const readCovered = (resolved: ResolvedPath, found: CoveredFile["found"]) =>
        Effect.map(
          readFile(skill, resolved, requested, found),
          ({ content }) => ({ _tag: "File", content }) as const,
        )
      return readIn(skill, requested, readCovered, resolvedFirst)
    }

    /** A file's bytes, or word that the path is a folder (a resource read refuses folders). */
    const readEntry = Effect.fn("SkillFiles.readEntry")(function* (skill: SkillRef, requested: string) {
      return yield* fileOrFolder(skill, requested)
    })

    /** A folder's listing or a file's text, whichever the path names. */
    const read = Effect.fn("SkillFiles.read")(function* (skill: SkillRef, requested: string) {
      const entry = yield* fileOrFolder(skill, requested)
      if (entry._tag === "Folder") {
        return { _tag: "Listing", listing: yield* listFolder(fs, skill, entry.resolved) } as const
      }
      return { _tag: "File", file: yield* textOf(skill, entry.content) } as const
    })

    /**
     * A skill's SKILL.md, read now: as a covered file, else resolved first (`readIn`). SKILL.md
     * is text by contract: bytes that are not UTF-8 become U+FFFD (as they did when it was
     * indexed).
     */
    const readSkill = Effect.fn("SkillFiles.loadSkill")(function* (skill: SkillRef) {
      const read = (resolved: ResolvedPath, found?: CoveredFile["found"]) =>
        readFileNow(skill, resolved, SKILL_FILE, found)
      const { content: file, opened } = yield* readIn(
        skill,
        SKILL_FILE,
        read,
        Effect.flatMap(resolveIn(fs, skill, SKILL_FILE, true), (at) => read(at)),
      )
      const at = childPath(skill.dir, SKILL_FILE)
      // Decoded through a view of the bytes read (Buffer.from of a Uint8Array would copy them first).
      const { buffer, byteOffset, byteLength } = file.bytes
      const text = Buffer.from(buffer, byteOffset, byteLength).toString("utf8")
      const parsed = yield* frontmatter.parse(at, text)
      const loaded: LoadedSkill = {
        name: parsed.fields.name,
        description: parsed.fields.description,
        body: parsed.body.replace(/^(?:[ \t]*\r?\n)+/, ""),
        frontmatter: parsed,
      }
      skillMds.set(skill.dir, at, opened, loaded, file.bytes.length)
      return loaded
    })

    /**
     * A skill's SKILL.md: its current name, description and body. One remembered since
     * (`skillMds`) is answered after one lstat, with no span (the lookup is the whole call).
     */
    const loadSkill = (skill: SkillRef): Effect.Effect<LoadedSkill, SkillError> =>
      Effect.suspend(() => {
        const remembered = skillMds.get(skill.dir)
        return remembered === undefined ? readSkill(skill) : Effect.succeed(remembered)
      })

    /** Every file of a skill with size and digest, and SKILL.md's frontmatter (Manifests.ts). */
    const manifest = Effect.fn("SkillFiles.manifest")(function* (skill: SkillRef & Partial<IndexedSkillMd>) {
      return yield* manifests.manifest(skill)
    })

    /** Why the Skills extension cannot serve a skill, if it cannot (Manifests.ts). */
    const publicationProblem = Effect.fn("SkillFiles.publicationProblem")(function* (skill: SkillRef) {
      return yield* manifests.publicationProblem(skill)
    })

    return {
      resolve,
      readBytes,
      readText,
      list,
      children,
      read,
      readEntry,
      loadSkill,
      manifest,
      /**
       * Each skill's manifest when it needs no wait (kept and unchanged), else undefined; a page's
       * stamps checked first (Manifests.ts).
       */
      keptManifests: manifests.keptManifests,
      /**
       * The catalog's watcher could not watch every folder: kept skills' watches are closed and
       * no more are made, leaving it the room (Watches.ts `yieldRoom`).
       */
      yieldWatches: manifests.yieldRoom,
      publicationProblem,
      leftOut: manifests.leftOut,
      withheld: manifests.withheld,
    } as const
  }),
}) {}
