/**
 * SkillFiles: every read of a file inside a skill. A requested path is refused before any
 * disk access when it is absolute, contains NUL or a `..` segment (in any spelling); then its
 * kernel realpath must lie inside the skill folder's realpath. Files are opened without
 * following a final symbolic link and checked again through the open descriptor, so a path
 * swapped after the check is still refused. Size is checked on the open file before reading.
 */
import { constants } from "node:fs"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { Effect, Either } from "effect"
import mime from "mime"
import { SKILL_FILE } from "./Discovery.js"
import type { SkillError } from "./Errors.js"
import {
  BinaryFile,
  FileNotFound,
  FileTooLarge,
  InvalidArgument,
  PathEscape,
  SkillUnreadable,
} from "./Errors.js"
import { describeIoError, parseSkillText } from "./Frontmatter.js"
import { isInside, lstatOrNull, readDirOrNull, realPathNative, statOrNull, toPosix } from "./Paths.js"
import { Settings } from "./Settings.js"

/** The part of a skill SkillFiles needs. */
export interface SkillRef {
  readonly id: string
  readonly dir: string
}

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
  if (requested.includes("\0") || decodePercent(requested).includes("\0")) return outside()
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

/** Source files skills ship, which the MIME database misses or maps to media (`.ts`). */
const SOURCE_TYPES: Readonly<Record<string, string>> = {
  ".md": "text/markdown",
  ".markdown": "text/markdown",
  ".py": "text/x-python",
  ".ts": "text/x-typescript",
  ".mts": "text/x-typescript",
  ".cts": "text/x-typescript",
  ".tsx": "text/x-typescript",
  ".jsx": "text/javascript",
  ".rb": "text/x-ruby",
  ".go": "text/x-go",
  ".rs": "text/x-rust",
  ".ps1": "text/x-powershell",
  ".sql": "application/sql",
}

export const mimeTypeOf = (file: string): string =>
  SOURCE_TYPES[path.extname(file).toLowerCase()] ??
  mime.getType(path.basename(file)) ??
  "application/octet-stream"

/** On Linux, the path the kernel actually opened (`/proc/self/fd/N`); null elsewhere. */
const openedPath = (fd: number) => fs.readlink(`/proc/self/fd/${fd}`).catch(() => null)

export class SkillFiles extends Effect.Service<SkillFiles>()("skills-mcp/SkillFiles", {
  effect: Effect.gen(function* () {
    const { maxFileBytes } = yield* Settings

    const skillBase = (skill: SkillRef) =>
      Effect.flatMap(realPathNative(skill.dir), (base) =>
        base === null
          ? Effect.fail(
              new SkillUnreadable({ skillId: skill.id, path: skill.dir, reason: "the skill folder is gone" }),
            )
          : Effect.succeed(base),
      )

    /** Resolves `requested` inside the skill, or fails without revealing anything outside it. */
    const resolve = Effect.fn("SkillFiles.resolve")(function* (skill: SkillRef, requested: string) {
      const segments = yield* checkRelativePath(skill.id, requested)
      const base = yield* skillBase(skill)
      const target = path.join(base, ...segments)
      const real = yield* realPathNative(target)
      if (real !== null) {
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
    const readBytes = Effect.fn("SkillFiles.readBytes")(function* (skill: SkillRef, requested: string) {
      const resolved = yield* resolve(skill, requested)
      const relative = resolved.relative
      const ioFailure = (error: unknown): SkillError =>
        typeof error === "object" && error !== null && "code" in error && error.code === "ENOENT"
          ? new FileNotFound({ skillId: skill.id, path: relative })
          : error instanceof PathEscape || error instanceof FileTooLarge || error instanceof FileNotFound
            ? error
            : new SkillUnreadable({ skillId: skill.id, path: relative, reason: describeIoError(error) })
      return yield* Effect.tryPromise({
        try: async (): Promise<FileContent> => {
          const handle = await fs.open(resolved.real, constants.O_RDONLY | constants.O_NOFOLLOW)
          try {
            const opened = await openedPath(handle.fd)
            if (opened !== null && !isInside(resolved.base, opened)) {
              throw new PathEscape({ skillId: skill.id, requested })
            }
            const info = await handle.stat()
            if (info.isDirectory()) throw Object.assign(new Error("is a folder"), { code: "EISDIR" })
            if (info.size > maxFileBytes) {
              throw new FileTooLarge({
                skillId: skill.id,
                path: relative,
                size: info.size,
                limit: maxFileBytes,
              })
            }
            const buffer = Buffer.alloc(Math.min(info.size, maxFileBytes) + 1)
            let length = 0
            for (;;) {
              const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length)
              if (bytesRead === 0) break
              length += bytesRead
              if (length > maxFileBytes) {
                throw new FileTooLarge({
                  skillId: skill.id,
                  path: relative,
                  size: length,
                  limit: maxFileBytes,
                })
              }
              if (length === buffer.length) break
            }
            return {
              path: relative,
              size: length,
              mimeType: mimeTypeOf(relative),
              bytes: buffer.subarray(0, length),
            }
          } finally {
            await handle.close()
          }
        },
        catch: ioFailure,
      })
    })

    /** Reads a text file of the skill; binary files are refused with their size and type. */
    const readText = Effect.fn("SkillFiles.readText")(function* (skill: SkillRef, requested: string) {
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
     * Lists a folder of the skill recursively (files with sizes), never listing a link that
     * leaves the skill; stops at MAX_LISTING entries.
     */
    const list = Effect.fn("SkillFiles.list")(function* (skill: SkillRef, requested: string) {
      const resolved = yield* resolve(skill, requested)
      const entries: Array<ListingEntry> = []
      let truncated = false
      const visited = new Set<string>()
      const walk = (real: string, relative: string, depth: number): Effect.Effect<void> =>
        Effect.gen(function* () {
          if (visited.has(real) || depth > MAX_LISTING_DEPTH) return
          visited.add(real)
          const dirents = yield* readDirOrNull(real)
          if (dirents === null) return
          dirents.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
          for (const dirent of dirents) {
            if (entries.length >= MAX_LISTING) {
              truncated = true
              return
            }
            const childRelative = relative === "" ? dirent.name : `${relative}/${dirent.name}`
            let childReal = path.join(real, dirent.name)
            if (dirent.isSymbolicLink()) {
              const target = yield* realPathNative(childReal)
              if (target === null || !isInside(resolved.base, target)) continue
              childReal = target
            }
            const info = yield* statOrNull(childReal)
            if (info === null) continue
            if (info.isDirectory()) {
              entries.push({ path: childRelative, type: "directory" })
              yield* walk(childReal, childRelative, depth + 1)
            } else if (info.isFile()) {
              entries.push({ path: childRelative, type: "file", size: info.size })
            }
          }
        })
      const info = yield* statOrNull(resolved.real)
      if (info === null) return yield* new FileNotFound({ skillId: skill.id, path: resolved.relative })
      if (!info.isDirectory()) {
        return yield* new InvalidArgument({
          argument: "path",
          reason: `'${resolved.relative}' is a file, not a folder`,
        })
      }
      yield* walk(resolved.real, resolved.relative, 0)
      const listing: Listing = { path: resolved.relative, entries, truncated }
      return listing
    })

    /** A folder's listing or a file's text, whichever the path names. */
    const read = Effect.fn("SkillFiles.read")(function* (skill: SkillRef, requested: string) {
      const resolved = yield* resolve(skill, requested)
      const info = yield* statOrNull(resolved.real)
      if (info?.isDirectory() === true) {
        return { _tag: "Listing", listing: yield* list(skill, requested) } as const
      }
      return { _tag: "File", file: yield* readText(skill, requested) } as const
    })

    /** A skill's SKILL.md, read now: its current name, description and body. */
    const loadSkill = Effect.fn("SkillFiles.loadSkill")(function* (skill: SkillRef) {
      const file = yield* readText(skill, SKILL_FILE)
      const parsed = yield* parseSkillText(path.join(skill.dir, SKILL_FILE), file.text)
      return {
        name: parsed.fields.name,
        description: parsed.fields.description,
        body: parsed.body.replace(/^(?:[ \t]*\r?\n)+/, ""),
        frontmatter: parsed,
      }
    })

    return { resolve, readBytes, readText, list, read, loadSkill, maxFileBytes } as const
  }),
}) {}
