/**
 * ManifestStore: skills' inventories and digests kept between runs, in the user's cache folder
 * (`$XDG_CACHE_HOME/skills-mcp/manifests` or `~/.cache/skills-mcp/manifests`), one JSON file per
 * skills folder (root), named by a hash of the root's real path. A fresh process then checks
 * each skill's folders and files against what was recorded (a stat each, see Inventories.ts)
 * instead of walking and hashing it again.
 *
 * Nothing read from the folder is trusted blindly: the folder and the file must be ours (owned
 * by this user, not writable by group or others, not links), the file must decode (effect/Schema)
 * and name the same root; anything else is ignored, as if there were no file. Paths recorded are
 * plain relative paths (no `..`, `.`, empty segment, backslash or NUL); every recorded stamp is
 * checked against the disk before it is used. Files are written whole to a temporary name and
 * renamed into place, so a reader never sees half of one.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"

/** Bump when the format changes: files of another version are ignored. */
const VERSION = 1
/** A file larger than this is ignored (a few hundred bytes per file of a skill). */
const MAX_STORE_BYTES = 256 * 1024 * 1024

/**
 * A plain relative path: `/`-separated names, none empty, `.` or `..`, no backslash or NUL (one
 * pattern: a record holds tens of thousands of paths).
 */
const PLAIN_PATH = /^(?!\.{1,2}(?:\/|$))[^/\\\0]+(?:\/(?!\.{1,2}(?:\/|$))[^/\\\0]+)*$/
const DIGESTS_IN_HEX = /^(?:[0-9a-f]{64})*$/
/** Half of a UTF-16 pair alone: JSON may carry one, no file name read from the disk does. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

const isPaths = (input: unknown): input is ReadonlyArray<string> =>
  Array.isArray(input) &&
  input.every((text) => typeof text === "string" && PLAIN_PATH.test(text) && !LONE_SURROGATE.test(text))

const isNumbers = (input: unknown): input is ReadonlyArray<number> =>
  Array.isArray(input) && input.every((n) => typeof n === "number" && Number.isFinite(n))

/**
 * A skill's kept inventory. `folders` are below the skill folder (which is recorded first, with
 * no path); `stamps` holds dev, ino, mtimeMs and ctimeMs of the skill folder and of each folder,
 * then dev, ino, size, mtimeMs and ctimeMs of each file; `digests` each file's SHA-256 in hex,
 * one after the other; `skillMdKey` the key of the frontmatter SKILL.md's bytes parse to.
 */
export interface StoredSkill {
  /** The skill folder's real path, below the root's. */
  readonly base: string
  readonly folders: ReadonlyArray<string>
  readonly files: ReadonlyArray<string>
  readonly stamps: ReadonlyArray<number>
  readonly digests: string
  readonly skillMdKey: string | null
}

/**
 * Whether a decoded JSON value is a StoredSkill, field by field. Written out, not a Schema.Struct:
 * a record holds thousands of skills, and decoding each as a Struct took a fresh process over
 * 100 ms more (this, a third of that).
 */
const isStoredSkill = (input: unknown): input is StoredSkill =>
  typeof input === "object" &&
  input !== null &&
  "base" in input &&
  typeof input.base === "string" &&
  "folders" in input &&
  isPaths(input.folders) &&
  "files" in input &&
  isPaths(input.files) &&
  "stamps" in input &&
  isNumbers(input.stamps) &&
  "digests" in input &&
  typeof input.digests === "string" &&
  DIGESTS_IN_HEX.test(input.digests) &&
  "skillMdKey" in input &&
  (input.skillMdKey === null || typeof input.skillMdKey === "string")

const StoredRoot = Schema.Struct({
  version: Schema.Literal(VERSION),
  root: Schema.String,
  skills: Schema.declare(
    (input: unknown): input is ReadonlyArray<StoredSkill> =>
      Array.isArray(input) && input.every(isStoredSkill),
    { identifier: "StoredSkills" },
  ),
})

const decodeRoot = Schema.decodeUnknownEither(StoredRoot)

/** Whether a file or folder may be trusted: ours, and writable by nobody else. */
const ours = (info: fs.Stats): boolean =>
  (process.getuid === undefined || info.uid === process.getuid()) && (info.mode & 0o022) === 0

/** The folder, if it is one we may trust (see `ours`); never through a link. */
const trustedFolder = (folder: string): boolean => {
  try {
    const info = fs.lstatSync(folder)
    return info.isDirectory() && ours(info)
  } catch {
    return false
  }
}

const fileOf = (folder: string, rootReal: string) =>
  path.join(
    folder,
    `${process.getBuiltinModule("node:crypto").createHash("sha256").update(rootReal).digest("hex").slice(0, 32)}.json`,
  )

/**
 * The store in `folder` (undefined: none, nothing is kept). Its reads and writes are synchronous
 * and rare: a root's file is read once, when its first skill is looked at, and written at most
 * every few seconds while manifests change (see Inventories.ts).
 */
export const makeManifestStore = (
  folder: string | undefined,
  /** Roots never recorded: git sources' checkouts (one per process and commit, never read again). */
  passing: (rootReal: string) => boolean = () => false,
) => {
  /** What was recorded for a root's skills (none when nothing trusted was found). */
  const load = (rootReal: string): ReadonlyArray<StoredSkill> => {
    if (folder === undefined || passing(rootReal) || !trustedFolder(folder)) return []
    let fd: number | undefined
    try {
      fd = fs.openSync(
        fileOf(folder, rootReal),
        fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK,
      )
      const info = fs.fstatSync(fd)
      if (!info.isFile() || !ours(info) || info.size > MAX_STORE_BYTES) return []
      // Read whole at the size found (a record is replaced by a rename, never written in place),
      // then decoded: 59 ms against 78 for readFileSync(fd, "utf8") with a record of 6.4 MB, in a
      // fresh process. Some file systems (FUSE, network) answer a large read in parts.
      const bytes = Buffer.allocUnsafe(info.size)
      let length = 0
      while (length < info.size) {
        const read = fs.readSync(fd, bytes, length, info.size - length, length)
        if (read === 0) break
        length += read
      }
      const text = bytes.toString("utf8", 0, length)
      const decoded = decodeRoot(JSON.parse(text))
      if (Either.isLeft(decoded) || decoded.right.root !== rootReal) return []
      return decoded.right.skills
    } catch {
      return []
    } finally {
      if (fd !== undefined) fs.closeSync(fd)
    }
  }

  /** Records a root's skills, replacing what was recorded; false when it could not. */
  const save = (rootReal: string, skills: ReadonlyArray<StoredSkill>): boolean => {
    if (folder === undefined || passing(rootReal)) return false
    const temporary = `${fileOf(folder, rootReal)}.${process.pid}.${Date.now().toString(36)}.tmp`
    try {
      fs.mkdirSync(folder, { recursive: true, mode: 0o700 })
      if (!trustedFolder(folder)) return false
      const data: typeof StoredRoot.Type = { version: VERSION, root: rootReal, skills }
      fs.writeFileSync(temporary, JSON.stringify(data), { flag: "wx", mode: 0o600 })
      fs.renameSync(temporary, fileOf(folder, rootReal))
      return true
    } catch {
      fs.rmSync(temporary, { force: true })
      return false
    }
  }

  return { load, save } as const
}

export type ManifestStore = ReturnType<typeof makeManifestStore>
