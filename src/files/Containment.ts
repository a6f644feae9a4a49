/**
 * Containment: whether a requested path names something inside a skill. A path is refused
 * before any disk access when it is absolute, contains NUL, an overlong name or a `..` segment
 * (in any spelling); then its kernel realpath must lie inside the skill folder's realpath, and
 * that folder must still lie inside its root (docs/SECURITY.md, "Containment" and "Swaps").
 */
import * as path from "node:path"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { FileNotFound, InvalidArgument, PathEscape, SkillUnreadable } from "../Errors.js"
import type { FsShape } from "../platform/Fs.js"
import { isInside, toPosix } from "../platform/Paths.js"
import { fileUri, MANIFEST_SEGMENT, parseSkillUri } from "../skills/Uris.js"

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

export interface ResolvedPath {
  /** Real path on disk, inside the skill's real folder. */
  readonly real: string
  /** The skill folder's real path. */
  readonly base: string
  /** Path relative to the skill folder, `/`-separated; "" for the folder itself. */
  readonly relative: string
}

const MAX_SEGMENT_BYTES = 255
const MAX_PATH_CHARS = 4096

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
  const invalid = (reason: string) => Either.left(new InvalidArgument({ argument: "path", reason }))
  if (requested.length > MAX_PATH_CHARS) return invalid(`longer than ${MAX_PATH_CHARS} characters`)
  if (requested.includes("\0") || decodePercent(requested).includes("\0"))
    return invalid("contains a NUL byte")
  if (/^[/\\]/.test(requested) || /^[a-zA-Z]:/.test(requested) || path.isAbsolute(requested)) return outside()
  const segments = requested.split(/[/\\]+/).filter((segment) => segment !== "" && segment !== ".")
  for (const segment of segments) {
    const decoded = decodePercent(segment)
    if (segment === ".." || decoded === ".." || decoded.split(/[/\\]/).includes("..")) return outside()
    if (Buffer.byteLength(segment) > MAX_SEGMENT_BYTES) {
      return invalid(`a name is longer than ${MAX_SEGMENT_BYTES} bytes`)
    }
  }
  return Either.right(segments)
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

/**
 * The skill folder's real path, given `base`, the real path of the folder now (null: gone). It
 * must still be inside its root's real path, as discovery found it: a folder swapped for a link
 * that leads elsewhere between two catalog refreshes is refused, not followed.
 */
const containedBase = (
  skill: SkillRef,
  base: string | null,
): Either.Either<string, SkillUnreadable | PathEscape> => {
  if (base === null) {
    return Either.left(
      new SkillUnreadable({ skillId: skill.id, path: skill.dir, reason: "the skill folder is gone" }),
    )
  }
  if (!isInside(skill.rootReal, base))
    return Either.left(new PathEscape({ skillId: skill.id, requested: skill.dir }))
  return Either.right(base)
}

/**
 * Whether what was opened, at the kernel's path `opened`, is inside `base`; where the kernel
 * cannot say (null: no /proc), the path checks made before opening stand.
 */
export const openedInside = (base: string, opened: string | null): boolean =>
  opened === null || isInside(base, opened)

/** The kernel's realpath of `target`, or null when it cannot be resolved. */
const realpath = (fs: FsShape, target: string) => Effect.promise(async () => fs.async.realpath(target))

/** The skill folder's real path, checked (see `containedBase`). */
export const skillBase = (fs: FsShape, skill: SkillRef) =>
  Effect.flatMap(realpath(fs, skill.dir), (base) => containedBase(skill, base))

/**
 * The same, resolved with a synchronous call: for a manifest kept from an earlier call, whose
 * check is a few stats, a wait on the thread pool would cost more than the call itself.
 */
export const skillBaseNow = (fs: FsShape, skill: SkillRef) =>
  Effect.suspend(() => containedBase(skill, fs.sync.realpath(skill.dir)))

/**
 * Resolves `requested` inside the skill, or fails without revealing anything outside it. With
 * `now`, its calls are synchronous (for SKILL.md, read on every get_skill: two system calls cost
 * less than two waits for the thread pool).
 */
export const resolveIn = (fs: FsShape, skill: SkillRef, requested: string, now = false) =>
  Effect.gen(function* () {
    const segments = yield* checkRelativePath(skill.id, requested)
    const port = now ? fs.sync : fs.async
    // The folder and the target are resolved at once, in one wait. The target is joined to the
    // folder as named, not to its real path: with no `..` segment (refused above), both name the
    // same file.
    const [dir, target] = yield* Effect.promise(() =>
      Promise.all([
        port.realpath(skill.dir),
        segments.length === 0 ? undefined : port.realpath(path.join(skill.dir, ...segments)),
      ]),
    )
    const base = yield* containedBase(skill, dir)
    const real = target === undefined ? base : target
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
      const ancestor = depth === 0 ? base : yield* realpath(fs, path.join(base, ...segments.slice(0, depth)))
      if (ancestor === null) continue
      if (!isInside(base, ancestor)) break
      const next = yield* Effect.promise(async () =>
        fs.async.lstat(path.join(ancestor, segments[depth] ?? "")),
      )
      if (next !== null) break
      return yield* new FileNotFound({ skillId: skill.id, path: toPosix(segments) })
    }
    return yield* new PathEscape({ skillId: skill.id, requested })
  })
