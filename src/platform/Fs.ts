/**
 * Fs: the file-system calls of the server, as a service of our own with a Node layer
 * (`Fs.node`), so services reach the disk through a tag and tests can provide another layer.
 *
 * - `sync`: the first scan's (nothing waits on the event loop yet, and a synchronous call skips
 *   the thread-pool round trip), and that of loops of a system call or two per item where the
 *   round trip costs more than the call (folder reads, manifests, their checks, a SKILL.md's
 *   load);
 * - `async`: every later refresh's (the event loop stays free for requests). In both, a failed
 *   lookup (readdir, lstat, stat, realpath) answers null; open, read and close throw;
 * - `contained`: opening a file inside a skill (O_NOFOLLOW, the kernel's path of what was
 *   opened); it rejects on failure, for reads whose failures matter; `containedNow` the same,
 *   synchronous (it throws), with the calls folders are read with (src/files/Folders.ts).
 *
 * Loops over thousands of files are plain functions over these (async ones over `async`), not an
 * Effect per file: per-file fibers cost more than the system calls they wrap.
 */
import type { Dirent, Stats } from "node:fs"
import * as fs from "node:fs"
import { promisify } from "node:util"
import * as Context from "effect/Context"
import * as Layer from "effect/Layer"

export type Io<A> = A | Promise<A>

/** The calls a walk or a read makes; through `Io`, one function runs on either port. */
export interface FsPort {
  readonly readdir: (dir: string) => Io<Array<Dirent> | null>
  readonly lstat: (target: string) => Io<Stats | null>
  readonly stat: (target: string) => Io<Stats | null>
  /** The kernel's realpath (never the JavaScript re-implementation), or null. */
  readonly realpath: (target: string) => Io<string | null>
  readonly open: (file: string) => Io<number>
  /** Reads into `buffer` at `offset`, from `position` in the file; answers the bytes read. */
  readonly read: (fd: number, buffer: Buffer, offset: number, length: number, position: number) => Io<number>
  readonly close: (fd: number) => Io<void>
  /** How many operations a loop keeps in flight. */
  readonly concurrency: number
}

/** A port whose operations answer at once (no promise): the first scan's. */
export type SyncFsPort = {
  readonly [K in keyof FsPort]: FsPort[K] extends (...args: infer A) => Io<infer R>
    ? (...args: A) => R
    : FsPort[K]
}

/** The `code` of a Node system error (`ENOENT`, ...), or undefined for anything else. */
export const errorCode = (error: unknown): unknown =>
  typeof error === "object" && error !== null && "code" in error ? error.code : undefined

/** A short, path-free description of a Node I/O error. */
export const describeIoError = (error: unknown): string => {
  switch (errorCode(error)) {
    case "ENOENT":
      return "no such file"
    case "EACCES":
    case "EPERM":
      return "permission denied"
    case "EISDIR":
      return "is a folder"
    case "ELOOP":
      return "too many symbolic links"
    default: {
      const code = errorCode(error)
      return typeof code === "string" ? code : "unknown error"
    }
  }
}

const nullOnError =
  <A extends Array<unknown>, B>(f: (...args: A) => B) =>
  (...args: A): B | null => {
    try {
      return f(...args)
    } catch {
      return null
    }
  }

/**
 * Read-only; a FIFO swapped in for a SKILL.md fails to read instead of blocking the process, and
 * a terminal device never becomes the process's controlling terminal.
 */
const READ_NONBLOCK = fs.constants.O_RDONLY | fs.constants.O_NONBLOCK | fs.constants.O_NOCTTY
/** ...and never through a final symbolic link. */
const READ_NOFOLLOW = READ_NONBLOCK | fs.constants.O_NOFOLLOW

export const syncFs: SyncFsPort = {
  readdir: nullOnError((dir: string) => fs.readdirSync(dir, { withFileTypes: true })),
  lstat: nullOnError((target: string) => fs.lstatSync(target, { throwIfNoEntry: false }) ?? null),
  stat: nullOnError((target: string) => fs.statSync(target)),
  realpath: nullOnError((target: string) => fs.realpathSync.native(target)),
  open: (file) => fs.openSync(file, READ_NONBLOCK),
  read: (fd, buffer, offset, length, position) => fs.readSync(fd, buffer, offset, length, position),
  close: (fd) => fs.closeSync(fd),
  concurrency: 1,
}

/**
 * Node's callback API, promisified; the calls reject on failure. Not `fs.promises`: it loads
 * more modules on its first use, in the middle of serving.
 */
const fsCalls = {
  readdir: promisify(fs.readdir),
  lstat: promisify(fs.lstat),
  stat: promisify(fs.stat),
  /** The kernel's realpath (`realpath(3)`), never the JavaScript re-implementation. */
  realpath: promisify(fs.realpath.native),
  readlink: promisify(fs.readlink),
  open: promisify(fs.open),
  fstat: promisify(fs.fstat),
  read: promisify(fs.read),
  close: promisify(fs.close),
} as const

export const asyncFs: FsPort = {
  readdir: (dir) => fsCalls.readdir(dir, { withFileTypes: true }).catch(() => null),
  lstat: (target) => fsCalls.lstat(target).catch(() => null),
  stat: (target) => fsCalls.stat(target).catch(() => null),
  realpath: (target) => fsCalls.realpath(target).catch(() => null),
  open: (file) => fsCalls.open(file, READ_NONBLOCK),
  read: (fd, buffer, offset, length, position) =>
    fsCalls.read(fd, buffer, offset, length, position).then((result) => result.bytesRead),
  close: (fd) => fsCalls.close(fd),
  concurrency: 32,
}

/** Runs `work` over `items` with at most `limit` in flight; results in input order. */
export const mapLimit = async <A, B>(
  items: ReadonlyArray<A>,
  limit: number,
  work: (item: A, index: number) => Io<B>,
): Promise<Array<B>> => {
  const results = new Array<B>(items.length)
  let next = 0
  const worker = async () => {
    while (next < items.length) {
      const index = next++
      results[index] = await work(items[index] as A, index)
    }
  }
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker))
  return results
}

/**
 * A file opened for reading: its descriptor, its stat, the kernel's path of it (null where the
 * kernel cannot say, or when the file was known: see `openFile`).
 */
export interface OpenFile {
  readonly fd: number
  readonly info: Stats
  readonly opened: string | null
}

/** A folder opened for reading: its entries are reached through `at`. */
export interface OpenFolder {
  readonly at: string
  readonly close: () => void
}

/**
 * Opening a file inside a skill to read it, on either port (`contained`, `containedNow`): with
 * what fstat says of it and the kernel's path of it (null where it cannot say: no /proc). When
 * `known` says the opened file is one already known (its stat is that of a file found inside the
 * skill), its path is not read, and `opened` is null. The open never follows a final link, never
 * waits for a FIFO and never takes a terminal (READ_NOFOLLOW). It fails by throwing (synchronous
 * port) or rejecting (asynchronous port).
 */
export interface ContainedCalls {
  readonly openFile: (file: string, known?: (info: Stats) => boolean) => Io<OpenFile>
  /** Closes a descriptor (in the background on the asynchronous port: it has nothing to report). */
  readonly closeLater: (fd: number) => void
}

/**
 * The calls that keep reads inside a skill (src/files/), with Node's and Linux's specifics,
 * synchronous (they throw). On Linux a descriptor's kernel path is read at `/proc/self/fd/N`, and
 * an open folder's entries are reached through that path, which stays the very folder opened
 * whatever happens to its name. Folders are read with these only (src/files/Folders.ts).
 */
export interface SyncContainedCalls extends ContainedCalls {
  readonly openFile: (file: string, known?: (info: Stats) => boolean) => OpenFile
  /**
   * Opens the real folder `real`, never through a final link. On Linux it is read through its
   * descriptor, and the kernel's path of what was opened must be `real`: null when it is not
   * (moved or swapped meanwhile). `within` is its path through its parent's open descriptor,
   * when the parent was opened so: only the last name is then looked up, and the kernel's path
   * need not be checked. Elsewhere, and without /proc, it is read by its path.
   */
  readonly openFolder: (real: string, within?: string) => OpenFolder | null
  /** The names in a folder (reached through `at`, see `openFolder`), but those that are not UTF-8. */
  readonly readdir: (at: string) => Array<string>
  /**
   * What `target` names, without following a final link or opening it for reading (a device is
   * never opened), and the kernel's path of it (Linux's O_PATH); elsewhere a stat by path, with
   * `opened` null.
   */
  readonly statNamed: (target: string) => { readonly info: Stats; readonly opened: string | null }
}

const onLinux = process.platform === "linux"
/** Linux's `O_PATH` (Node does not export it): a descriptor that only names a file. */
const O_PATH = 0o10000000
const READ_FOLDER = fs.constants.O_RDONLY | fs.constants.O_DIRECTORY | fs.constants.O_NOFOLLOW

const openedPath = (fd: number) => fsCalls.readlink(`/proc/self/fd/${fd}`).catch(() => null)
const closeLater = (fd: number) => fs.close(fd, () => undefined)

/** What an open descriptor is: its stat, and the kernel's path of it (null without /proc). */
const describe = async (fd: number) => {
  const [opened, info] = await Promise.all([onLinux ? openedPath(fd) : null, fsCalls.fstat(fd)])
  return { info, opened }
}

const containedCalls: ContainedCalls = {
  openFile: async (file, known) => {
    const fd = await fsCalls.open(file, READ_NOFOLLOW)
    try {
      if (known === undefined) return { fd, ...(await describe(fd)) }
      const info = await fsCalls.fstat(fd)
      return { fd, info, opened: known(info) || !onLinux ? null : await openedPath(fd) }
    } catch (error) {
      closeLater(fd)
      throw error
    }
  },
  closeLater,
}

const openedPathNow = nullOnError((fd: number): string => fs.readlinkSync(`/proc/self/fd/${fd}`, "utf8"))
const describeNow = (fd: number) => ({ info: fs.fstatSync(fd), opened: onLinux ? openedPathNow(fd) : null })

/**
 * The same calls, synchronous, with those folders are read with: for loops over a skill's folders
 * and files where the work per call is a system call or two, less than a wait for the thread pool
 * costs (src/files/Folders.ts, src/files/Manifests.ts).
 */
const containedCallsNow: SyncContainedCalls = {
  openFile: (file, known) => {
    const fd = fs.openSync(file, READ_NOFOLLOW)
    try {
      if (known === undefined) return { fd, ...describeNow(fd) }
      const info = fs.fstatSync(fd)
      return { fd, info, opened: known(info) || !onLinux ? null : openedPathNow(fd) }
    } catch (error) {
      fs.closeSync(fd)
      throw error
    }
  },
  openFolder: (real, within) => {
    const byPath = { at: real, close: () => undefined }
    if (!onLinux) return byPath
    const fd = fs.openSync(within ?? real, READ_FOLDER)
    const open = { at: `/proc/self/fd/${fd}`, close: () => fs.closeSync(fd) }
    if (within !== undefined) return open
    const opened = openedPathNow(fd)
    if (opened === real) return open
    fs.closeSync(fd)
    // A removed folder's path ends with " (deleted)".
    return opened === null ? byPath : null
  },
  readdir: (at) => {
    const names = fs.readdirSync(at)
    // Node decodes a name that is not UTF-8 with U+FFFD for the bad bytes: that name would find
    // another file or none. Such names are left out (they cannot be written in a skill URI).
    if (!names.some((name) => name.includes("\uFFFD"))) return names
    return fs.readdirSync(at, { encoding: "buffer" }).flatMap((raw) => {
      const name = raw.toString("utf8")
      return Buffer.from(name, "utf8").equals(raw) ? [name] : []
    })
  },
  statNamed: (target) => {
    if (!onLinux) return { info: fs.statSync(target), opened: null }
    const fd = fs.openSync(target, O_PATH | fs.constants.O_NOFOLLOW)
    try {
      return describeNow(fd)
    } finally {
      fs.closeSync(fd)
    }
  },
  closeLater: (fd) => fs.closeSync(fd),
}

export interface FsShape {
  readonly sync: SyncFsPort
  readonly async: FsPort
  readonly contained: ContainedCalls
  /** `contained`, synchronous, with the calls folders are read with. */
  readonly containedNow: SyncContainedCalls
}

export class Fs extends Context.Tag("skills-mcp/Fs")<Fs, FsShape>() {
  /** The real file system, through Node. */
  static readonly node: Layer.Layer<Fs> = Layer.succeed(Fs, {
    sync: syncFs,
    async: asyncFs,
    contained: containedCalls,
    containedNow: containedCallsNow,
  })
}
