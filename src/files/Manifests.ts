/**
 * Manifests: what the Skills extension publishes of a skill. Its inventory (every file with its
 * size, within the extension's limits), the files no `skill://` URI could read back (withheld),
 * SHA-256 digests (computed on first use, cached by file fingerprint), and the manifest itself,
 * with SKILL.md's frontmatter parsed from the very bytes hashed.
 */
import type { Stats } from "node:fs"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import { FileNotFound, SkillNotPublished, SkillUnreadable } from "../Errors.js"
import type { FsShape } from "../platform/Fs.js"
import type { Fingerprint } from "../platform/Paths.js"
import { fingerprintOf, sameFingerprint } from "../platform/Paths.js"
import { SKILL_FILE } from "../skills/Discovery.js"
import type { Frontmatter, ParsedFrontmatter } from "../skills/Frontmatter.js"
import { beginsWithFrontmatter } from "../skills/Frontmatter.js"
import type { SkillRef } from "./Containment.js"
import { fileUriProblem, skillBase } from "./Containment.js"
import { MAX_LISTING_DEPTH, SETTLED_MS, walk } from "./Folders.js"
import { fileReader } from "./Reading.js"

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
/** The digest cache is dropped when it grows past this many files. */
const MAX_CACHED_DIGESTS = 200_000

/** A file found by the inventory: where, and its stat as the walk found it. */
interface FoundFile {
  readonly path: string
  readonly real: string
  readonly info: Stats
}

/** A digest, and the fingerprint of the file as it was opened to be hashed. */
interface CachedDigest extends Fingerprint {
  readonly digest: string
  /** SKILL.md's only: the catalog's parse of it, when the bytes hashed parsed to the very same. */
  readonly sameAsIndexed: ParsedFrontmatter | undefined
}

/** SHA-256 in hex; `node:crypto` is loaded on the first digest, not at start-up. */
const sha256Hex = (bytes: Uint8Array): string =>
  process.getBuiltinModule("node:crypto").createHash("sha256").update(bytes).digest("hex")

/** Whether two parses of a SKILL.md found the same frontmatter (`raw` is JSON data). */
const sameParse = (a: ParsedFrontmatter, b: ParsedFrontmatter): boolean =>
  a.endLine === b.endLine && JSON.stringify(a.raw) === JSON.stringify(b.raw)

export const makeManifests = (fs: FsShape, maxFileBytes: number, frontmatter: Frontmatter) => {
  const readFile = fileReader(fs, maxFileBytes)
  /** Digests by real file path, valid while the fingerprint holds; kept once settled (SETTLED_MS). */
  const digests = new Map<string, CachedDigest>()
  /** Skills found unservable over the extension, by folder, with the reason. */
  const leftOut = new Map<string, string>()
  /** Files left out of skills' manifests, by skill folder (see `fileUriProblem`). */
  const withheld = new Map<string, ReadonlyArray<WithheldFile>>()

  const noteLeftOut = (skill: SkillRef, problem: string | undefined) => {
    if (problem === undefined) leftOut.delete(skill.dir)
    else leftOut.set(skill.dir, problem)
  }

  /**
   * A skill's files as the Skills extension would list them (path order), or why the extension
   * cannot serve the skill: over its limits (files, bytes), a file over --max-file-bytes, or
   * folders too deep. Nothing is read or hashed.
   */
  const inventory = (skill: SkillRef) =>
    Effect.gen(function* () {
      const base = yield* skillBase(fs, skill)
      const files: Array<FoundFile> = []
      const unservable: Array<WithheldFile> = []
      let total = 0
      let problem: string | undefined
      const complete = yield* walk(fs, skill, base, base, "", (entry, entryPath) => {
        if (entry.type === "directory") return true
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
        else files.push({ path: entryPath, real: entry.real, info: entry.info })
        return problem === undefined
      })
      if (problem === undefined && !complete)
        problem = `its folders nest deeper than ${MAX_LISTING_DEPTH} levels`
      if (unservable.length === 0) withheld.delete(skill.dir)
      else withheld.set(skill.dir, unservable)
      return { base, files, problem }
    })

  /**
   * One file's manifest entry; SKILL.md's with its frontmatter, which always comes from the very
   * bytes hashed. When SKILL.md's digest is known, the catalog's frontmatter (`indexed`) is taken
   * only if, when those bytes were hashed, they parsed to the same frontmatter as the catalog's
   * and had the fingerprint the catalog has (its stat of the file, taken apart from its read).
   * Undefined when the file is to be read (and SKILL.md parsed) again.
   */
  const knownEntry = (base: string, file: FoundFile, indexed: IndexedSkillMd | undefined) => {
    const cached = digests.get(`${base}${path.sep}${file.path}`)
    if (cached === undefined || !sameFingerprint(cached, fingerprintOf(file.info))) return undefined
    const entry: ManifestFile = { path: file.path, size: file.info.size, digest: cached.digest }
    if (file.path !== SKILL_FILE) return { entry, frontmatter: undefined }
    const sameAsIndexed =
      indexed !== undefined &&
      cached.sameAsIndexed === indexed.frontmatter &&
      sameFingerprint(indexed.fingerprint, cached)
    return sameAsIndexed ? { entry, frontmatter: indexed.frontmatter } : undefined
  }

  /** One file's manifest entry, read and hashed now (SKILL.md's frontmatter parsed from the bytes). */
  const readEntry = (skill: SkillRef, base: string, file: FoundFile, indexed: IndexedSkillMd | undefined) =>
    Effect.gen(function* () {
      // Before the open: a file written while it is read has a later time than this.
      const readAt = Date.now()
      // Read where the walk just found it (inside the skill), checked again as it is opened.
      const resolved = { real: file.real, base, relative: file.path }
      const { content, opened } = yield* readFile(skill, resolved, file.path, file.info)
      const digest = `sha256:${sha256Hex(content.bytes)}`
      let parsed: ParsedFrontmatter | undefined
      let sameAsIndexed: ParsedFrontmatter | undefined
      if (file.path === SKILL_FILE) {
        if (!beginsWithFrontmatter(content.bytes)) {
          noteLeftOut(skill, FRONTMATTER_FIRST)
          return yield* new SkillNotPublished({ skillId: skill.id, reason: FRONTMATTER_FIRST })
        }
        const text = Buffer.from(content.bytes).toString("utf8")
        parsed = yield* frontmatter.parse(path.join(skill.dir, SKILL_FILE), text)
        const asIndexed =
          indexed !== undefined &&
          sameFingerprint(indexed.fingerprint, opened) &&
          sameParse(parsed, indexed.frontmatter)
        if (asIndexed) sameAsIndexed = indexed.frontmatter
      }
      if (readAt - opened.mtimeMs > SETTLED_MS) {
        const { dev, ino, size, mtimeMs } = opened
        digests.set(`${base}${path.sep}${file.path}`, { dev, ino, size, mtimeMs, digest, sameAsIndexed })
      }
      return { entry: { path: file.path, size: content.size, digest }, frontmatter: parsed }
    })

  /** Every file of a skill with its size and `sha256:` digest (see `inventory`, `knownEntry`). */
  const manifest = (skill: SkillRef & Partial<IndexedSkillMd>) =>
    Effect.gen(function* () {
      const { base, files, problem } = yield* inventory(skill)
      noteLeftOut(skill, problem)
      if (problem !== undefined) return yield* new SkillNotPublished({ skillId: skill.id, reason: problem })
      if (digests.size > MAX_CACHED_DIGESTS) digests.clear()
      const indexed =
        skill.fingerprint !== undefined && skill.frontmatter !== undefined
          ? { fingerprint: skill.fingerprint, frontmatter: skill.frontmatter }
          : undefined
      const known = files.map((file) => knownEntry(base, file, indexed))
      const toRead = known.filter((entry) => entry === undefined).length
      // Eight reads at a time; sequential (no fiber per file) when at most one file needs reading.
      const entries = yield* Effect.forEach(
        files,
        (file, index) => {
          const entry = known[index]
          return entry !== undefined ? Effect.succeed(entry) : readEntry(skill, base, file, indexed)
        },
        { concurrency: toRead > 1 ? 8 : 1 },
      )
      const skillMd = entries.find((entry) => entry.entry.path === SKILL_FILE)?.frontmatter
      if (skillMd === undefined) {
        return yield* new SkillUnreadable({
          skillId: skill.id,
          path: SKILL_FILE,
          reason: "SKILL.md is missing",
        })
      }
      const result: Manifest = { files: entries.map((entry) => entry.entry), frontmatter: skillMd }
      return result
    })

  /** Why the Skills extension cannot serve a skill (limits, SKILL.md's first bytes), if it cannot. */
  const publicationProblem = (skill: SkillRef) =>
    Effect.gen(function* () {
      const found = yield* inventory(skill)
      let problem = found.problem
      // SKILL.md read where the walk found it, as `readEntry` does.
      const skillMd = found.files.find((file) => file.path === SKILL_FILE)
      if (problem === undefined) {
        if (skillMd === undefined) return yield* new FileNotFound({ skillId: skill.id, path: SKILL_FILE })
        const resolved = { real: skillMd.real, base: found.base, relative: SKILL_FILE }
        const { content } = yield* readFile(skill, resolved, SKILL_FILE, skillMd.info)
        if (!beginsWithFrontmatter(content.bytes)) problem = FRONTMATTER_FIRST
      }
      noteLeftOut(skill, problem)
      return problem
    })

  return {
    manifest,
    publicationProblem,
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
