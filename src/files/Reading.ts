/**
 * Reading: one regular file of a skill, already resolved inside it (Containment.ts), read whole
 * within the size limit. The open refuses a final link, never waits for a FIFO and never takes a
 * terminal (Fs `contained.openFile`); on Linux the path the kernel opened is checked again, so a
 * path swapped since it was resolved is still refused (unless the file opened is, by its stat, the
 * very file a walk of the skill's folders just found: see `readResolved`); the open file's type
 * and size are checked before a byte is read.
 */
import type { Stats } from "node:fs"
import * as Effect from "effect/Effect"
import type { SkillError } from "../Errors.js"
import {
  BinaryFile,
  FileNotFound,
  FileTooLarge,
  InvalidArgument,
  PathEscape,
  SkillUnreadable,
} from "../Errors.js"
import type { FsPort, FsShape, OpenFile, SyncFsPort } from "../platform/Fs.js"
import { describeIoError, errorCode } from "../platform/Fs.js"
import type { Fingerprint } from "../platform/Paths.js"
import { fingerprintOf, sameFingerprint } from "../platform/Paths.js"
import type { ResolvedPath, SkillRef } from "./Containment.js"
import { openedInside } from "./Containment.js"
import { mimeTypeOf } from "./MimeTypes.js"

export interface FileContent {
  readonly path: string
  readonly size: number
  readonly bytes: Uint8Array
}

export interface TextFile {
  readonly path: string
  readonly size: number
  readonly mimeType: string
  readonly text: string
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

/** Whether a read of `bytesRead` bytes, out of `wanted`, ends a read of a `size`-byte file. */
const lastRead = (bytesRead: number, wanted: number, length: number, size: number, capacity: number) =>
  // A short read that reaches the size the stat gave is the end: no second read to be told so.
  bytesRead === 0 || length === capacity || (bytesRead < wanted && length === size)

/**
 * The bytes of an open regular file of `size` bytes (as its stat said), read from its start; or,
 * when it holds more than `limit` bytes (it grew since), how many were read.
 */
const readWhole = async (port: FsPort, fd: number, size: number, limit: number): Promise<Buffer | number> => {
  const buffer = Buffer.alloc(Math.min(size, limit) + 1)
  let length = 0
  for (;;) {
    const wanted = buffer.length - length
    const bytesRead = await port.read(fd, buffer, length, wanted, length)
    length += bytesRead
    if (lastRead(bytesRead, wanted, length, size, buffer.length)) break
  }
  return length > limit ? length : buffer.subarray(0, length)
}

/** `readWhole`, synchronous; into `scratch` when it has room (see `readResolvedNow`). */
const readWholeNow = (
  port: SyncFsPort,
  fd: number,
  size: number,
  limit: number,
  scratch: Buffer | undefined,
): Buffer | number => {
  const capacity = Math.min(size, limit) + 1
  const buffer =
    scratch !== undefined && scratch.length >= capacity
      ? scratch.subarray(0, capacity)
      : Buffer.alloc(capacity)
  let length = 0
  for (;;) {
    const wanted = buffer.length - length
    const bytesRead = port.read(fd, buffer, length, wanted, length)
    length += bytesRead
    if (lastRead(bytesRead, wanted, length, size, buffer.length)) break
  }
  return length > limit ? length : buffer.subarray(0, length)
}

/** The refusals a read throws, given as they are; anything else is an I/O error of the file. */
const isRefusal = (error: unknown): error is SkillError =>
  error instanceof PathEscape ||
  error instanceof FileTooLarge ||
  error instanceof InvalidArgument ||
  error instanceof SkillUnreadable

/** Whether a read's failure is already a SkillError (a refusal, or a file not found). */
export const isSkillError = (error: unknown): error is SkillError =>
  isRefusal(error) || error instanceof FileNotFound

/** What a failed read of `relative` is, as the client sees it. */
const asSkillError =
  (skill: SkillRef, relative: string) =>
  (error: unknown): SkillError =>
    errorCode(error) === "ENOENT"
      ? new FileNotFound({ skillId: skill.id, path: relative })
      : isRefusal(error)
        ? error
        : new SkillUnreadable({ skillId: skill.id, path: relative, reason: describeIoError(error) })

/**
 * What a read checks of the file it opened, before a byte is read (see `readResolved`); throws
 * the refusal.
 */
const checkOpened = (
  skill: SkillRef,
  resolved: ResolvedPath,
  requested: string,
  maxFileBytes: number,
  { info, opened }: OpenFile,
  found: Fingerprint | undefined,
) => {
  const relative = resolved.relative
  const refuse = (reason: string) => new InvalidArgument({ argument: "path", reason })
  if (!openedInside(resolved.base, opened)) throw new PathEscape({ skillId: skill.id, requested })
  if (found !== undefined && (info.dev !== found.dev || info.ino !== found.ino)) {
    throw new SkillUnreadable({
      skillId: skill.id,
      path: relative,
      reason: "it was replaced while the skill's files were being read; try again",
    })
  }
  if (info.isDirectory()) throw refuse(`'${relative || "."}' is a folder, not a file`)
  if (!info.isFile())
    throw refuse(`'${relative}' is not a regular file (a pipe, socket or device is never read)`)
  if (info.size > maxFileBytes)
    throw new FileTooLarge({ skillId: skill.id, path: relative, size: info.size, limit: maxFileBytes })
}

/** The file's content, from what `readWhole` read (a number: it grew past the limit). */
const contentOf = (
  skill: SkillRef,
  relative: string,
  maxFileBytes: number,
  bytes: Buffer | number,
): FileContent => {
  if (typeof bytes === "number")
    throw new FileTooLarge({ skillId: skill.id, path: relative, size: bytes, limit: maxFileBytes })
  return { path: relative, size: bytes.length, bytes }
}

/** Whether `info` is exactly the file found (`found`): then its kernel path need not be read. */
const knownAs = (found: Fingerprint | undefined) =>
  found === undefined ? undefined : (info: Stats) => sameFingerprint(fingerprintOf(info), found)

/**
 * Reads a file resolved inside the skill, within `maxFileBytes`, with the stat of the file as it
 * was opened (before it was read); rejects with a SkillError. With `found` (the file as a walk of
 * the skill found it, through the skill's folders), the opened file must also be that very file
 * (device and inode), on every platform; when it is still exactly as found (size, modification
 * and change times too), it is that file inside the skill, and the kernel's path of it is not
 * read.
 */
export const readResolved =
  (fs: FsShape, maxFileBytes: number) =>
  async (
    skill: SkillRef,
    resolved: ResolvedPath,
    requested: string,
    found?: Fingerprint,
  ): Promise<{ readonly content: FileContent; readonly opened: Stats }> => {
    try {
      const open = await fs.contained.openFile(resolved.real, knownAs(found))
      try {
        checkOpened(skill, resolved, requested, maxFileBytes, open, found)
        const bytes = await readWhole(fs.async, open.fd, open.info.size, maxFileBytes)
        return { content: contentOf(skill, resolved.relative, maxFileBytes, bytes), opened: open.info }
      } finally {
        fs.contained.closeLater(open.fd)
      }
    } catch (error) {
      throw asSkillError(skill, resolved.relative)(error)
    }
  }

/**
 * `readResolved` with synchronous calls (Fs `containedNow`), for loops over many small files;
 * throws the SkillError. With `scratch`, a file that fits is read into it: its bytes are then
 * good only until the next read into it.
 */
export const readResolvedNow =
  (fs: FsShape, maxFileBytes: number) =>
  (
    skill: SkillRef,
    resolved: ResolvedPath,
    requested: string,
    found?: Fingerprint,
    scratch?: Buffer,
  ): { readonly content: FileContent; readonly opened: Stats } => {
    try {
      const open = fs.containedNow.openFile(resolved.real, knownAs(found))
      try {
        checkOpened(skill, resolved, requested, maxFileBytes, open, found)
        const bytes = readWholeNow(fs.sync, open.fd, open.info.size, maxFileBytes, scratch)
        return { content: contentOf(skill, resolved.relative, maxFileBytes, bytes), opened: open.info }
      } finally {
        fs.containedNow.closeLater(open.fd)
      }
    } catch (error) {
      throw asSkillError(skill, resolved.relative)(error)
    }
  }

/** `readResolved` (with `now`, `readResolvedNow`) as an effect. */
export const fileReader = (fs: FsShape, maxFileBytes: number, now = false) => {
  const read = readResolved(fs, maxFileBytes)
  const readNow = readResolvedNow(fs, maxFileBytes)
  return (
    skill: SkillRef,
    resolved: ResolvedPath,
    requested: string,
    found?: Fingerprint,
  ): Effect.Effect<{ readonly content: FileContent; readonly opened: Stats }, SkillError> =>
    now
      ? Effect.try({
          try: () => readNow(skill, resolved, requested, found),
          catch: asSkillError(skill, resolved.relative),
        })
      : Effect.tryPromise({
          try: () => read(skill, resolved, requested, found),
          catch: asSkillError(skill, resolved.relative),
        })
}

/**
 * Whether a file is binary, and its MIME type: by its extension, else by whether it is text (one
 * check of its bytes for both).
 */
export const kindOf = (file: FileContent): { readonly binary: boolean; readonly mimeType: string } => {
  const binary = isBinary(file.bytes)
  return { binary, mimeType: mimeTypeOf(file.path, () => !binary) }
}

/** A file's text; binary files are refused with their size and type. */
export const textOf = (skill: SkillRef, file: FileContent): Effect.Effect<TextFile, BinaryFile> => {
  const { binary, mimeType } = kindOf(file)
  if (binary) {
    const shown = mimeType.startsWith("text/") ? "binary data" : mimeType
    return Effect.fail(
      new BinaryFile({ skillId: skill.id, path: file.path, size: file.size, mimeType: shown }),
    )
  }
  const text = Buffer.from(file.bytes).toString("utf8")
  return Effect.succeed({ path: file.path, size: file.size, mimeType, text })
}
