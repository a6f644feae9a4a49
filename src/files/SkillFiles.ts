/**
 * SkillFiles: every read of a file inside a skill. A requested path is refused before any
 * disk access when it is absolute, contains NUL or a `..` segment (in any spelling); then its
 * kernel realpath must lie inside the skill folder's realpath. Files are opened without
 * following a final symbolic link and checked again through the open descriptor, so a path
 * swapped after the check is still refused. Size is checked on the open file before reading.
 */
import type { Stats } from "node:fs"
import * as fsCallback from "node:fs"
import { constants } from "node:fs"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { fileUri, MANIFEST_SEGMENT, parseSkillUri } from "../catalog/Uris.js"
import type { SkillError } from "../Errors.js"
import {
  BinaryFile,
  FileNotFound,
  FileTooLarge,
  InvalidArgument,
  PathEscape,
  SkillNotPublished,
  SkillUnreadable,
} from "../Errors.js"
import { asyncFs, errorCode, fsCalls, mapLimit } from "../platform/Fs.js"
import type { Fingerprint } from "../platform/Paths.js"
import {
  childPath,
  fingerprintOf,
  isInside,
  lstatOrNull,
  realPathNative,
  realPathsNative,
  sameFingerprint,
  statOrNull,
  toPosix,
} from "../platform/Paths.js"
import { Settings } from "../Settings.js"
import { SKILL_FILE } from "../skills/Discovery.js"
import type { ParsedFrontmatter } from "../skills/Frontmatter.js"
import { beginsWithFrontmatter, describeIoError, parseSkillText } from "../skills/Frontmatter.js"
import { mimeTypeOf } from "./MimeTypes.js"

/** The part of a skill SkillFiles needs. */
export interface SkillRef {
  readonly id: string
  readonly dir: string
  /**
   * The real path of the skills folder (root) the skill was found in, pinned when the server
   * started (src/skills/Discovery.ts): the skill's folder must still be below it.
   */
  readonly rootReal: string
}

/**
 * A skill's SKILL.md as the catalog indexed it: the frontmatter it parsed, and the file's
 * fingerprint as it found it (a catalog `Skill` has both).
 */
export interface IndexedSkillMd {
  readonly fingerprint: Fingerprint
  readonly frontmatter: ParsedFrontmatter
}

/** Whether two parses of a SKILL.md found the same frontmatter (`raw` is JSON data). */
const sameParse = (a: ParsedFrontmatter, b: ParsedFrontmatter): boolean =>
  a.endLine === b.endLine && JSON.stringify(a.raw) === JSON.stringify(b.raw)

export interface ResolvedPath {
  /** Real path on disk, inside the skill's real folder. */
  readonly real: string
  /** The skill folder's real path. */
  readonly base: string
  /** Path relative to the skill folder, `/`-separated; "" for the folder itself. */
  readonly relative: string
}

export interface FileContent {
  readonly path: string
  readonly size: number
  readonly mimeType: string
  readonly bytes: Uint8Array
}

export interface TextFile {
  readonly path: string
  readonly size: number
  readonly mimeType: string
  readonly text: string
}

export interface ListingEntry {
  readonly path: string
  readonly type: "file" | "directory"
  readonly size?: number
}

/** A file or folder inside a skill, with its real path and stat. */
interface FolderEntry {
  readonly name: string
  readonly real: string
  readonly type: "file" | "directory"
  readonly info: Stats
}

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

/**
 * SHA-256 of `bytes`, in hex. `node:crypto` is loaded on the first digest, not at start-up:
 * loading it costs about 3 ms, and only a skill's manifest (SEP-2640's `skills/get`, the
 * manifest resource) needs a digest.
 */
const sha256Hex = (bytes: Uint8Array): string =>
  process.getBuiltinModule("node:crypto").createHash("sha256").update(bytes).digest("hex")

/** Why a SKILL.md that does not begin with its frontmatter is left out (see beginsWithFrontmatter). */
export const FRONTMATTER_FIRST =
  "its SKILL.md does not begin with '---' (remove the blank lines or byte order mark before it)"

/** The Skills extension's per-skill limits: files, and bytes over all files. */
export const MAX_SKILL_FILES = 512
export const MAX_SKILL_BYTES = 16 * 1024 * 1024
/** The digest cache is dropped when it grows past this many files. */
const MAX_CACHED_DIGESTS = 200_000

/** A cached digest: the fingerprint of the file hashed, and its digest. */
interface CachedDigest extends Fingerprint {
  /** `sha256:` and 64 lowercase hex digits. */
  readonly digest: string
  /**
   * SKILL.md's only: the catalog's parse of it, when the bytes hashed parsed to the very same
   * frontmatter (see `manifest`).
   */
  readonly sameAsIndexed: ParsedFrontmatter | undefined
}

/**
 * `parts` joined as one flat string, for strings kept long. V8 keeps a string made with `+`, a
 * template or `path.join` as a tree of the pieces it was made from, and a map keeps the whole
 * tree: a file's key made with `path.join` took about 570 bytes, as one flat string about 100
 * (heap snapshots at 10,000 skills after every skill was listed). `Array.prototype.join`
 * copies the pieces into one string.
 */
const flatString = (...parts: ReadonlyArray<string>): string => parts.join("")

/** The digest cache's key of a file: the skill's real folder and the file's path inside it. */
const digestKey = (base: string, relative: string): string => flatString(base, path.sep, relative)

export interface Listing {
  readonly path: string
  readonly entries: ReadonlyArray<ListingEntry>
  /** True when the listing stopped at `maxListing` entries. */
  readonly truncated: boolean
}

const MAX_SEGMENT_BYTES = 255
const MAX_PATH_CHARS = 4096
/** A listing stops after this many entries. */
export const MAX_LISTING = 2_000
/** A listing descends at most this many folder levels. */
const MAX_LISTING_DEPTH = 16
/** Folders of at least this many entries keep their sorted names between requests... */
const CACHED_FOLDER_MIN = 1_000
/** ...and this many such folders at most (the oldest is dropped first). */
const CACHED_FOLDERS = 16
/**
 * A folder's names are kept only once it has not changed for this long: file system
 * timestamps lag the clock (a coarse clock ticks every few ms; some file systems keep
 * seconds), so a folder changed just now could change again and keep its timestamp.
 */
const FOLDER_SETTLED_MS = 2_000
/** Entries examined (lstat) at a time while walking a folder. */
const WALK_PAGE = 256
/** Subfolders a walk reads ahead while it is in an earlier one (the thread pool has four threads). */
const LOOKAHEAD = 3

const decodePercent = (segment: string): string => {
  try {
    return decodeURIComponent(segment)
  } catch {
    return segment
  }
}

/**
 * Lexical checks that need no disk: absolute paths, NUL, `..` (also percent-encoded, with
 * backslashes or mixed separators) and overlong names. Returns the path's segments.
 */
export const checkRelativePath = (
  skillId: string,
  requested: string,
): Either.Either<ReadonlyArray<string>, PathEscape | InvalidArgument> => {
  const outside = () => Either.left(new PathEscape({ skillId, requested }))
  if (requested.length > MAX_PATH_CHARS) {
    return Either.left(
      new InvalidArgument({ argument: "path", reason: `longer than ${MAX_PATH_CHARS} characters` }),
    )
  }
  if (requested.includes("\0") || decodePercent(requested).includes("\0")) {
    return Either.left(new InvalidArgument({ argument: "path", reason: "contains a NUL byte" }))
  }
  if (/^[/\\]/.test(requested) || /^[a-zA-Z]:/.test(requested) || path.isAbsolute(requested)) return outside()
  const segments = requested.split(/[/\\]+/).filter((segment) => segment !== "" && segment !== ".")
  for (const segment of segments) {
    const decoded = decodePercent(segment)
    if (segment === ".." || decoded === ".." || decoded.split(/[/\\]/).includes("..")) return outside()
    if (Buffer.byteLength(segment) > MAX_SEGMENT_BYTES) {
      return Either.left(
        new InvalidArgument({ argument: "path", reason: `a name is longer than ${MAX_SEGMENT_BYTES} bytes` }),
      )
    }
  }
  return Either.right(segments)
}

/** A file of a skill that no manifest lists, and why. */
export interface WithheldFile {
  /** `/`-separated path relative to the skill folder. */
  readonly path: string
  readonly reason: string
}

/**
 * Why a file of a skill cannot be listed in its manifest: a manifest advertises each file at a
 * `skill://` URI, and only a file that URI reads back (with the listed digest and size) may be
 * listed. `_manifest` at the top level names the file list itself (for older clients); a name
 * with a backslash, or one that decodes to `..`, cannot be written as a URI segment that
 * `resources/read` takes. Undefined for a file that can be listed.
 */
export const fileUriProblem = (relative: string): string | undefined => {
  if (relative === MANIFEST_SEGMENT) {
    return `its URI names the skill's file list (${MANIFEST_SEGMENT}, for clients written before the Skills extension)`
  }
  const segments = relative.split("/")
  const parsed = parseSkillUri(fileUri(["skill"], relative))
  const roundTrips =
    Either.isRight(parsed) &&
    parsed.right.length === segments.length + 1 &&
    segments.every((segment, index) => parsed.right[index + 1] === segment)
  if (!roundTrips || Either.isLeft(checkRelativePath("skill", relative))) {
    return "its name cannot be written as a skill:// URI that reads it back (it holds a backslash, or an escape that decodes to '..'); rename it"
  }
  return undefined
}

/** NUL bytes or invalid UTF-8 mean "binary". */
export const isBinary = (bytes: Uint8Array): boolean => {
  if (bytes.subarray(0, 8192).includes(0)) return true
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(bytes)
    return false
  } catch {
    return true
  }
}

export { mimeTypeOf } from "./MimeTypes.js"

/**
 * The bytes of an open regular file of `size` bytes (as its stat said), read from its start; or,
 * when it holds more than `limit` bytes (it grew since), how many were read.
 *
 * Files are read through plain descriptors and the callback API (src/platform/Fs.ts), not
 * fs/promises' FileHandle, whose calls cost more of the event loop: a read as `readResolved`
 * makes it (open, the opened path and stat, read, close) took 0.23 to 0.27 ms of CPU instead
 * of 0.28 to 0.33 in isolation (3,000 reads of a SKILL.md, three runs each; end to end,
 * `get_skill` showed no difference out of the machine's noise).
 */
const readWhole = async (fd: number, size: number, limit: number): Promise<Buffer | number> => {
  const buffer = Buffer.alloc(Math.min(size, limit) + 1)
  let length = 0
  for (;;) {
    const wanted = buffer.length - length
    const { bytesRead } = await fsCalls.read(fd, buffer, length, wanted, length)
    if (bytesRead === 0) break
    length += bytesRead
    // A short read of a regular file is its end: no second read to be told so.
    if (bytesRead < wanted && length === size) break
    if (length > limit) return length
    if (length === buffer.length) break
  }
  return buffer.subarray(0, length)
}

/**
 * How a file of a skill is opened for reading: never through a final link; O_NONBLOCK: opening a
 * FIFO must not wait for a writer (it is refused once its stat is seen); O_NOCTTY: a terminal
 * device is never made the process's controlling terminal.
 */
const READ_REGULAR = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY

/** On Linux, the path the kernel actually opened (`/proc/self/fd/N`); null elsewhere. */
const openedPath = (fd: number) => fsCalls.readlink(`/proc/self/fd/${fd}`).catch(() => null)

/**
 * A folder of a skill, reached for reading its names and their stats. A folder found inside
 * the skill can be replaced by a link to elsewhere before it is read: read by its path, the
 * link's target would be listed under the folder's name. On Linux the folder is opened (not
 * following a final link), the kernel's path of what was opened must be the folder's real path,
 * and its names and stats are read through the open descriptor (`/proc/self/fd/N`), which
 * stays that very folder whatever happens to the path. Elsewhere it is read by its path.
 */
interface FolderAccess {
  /** The path to read the folder through. */
  readonly at: string
  readonly close: () => void
}

const PROC_FD = process.platform === "linux"

/**
 * Linux's `O_PATH` (Node does not export it): a descriptor that only names the file, opened
 * without reading it, whatever it is (a device is never opened for real).
 */
const O_PATH = 0o10000000

/**
 * The stat of what `target` (a real path inside the skill, a link's target) names, if the
 * kernel's path of it is still inside `base`: a folder on the way swapped for a link since
 * `target` was resolved would stat something elsewhere. Null when it is not. On Linux; by path
 * elsewhere (and without /proc).
 */
const statInside = async (base: string, target: string): Promise<Stats | null> => {
  if (!PROC_FD) return asyncFs.stat(target)
  let fd: number
  try {
    fd = await fsCalls.open(target, O_PATH | constants.O_NOFOLLOW)
  } catch {
    return null
  }
  try {
    const [opened, info] = await Promise.all([openedPath(fd), fsCalls.fstat(fd)])
    return opened === null || isInside(base, opened) ? info : null
  } catch {
    return null
  } finally {
    fsCallback.close(fd, () => undefined)
  }
}

/** A folder opened for reading, one that is not to be read, or why it could not be opened. */
type OpenedFolder =
  | { readonly _tag: "Open"; readonly access: FolderAccess }
  /** Gone, moved, replaced by a link, or not readable: read as empty, as before. */
  | { readonly _tag: "Skip" }
  /** Out of descriptors, an I/O error: the listing fails rather than leave the folder out. */
  | { readonly _tag: "Failed"; readonly reason: string }

const SKIP: OpenedFolder = { _tag: "Skip" }
/** Errors that say the folder is not (or no longer) one to read here. */
const SKIPPED_CODES = new Set(["ENOENT", "ENOTDIR", "ELOOP", "EACCES", "EPERM"])
const skippedError = (error: unknown): boolean => {
  const code = errorCode(error)
  return typeof code === "string" && SKIPPED_CODES.has(code)
}

/** How a walk reaches a folder: opens it (`openFolder`), or takes one opened already. */
type FolderOpener = () => Promise<OpenedFolder>

/** A folder opened and read ahead of its walk's visit (see `readAhead`), or as it was opened. */
type FolderAhead =
  | {
      readonly _tag: "Open"
      readonly access: FolderAccess
      /** Its names, sorted. */
      readonly names: Array<string>
      /** Its first page of entries (`WALK_PAGE` names), examined. */
      readonly first: Array<FolderEntry>
    }
  | Exclude<OpenedFolder, { readonly _tag: "Open" }>

/** The failure to give for a folder that cannot be read now (see `unreadableFolder`). */
type FailedFolder = (reason: string) => SkillUnreadable

/**
 * A folder its caller opened, shared with the walks it hands `opener` to: closed once the
 * caller (`release`) and every walk that opened it are done with it. A walk goes on after its
 * request is cancelled (see `folderRead`), and the caller's release runs at once then: closed
 * by the caller alone, the descriptor's number could name another folder by the time the walk
 * read through it.
 */
const sharedFolder = (
  access: FolderAccess,
): { readonly opener: FolderOpener; readonly release: () => void } => {
  let holders = 1
  const release = () => {
    holders -= 1
    if (holders === 0) access.close()
  }
  const opener: FolderOpener = () => {
    holders += 1
    return Promise.resolve({ _tag: "Open", access: { at: access.at, close: release } })
  }
  return { opener, release }
}

/**
 * The folder `real`, opened for reading (see `FolderAccess`). `within` is the folder's path
 * through its parent's open descriptor, when the parent was read that way: only the last name
 * is then looked up (and must not be a link), so the kernel's path need not be checked.
 */
const openFolder = async (real: string, within?: string): Promise<OpenedFolder> => {
  if (!PROC_FD) return { _tag: "Open", access: { at: real, close: () => undefined } }
  let fd: number
  try {
    fd = await fsCalls.open(within ?? real, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW)
  } catch (error) {
    return skippedError(error) ? SKIP : { _tag: "Failed", reason: describeIoError(error) }
  }
  const close = () => fsCallback.close(fd, () => undefined)
  if (within !== undefined) return { _tag: "Open", access: { at: `/proc/self/fd/${fd}`, close } }
  const opened = await openedPath(fd)
  if (opened === null) {
    // No /proc to read it through (some containers): by its path, as elsewhere.
    close()
    return { _tag: "Open", access: { at: real, close: () => undefined } }
  }
  // Another path: moved or swapped meanwhile (a removed folder's ends with " (deleted)").
  if (opened !== real) {
    close()
    return SKIP
  }
  return { _tag: "Open", access: { at: `/proc/self/fd/${fd}`, close } }
}

/**
 * The methods are `Effect.fnUntraced`, not `Effect.fn("SkillFiles.…")` as STYLE.md has it: they
 * run on every request, and nothing here consumes spans. A span around an effect that waits for
 * the file system cost 70 to 100 µs of the event loop per call in a micro-benchmark, with the
 * tracer on or off (`Effect.withSpan` copies the context and runs uninterruptible regions), and
 * `get_skill` makes four such calls: in process, with 16 requests in flight, one took 0.52 ms of
 * the event loop instead of 0.64 to 0.75 ms. What is lost: a logged defect's cause no longer
 * names these methods as the places it went through.
 */
export class SkillFiles extends Effect.Service<SkillFiles>()("skills-mcp/SkillFiles", {
  effect: Effect.gen(function* () {
    const { maxFileBytes } = yield* Settings

    /**
     * The skill folder's real path, checked on every use: it must still be inside its root's
     * real path, as discovery found it. A folder swapped for a link that leads elsewhere
     * between two catalog refreshes is refused, not followed.
     */
    const skillBase = (skill: SkillRef) =>
      Effect.flatMap(realPathNative(skill.dir), (base) => containedBase(skill, base))

    /** The skill folder's real path, given it is the real path of the folder now. */
    const containedBase = (
      skill: SkillRef,
      base: string | null,
    ): Effect.Effect<string, SkillUnreadable | PathEscape> => {
      if (base === null) {
        return Effect.fail(
          new SkillUnreadable({ skillId: skill.id, path: skill.dir, reason: "the skill folder is gone" }),
        )
      }
      if (!isInside(skill.rootReal, base))
        return Effect.fail(new PathEscape({ skillId: skill.id, requested: skill.dir }))
      return Effect.succeed(base)
    }

    /** Resolves `requested` inside the skill, or fails without revealing anything outside it. */
    const resolve = Effect.fnUntraced(function* (skill: SkillRef, requested: string) {
      const segments = yield* checkRelativePath(skill.id, requested)
      // The folder and the target are resolved at once. The target is joined to the folder as
      // named, not to its real path: with no `..` segment (refused above), both name the same file.
      const [dir, real] = yield* realPathsNative([skill.dir, path.join(skill.dir, ...segments)])
      const base = yield* containedBase(skill, dir ?? null)
      if (real !== null && real !== undefined) {
        if (!isInside(base, real)) return yield* new PathEscape({ skillId: skill.id, requested })
        const resolved: ResolvedPath = {
          real,
          base,
          relative: toPosix(path.relative(base, real).split(path.sep)),
        }
        return resolved
      }
      // Missing: say so only when the nearest existing ancestor is inside the skill and no
      // dangling link is involved, so nothing is revealed about paths outside it.
      for (let depth = segments.length - 1; depth >= 0; depth--) {
        const ancestor = yield* realPathNative(path.join(base, ...segments.slice(0, depth)))
        if (ancestor === null) continue
        if (!isInside(base, ancestor)) break
        const next = yield* lstatOrNull(path.join(ancestor, segments[depth] ?? ""))
        if (next !== null) break
        return yield* new FileNotFound({ skillId: skill.id, path: toPosix(segments) })
      }
      return yield* new PathEscape({ skillId: skill.id, requested })
    })

    /** Reads a file of the skill as bytes, within the size limit. */
    const readBytes = Effect.fnUntraced(function* (skill: SkillRef, requested: string) {
      return yield* readResolved(skill, yield* resolve(skill, requested), requested)
    })

    /**
     * Reads a file already resolved inside the skill. The open refuses a final link and, on
     * Linux, the open descriptor's path is checked again, so a path swapped since it was
     * resolved is still refused. With `found` (the file as a walk of the skill found it), the
     * opened file must also be that very file (device and inode), on every platform.
     */
    const readResolved = (skill: SkillRef, resolved: ResolvedPath, requested: string) =>
      Effect.map(readOpened(skill, resolved, requested), (read) => read.content)

    /** `readResolved`, with the fingerprint of the file as it was opened (before it was read). */
    const readOpened = (skill: SkillRef, resolved: ResolvedPath, requested: string, found?: Stats) => {
      const relative = resolved.relative
      const ioFailure = (error: unknown): SkillError =>
        errorCode(error) === "ENOENT"
          ? new FileNotFound({ skillId: skill.id, path: relative })
          : error instanceof PathEscape ||
              error instanceof FileTooLarge ||
              error instanceof FileNotFound ||
              error instanceof InvalidArgument ||
              error instanceof SkillUnreadable
            ? error
            : new SkillUnreadable({ skillId: skill.id, path: relative, reason: describeIoError(error) })
      return Effect.tryPromise({
        try: async (): Promise<{ readonly content: FileContent; readonly opened: Fingerprint }> => {
          const fd = await fsCalls.open(resolved.real, READ_REGULAR)
          try {
            const [opened, info] = await Promise.all([openedPath(fd), fsCalls.fstat(fd)])
            if (opened !== null && !isInside(resolved.base, opened)) {
              throw new PathEscape({ skillId: skill.id, requested })
            }
            if (found !== undefined && (info.dev !== found.dev || info.ino !== found.ino)) {
              throw new SkillUnreadable({
                skillId: skill.id,
                path: relative,
                reason: "it was replaced while the skill's files were being read; try again",
              })
            }
            if (info.isDirectory()) {
              throw new InvalidArgument({
                argument: "path",
                reason: `'${relative || "."}' is a folder, not a file`,
              })
            }
            if (!info.isFile()) {
              throw new InvalidArgument({
                argument: "path",
                reason: `'${relative}' is not a regular file (a pipe, socket or device is never read)`,
              })
            }
            if (info.size > maxFileBytes) {
              throw new FileTooLarge({
                skillId: skill.id,
                path: relative,
                size: info.size,
                limit: maxFileBytes,
              })
            }
            const bytes = await readWhole(fd, info.size, maxFileBytes)
            if (typeof bytes === "number") {
              throw new FileTooLarge({ skillId: skill.id, path: relative, size: bytes, limit: maxFileBytes })
            }
            const content: FileContent = {
              path: relative,
              size: bytes.length,
              mimeType: mimeTypeOf(relative, () => !isBinary(bytes)),
              bytes,
            }
            return { content, opened: fingerprintOf(info) }
          } finally {
            // Closed in the background: the answer does not wait for it (a read-only
            // descriptor's close reports nothing a caller could act on).
            fsCallback.close(fd, () => undefined)
          }
        },
        catch: ioFailure,
      })
    }

    /** Reads a text file of the skill; binary files are refused with their size and type. */
    const readText = Effect.fnUntraced(function* (skill: SkillRef, requested: string) {
      const file = yield* readBytes(skill, requested)
      if (isBinary(file.bytes)) {
        const mimeType = file.mimeType.startsWith("text/") ? "binary data" : file.mimeType
        return yield* new BinaryFile({ skillId: skill.id, path: file.path, size: file.size, mimeType })
      }
      const text: TextFile = {
        path: file.path,
        size: file.size,
        mimeType: file.mimeType,
        text: Buffer.from(file.bytes).toString("utf8"),
      }
      return text
    })

    /**
     * Sorted names of recently read large folders, valid while the folder's fingerprint holds:
     * paging through 100,000 entries reads and sorts the folder once per change, not once per
     * page. A large folder is first only marked (no fingerprint, no names); from its next read
     * on, its fingerprint is taken first and its names are kept, unless it changed so recently
     * that a change to come could leave the same timestamp. Any other folder is read without
     * a stat: one wait, not two.
     */
    const folderNames = new Map<
      string,
      { readonly fingerprint: Fingerprint | null; readonly names: Array<string> }
    >()

    /**
     * A folder that cannot be read now (out of descriptors, an I/O error): the listing fails
     * rather than leave the folder out.
     */
    const unreadableFolder = (skill: SkillRef, relative: string) => (reason: string) =>
      new SkillUnreadable({
        skillId: skill.id,
        path: relative || ".",
        reason: `cannot read the folder (${reason}); try again`,
      })

    /**
     * A folder read written with plain promises, as an effect: one fiber for the whole read,
     * not an effect per folder, listing and step. At 10,000 skills a `skills/get` then
     * allocated 133 KB instead of 160, and left 9 KB instead of 12 to the old generation (see
     * the README's Performance section). A `SkillUnreadable` it rejects with is the failure;
     * any other rejection is a defect. Once started, a read runs to its end (and closes the
     * folders it opened) even when its request is cancelled; a folder handed to it is shared
     * (see `sharedFolder`).
     */
    const folderRead = <A>(read: () => Promise<A>): Effect.Effect<A, SkillUnreadable> =>
      Effect.flatten(
        Effect.promise(
          (): Promise<Either.Either<A, SkillUnreadable>> =>
            read().then(Either.right, (error: unknown) =>
              error instanceof SkillUnreadable ? Either.left(error) : Promise.reject(error),
            ),
        ),
      )

    /**
     * The folder's names, sorted: none when it is gone or not readable (see `SKIPPED_CODES`).
     * Rejects with `failed`'s error when it cannot be read now.
     */
    const sortedNames = async (at: string, failed: FailedFolder): Promise<Array<string>> => {
      let names: Array<string>
      try {
        names = await fsCalls.readdir(at)
      } catch (error) {
        if (skippedError(error)) return []
        throw failed(describeIoError(error))
      }
      return names.sort()
    }

    const rememberNames = (real: string, info: Stats | null, names: Array<string>) => {
      if (names.length < CACHED_FOLDER_MIN) {
        folderNames.delete(real)
        return
      }
      if (!folderNames.has(real) && folderNames.size >= CACHED_FOLDERS) {
        folderNames.delete(folderNames.keys().next().value ?? "")
      }
      const settled = info !== null && Date.now() - info.mtimeMs > FOLDER_SETTLED_MS
      folderNames.set(
        real,
        settled ? { fingerprint: fingerprintOf(info), names } : { fingerprint: null, names: [] },
      )
    }

    /**
     * Runs `use` with a path that reaches the folder itself (see `FolderAccess`), or answers
     * `empty` when it is no longer there (moved, replaced by a link) or not readable. Rejects
     * with `failed`'s error when it cannot be opened now. The folder is closed however `use` ends.
     */
    const inFolder = async <A>(
      open: FolderOpener,
      empty: A,
      failed: FailedFolder,
      use: (at: string) => Promise<A>,
    ): Promise<A> => {
      const folder = await open()
      switch (folder._tag) {
        case "Skip":
          return empty
        case "Failed":
          throw failed(folder.reason)
        case "Open":
          try {
            return await use(folder.access.at)
          } finally {
            folder.access.close()
          }
      }
    }

    /** The names in one real folder (reached through `at`), sorted (see `sortedNames`). */
    const namesIn = async (real: string, at: string, failed: FailedFolder): Promise<Array<string>> => {
      const cached = folderNames.get(real)
      if (cached === undefined) {
        const names = await sortedNames(at, failed)
        rememberNames(real, null, names)
        return names
      }
      const info = await asyncFs.stat(at)
      if (info === null) return []
      if (cached.fingerprint !== null && sameFingerprint(cached.fingerprint, fingerprintOf(info))) {
        return cached.names
      }
      const names = await sortedNames(at, failed)
      rememberNames(real, info, names)
      return names
    }

    /**
     * Some entries of one real folder inside the skill: links resolved, and any that leave
     * the skill (or dangle) left out. Only the given names are examined, at most 16 at a time.
     */
    const examine = async (
      base: string,
      real: string,
      at: string,
      names: ReadonlyArray<string>,
    ): Promise<Array<FolderEntry>> => {
      const entries = await mapLimit(names, 16, (name) => examineEntry(base, real, at, name))
      return entries.filter((entry): entry is FolderEntry => entry !== null)
    }

    const examineEntry = async (
      base: string,
      real: string,
      at: string,
      name: string,
    ): Promise<FolderEntry | null> => {
      const named = childPath(real, name)
      const link = await asyncFs.lstat(childPath(at, name))
      if (link === null) return null
      let target = named
      let info: Stats | null = link
      if (link.isSymbolicLink()) {
        const resolved = await asyncFs.realpath(named)
        if (resolved === null || !isInside(base, resolved)) return null
        target = resolved
        info = await statInside(base, target)
      }
      if (info === null) return null
      if (info.isDirectory()) return { name, real: target, type: "directory", info }
      if (info.isFile()) return { name, real: target, type: "file", info }
      return null
    }

    /** The entries of one real folder, sorted by name, from `offset`, at most `limit`. */
    const entriesOf = (skill: SkillRef, resolved: ResolvedPath, offset: number, limit: number) => {
      const { base, real, relative } = resolved
      const failed = unreadableFolder(skill, relative)
      const none: { entries: Array<FolderEntry>; more: boolean } = { entries: [], more: false }
      return folderRead(() =>
        inFolder(
          () => openFolder(real),
          none,
          failed,
          async (at) => {
            const names = await namesIn(real, at, failed)
            const entries = await examine(base, real, at, names.slice(offset, offset + limit))
            return { entries, more: offset + limit < names.length }
          },
        ),
      )
    }

    /**
     * A folder opened and read ahead of its visit: its sorted names and its first page of
     * entries examined. A `Skip` or `Failed` folder is as `openFolder` answered. Rejects with
     * `failed`'s error when its names cannot be read; the folder is then closed.
     */
    const readAhead = async (
      base: string,
      folder: string,
      open: FolderOpener,
      failed: FailedFolder,
    ): Promise<FolderAhead> => {
      const opened = await open()
      if (opened._tag !== "Open") return opened
      try {
        const names = await namesIn(folder, opened.access.at, failed)
        const first = await examine(base, folder, opened.access.at, names.slice(0, WALK_PAGE))
        return { _tag: "Open", access: opened.access, names, first }
      } catch (error) {
        opened.access.close()
        throw error
      }
    }

    /**
     * Walks a folder of the skill depth-first in name order, calling `visit` for each entry
     * with its `/`-separated path; stops when `visit` answers false. Each real folder is read once.
     * Answers whether every entry was visited (false: `visit` stopped it, or folders nest too deep).
     *
     * The next few subfolders of a folder are read ahead while the walk is in an earlier one
     * (`LOOKAHEAD`), so a skill with `references/`, `scripts/` and `assets/` costs the waits for
     * one folder, not three. The visits stay in order, and a folder read ahead is used only by
     * the entry it was read for: one reached first another way (a link) is read as before.
     */
    const walk = (
      skill: SkillRef,
      base: string,
      real: string,
      relative: string,
      visit: (entry: FolderEntry, path: string) => boolean,
      /** How to reach `real` (by default, opened by its real path). */
      open: FolderOpener = () => openFolder(real),
    ): Effect.Effect<boolean, SkillUnreadable> =>
      folderRead(async () => {
        const visited = new Set<string>([real])
        let tooDeep = false
        const pathOf = (prefix: string, name: string) => (prefix === "" ? name : `${prefix}/${name}`)
        const go = async (
          folder: string,
          prefix: string,
          depth: number,
          ahead: Promise<FolderAhead>,
        ): Promise<boolean> => {
          const read = await ahead
          if (read._tag === "Skip") return true
          if (read._tag === "Failed") throw unreadableFolder(skill, prefix)(read.reason)
          const { access, names } = read
          const at = access.at
          const readEntry = (entry: FolderEntry) => {
            // A folder found here (not through a link) is opened through this one.
            const plain = entry.real === childPath(folder, entry.name)
            const inside = plain && at !== folder ? childPath(at, entry.name) : undefined
            const failed = unreadableFolder(skill, pathOf(prefix, entry.name))
            const reading = readAhead(base, entry.real, () => openFolder(entry.real, inside), failed)
            // Awaited when its folder is visited, or settled and closed if it never is.
            reading.catch(() => undefined)
            return reading
          }
          /** The page's subfolders, in order, and the next one to read ahead. */
          let queue: Array<FolderEntry> = []
          let nextAhead = 0
          const started = new Map<FolderEntry, Promise<FolderAhead>>()
          /** Reads ahead of folders the walk reached another way first. */
          const dropped: Array<Promise<FolderAhead>> = []
          const readNextAhead = () => {
            while (started.size < LOOKAHEAD && nextAhead < queue.length) {
              const entry = queue[nextAhead++] as FolderEntry
              if (!visited.has(entry.real)) started.set(entry, readEntry(entry))
            }
          }
          try {
            // A page at a time, so a walk that stops early never examines a whole huge folder.
            for (let start = 0; start < names.length; start += WALK_PAGE) {
              const entries =
                start === 0
                  ? read.first
                  : await examine(base, folder, at, names.slice(start, start + WALK_PAGE))
              // Read ahead only where the walk will go: not past its depth limit.
              queue =
                depth + 1 < MAX_LISTING_DEPTH ? entries.filter((entry) => entry.type === "directory") : []
              nextAhead = 0
              for (const entry of entries) {
                const entryPath = pathOf(prefix, entry.name)
                if (!visit(entry, entryPath)) return false
                if (entry.type !== "directory") continue
                if (visited.has(entry.real)) {
                  // Reached first another way (a link): its read ahead, if any, goes unused and
                  // leaves its place to the next folder.
                  const unused = started.get(entry)
                  if (unused !== undefined) {
                    started.delete(entry)
                    dropped.push(unused)
                    readNextAhead()
                  }
                  continue
                }
                if (depth + 1 >= MAX_LISTING_DEPTH) {
                  tooDeep = true
                  continue
                }
                visited.add(entry.real)
                const reading = started.get(entry) ?? readEntry(entry)
                started.delete(entry)
                readNextAhead()
                if (!(await go(entry.real, entryPath, depth + 1, reading))) return false
              }
            }
            return true
          } finally {
            // Folders read ahead and not visited are closed once their reads settle, and only
            // then this one: a read under way may still be opening a subfolder through it.
            if (started.size > 0 || dropped.length > 0)
              await Promise.all(
                [...started.values(), ...dropped].map((reading) =>
                  reading.then(
                    (left) => (left._tag === "Open" ? left.access.close() : undefined),
                    () => undefined,
                  ),
                ),
              )
            access.close()
          }
        }
        const finished = await go(
          real,
          relative,
          0,
          readAhead(base, real, open, unreadableFolder(skill, relative)),
        )
        return finished && !tooDeep
      })

    /** A folder of the skill, or a failure saying why the path is not one. */
    const folder = Effect.fnUntraced(function* (skill: SkillRef, requested: string) {
      const resolved = yield* resolve(skill, requested)
      const info = yield* statOrNull(resolved.real)
      if (info === null) return yield* new FileNotFound({ skillId: skill.id, path: resolved.relative })
      if (!info.isDirectory()) {
        return yield* new InvalidArgument({
          argument: "path",
          reason: `'${resolved.relative}' is a file, not a folder`,
        })
      }
      return resolved
    })

    /** Lists a folder of the skill recursively (files with sizes); stops at MAX_LISTING entries. */
    const list = Effect.fnUntraced(function* (skill: SkillRef, requested: string) {
      const resolved = yield* folder(skill, requested)
      const entries: Array<ListingEntry> = []
      const complete = yield* walk(
        skill,
        resolved.base,
        resolved.real,
        resolved.relative,
        (entry, entryPath) => {
          if (entries.length >= MAX_LISTING) return false
          entries.push(
            entry.type === "directory"
              ? { path: entryPath, type: "directory" }
              : { path: entryPath, type: "file", size: entry.info.size },
          )
          return true
        },
      )
      const listing: Listing = { path: resolved.relative, entries, truncated: !complete }
      return listing
    })

    /** The direct children of a folder of the skill, one page at a time. */
    const children = Effect.fnUntraced(function* (
      skill: SkillRef,
      requested: string,
      offset: number,
      limit: number,
    ) {
      const resolved = yield* folder(skill, requested)
      const { entries, more } = yield* entriesOf(skill, resolved, offset, limit)
      const prefix = resolved.relative === "" ? "" : `${resolved.relative}/`
      return {
        entries: entries.map(
          (entry): ListingEntry =>
            entry.type === "directory"
              ? { path: `${prefix}${entry.name}`, type: "directory" }
              : { path: `${prefix}${entry.name}`, type: "file", size: entry.info.size },
        ),
        more,
      }
    })

    /**
     * SHA-256 of file contents, keyed by path in the skill's real folder (`digestKey`) and valid
     * while the file's fingerprint holds: the fingerprint of the file as it was opened to be
     * hashed (the entry's own fields), and only once its modification time has settled
     * (FOLDER_SETTLED_MS), as for folder names: a file changed just now could change again and
     * keep its size and timestamp. Once a host has listed every skill, this holds an entry for
     * every file of every skill: keys and digests are single flat strings (`flatString`).
     */
    const digests = new Map<string, CachedDigest>()

    /**
     * A skill's files as the Skills extension would list them (path order), or why the
     * extension cannot serve the skill: over its limits (files per skill, bytes per skill), a
     * file over the file size limit, or folders too deep. Nothing is read or hashed.
     */
    const inventory = (skill: SkillRef) =>
      Effect.acquireUseRelease(
        Effect.map(openSkillFolder(skill), ({ base, access }) => ({
          base,
          folder: access === undefined ? undefined : sharedFolder(access),
        })),
        ({ base, folder }) => inventoryOf(skill, base, folder?.opener),
        ({ folder }) => Effect.sync(() => folder?.release()),
      )

    /**
     * The skill folder's real path (see `skillBase`) and, on Linux, the folder opened for its
     * walk: opened while its root's real path is resolved, its real path the kernel's path of
     * what was opened, so the walk starts one round trip to the thread pool sooner than with a
     * separate open. Where it cannot be opened, the real path alone (the walk then finds it
     * unreadable, as a listing would).
     */
    const openSkillFolder = (
      skill: SkillRef,
    ): Effect.Effect<
      { readonly base: string; readonly access?: FolderAccess },
      SkillUnreadable | PathEscape
    > =>
      PROC_FD
        ? Effect.flatMap(
            Effect.promise(async () => {
              const fd = await fsCalls
                .open(skill.dir, constants.O_RDONLY | constants.O_DIRECTORY)
                .catch(() => null)
              if (fd === null) return { base: await asyncFs.realpath(skill.dir) }
              const close = () => fsCallback.close(fd, () => undefined)
              const opened = await openedPath(fd)
              if (opened === null) {
                close()
                return { base: await asyncFs.realpath(skill.dir) }
              }
              if (opened.endsWith(" (deleted)")) {
                // Removed since it was opened: the folder is gone.
                close()
                return { base: null }
              }
              const access: FolderAccess = { at: `/proc/self/fd/${fd}`, close }
              return { base: opened, access }
            }),
            ({ base, access }: { readonly base: string | null; readonly access?: FolderAccess }) =>
              containedBase(skill, base).pipe(
                Effect.map((contained) =>
                  access === undefined ? { base: contained } : { base: contained, access },
                ),
                Effect.tapError(() => Effect.sync(() => access?.close())),
              ),
          )
        : Effect.map(skillBase(skill), (base) => ({ base }))

    const inventoryOf = Effect.fnUntraced(function* (
      skill: SkillRef,
      base: string,
      /** How to reach the skill folder, when it is open already (see `openSkillFolder`). */
      open: FolderOpener | undefined,
    ) {
      const files: Array<{ readonly path: string; readonly real: string; readonly info: Stats }> = []
      let total = 0
      let problem: string | undefined
      const unservable: Array<WithheldFile> = []
      const complete = yield* walk(
        skill,
        base,
        base,
        "",
        (entry, entryPath) => {
          if (entry.type === "directory") return true
          const uriProblem = fileUriProblem(entryPath)
          if (uriProblem !== undefined) {
            unservable.push({ path: entryPath, reason: uriProblem })
            return true
          }
          if (files.length >= MAX_SKILL_FILES) {
            problem = `it has more than ${MAX_SKILL_FILES} files`
            return false
          }
          if (entry.info.size > maxFileBytes) {
            problem = `'${entryPath}' is ${entry.info.size} bytes, over the ${maxFileBytes}-byte file limit (--max-file-bytes)`
            return false
          }
          total += entry.info.size
          if (total > MAX_SKILL_BYTES) {
            problem = `its files add up to more than ${MAX_SKILL_BYTES} bytes (16 MiB)`
            return false
          }
          files.push({ path: entryPath, real: entry.real, info: entry.info })
          return true
        },
        open,
      )
      if (problem === undefined && !complete) {
        problem = `its folders nest deeper than ${MAX_LISTING_DEPTH} levels`
      }
      if (unservable.length === 0) withheld.delete(skill.dir)
      else withheld.set(skill.dir, unservable)
      return { base, files, ...(problem === undefined ? {} : { problem }) }
    })

    /** Skills found unservable over the extension, by folder, with the reason (see `leftOut`). */
    const leftOut = new Map<string, string>()
    /** Files left out of skills' manifests, by skill folder (see `fileUriProblem`). */
    const withheld = new Map<string, ReadonlyArray<WithheldFile>>()
    const noteLeftOut = (skill: SkillRef, problem: string | undefined) => {
      if (problem === undefined) leftOut.delete(skill.dir)
      else leftOut.set(skill.dir, problem)
    }

    /**
     * Every file of a skill with its size and `sha256:` digest (see `inventory` for when the
     * extension cannot serve it, and `FRONTMATTER_FIRST`). Digests are computed on first use
     * and cached by fingerprint (see `digests`). SKILL.md's frontmatter always comes from the
     * very bytes that were hashed: parsed from them when SKILL.md is read; when its digest is
     * known, it is the catalog's (`indexed`) only if, when those bytes were hashed, they parsed
     * to the same frontmatter as the catalog's and had the fingerprint the catalog has (the
     * catalog's fingerprint is its stat of the file, taken apart from its read). Otherwise
     * SKILL.md is read again.
     */
    const manifest = Effect.fnUntraced(function* (skill: SkillRef & Partial<IndexedSkillMd>) {
      const { base, files, problem } = yield* inventory(skill)
      noteLeftOut(skill, problem)
      if (problem !== undefined) return yield* new SkillNotPublished({ skillId: skill.id, reason: problem })
      if (digests.size > MAX_CACHED_DIGESTS) digests.clear()
      let frontmatter: ParsedFrontmatter | undefined
      const indexed: IndexedSkillMd | undefined =
        skill.fingerprint !== undefined && skill.frontmatter !== undefined
          ? { fingerprint: skill.fingerprint, frontmatter: skill.frontmatter }
          : undefined
      /** A file's digest known for its current fingerprint (SKILL.md's only with its frontmatter: above). */
      const known = (file: (typeof files)[number]) => {
        const cached = digests.get(digestKey(base, file.path))
        if (cached === undefined || !sameFingerprint(cached, fingerprintOf(file.info))) return undefined
        const usable =
          file.path !== SKILL_FILE ||
          (indexed !== undefined &&
            cached.sameAsIndexed === indexed.frontmatter &&
            sameFingerprint(indexed.fingerprint, cached))
        return usable ? cached.digest : undefined
      }
      // Files are read eight at a time, but a fiber per file costs more than the read when only
      // SKILL.md is to be read (every other digest known): then they are taken in turn. A file
      // whose digest is known is answered at once, without a generator of its own: with one, a
      // `skills/get` of a skill listed before left 9 KB to the old generation instead of 3.
      const knownDigests = files.map(known)
      const toRead = knownDigests.filter((digest) => digest === undefined).length
      const entries = yield* Effect.forEach(
        files,
        (file, index) => {
          const digestKnown = knownDigests[index]
          if (digestKnown !== undefined) {
            if (file.path === SKILL_FILE) frontmatter = indexed?.frontmatter
            return Effect.succeed({ path: file.path, size: file.info.size, digest: digestKnown })
          }
          return Effect.gen(function* () {
            // Before the open: a file written while it is read has a later time than this.
            const readAt = Date.now()
            // Read where the walk just found it (inside the skill), checked again as it is opened.
            const { content, opened } = yield* readOpened(
              skill,
              { real: file.real, base, relative: file.path },
              file.path,
              file.info,
            )
            const digest = flatString("sha256:", sha256Hex(content.bytes))
            if (file.path === SKILL_FILE) {
              if (!beginsWithFrontmatter(content.bytes)) {
                noteLeftOut(skill, FRONTMATTER_FIRST)
                return yield* new SkillNotPublished({ skillId: skill.id, reason: FRONTMATTER_FIRST })
              }
              const parsed = parseSkillText(
                path.join(skill.dir, SKILL_FILE),
                Buffer.from(content.bytes).toString("utf8"),
              )
              if (Either.isLeft(parsed)) return yield* parsed.left
              frontmatter = parsed.right
            }
            const sameAsIndexed =
              file.path === SKILL_FILE &&
              frontmatter !== undefined &&
              indexed !== undefined &&
              sameFingerprint(indexed.fingerprint, opened) &&
              sameParse(frontmatter, indexed.frontmatter)
                ? indexed.frontmatter
                : undefined
            if (readAt - opened.mtimeMs > FOLDER_SETTLED_MS)
              // One literal of one shape: spreading `opened` into it gave each entry a hidden class
              // of its own (about 400 bytes more per file, in a heap snapshot).
              digests.set(digestKey(base, file.path), {
                dev: opened.dev,
                ino: opened.ino,
                size: opened.size,
                mtimeMs: opened.mtimeMs,
                digest,
                sameAsIndexed,
              })
            return { path: file.path, size: content.size, digest }
          })
        },
        { concurrency: toRead > 1 ? 8 : 1 },
      )
      if (frontmatter === undefined) {
        return yield* new SkillUnreadable({
          skillId: skill.id,
          path: SKILL_FILE,
          reason: "SKILL.md is missing",
        })
      }
      const result: Manifest = { files: entries, frontmatter }
      return result
    })

    /** A folder's listing or a file's text, whichever the path names. */
    const read = Effect.fnUntraced(function* (skill: SkillRef, requested: string) {
      const resolved = yield* resolve(skill, requested)
      const info = yield* statOrNull(resolved.real)
      if (info?.isDirectory() === true) {
        return { _tag: "Listing", listing: yield* list(skill, requested) } as const
      }
      return { _tag: "File", file: yield* readText(skill, requested) } as const
    })

    /**
     * A skill's SKILL.md, read now: its current name, description and body. SKILL.md is text
     * by contract: bytes that are not UTF-8 become U+FFFD (as they did when it was indexed).
     */
    const loadSkill = Effect.fnUntraced(function* (skill: SkillRef) {
      const file = yield* readBytes(skill, SKILL_FILE)
      const parsed = yield* parseSkillText(
        path.join(skill.dir, SKILL_FILE),
        Buffer.from(file.bytes).toString("utf8"),
      )
      return {
        name: parsed.fields.name,
        description: parsed.fields.description,
        body: parsed.body.replace(/^(?:[ \t]*\r?\n)+/, ""),
        frontmatter: parsed,
      }
    })

    /** Why the Skills extension cannot serve a skill (limits, SKILL.md's first bytes), if it cannot. */
    const publicationProblem = Effect.fnUntraced(function* (skill: SkillRef) {
      const found = yield* inventory(skill)
      const head = found.problem === undefined ? yield* readBytes(skill, SKILL_FILE) : undefined
      const problem =
        found.problem ??
        (head === undefined || beginsWithFrontmatter(head.bytes) ? undefined : FRONTMATTER_FIRST)
      noteLeftOut(skill, problem)
      return problem
    })

    return {
      resolve,
      readBytes,
      readText,
      list,
      children,
      read,
      loadSkill,
      manifest,
      publicationProblem,
      /**
       * Skills found unservable over the extension (over its limits, SKILL.md not beginning
       * with `---`) when they were last listed, fetched or checked: skill folder -> reason.
       * These show only once looked at: the catalog never walks a skill's files by itself.
       */
      leftOut: (): ReadonlyMap<string, string> => leftOut,
      /**
       * Files left out of skills' manifests because no `skill://` URI reads them back (see
       * `fileUriProblem`), by skill folder, as found when each skill was last listed or fetched.
       */
      withheld: (): ReadonlyMap<string, ReadonlyArray<WithheldFile>> => withheld,
      maxFileBytes,
    } as const
  }),
}) {}
