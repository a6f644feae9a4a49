/**
 * Watches: which kept skills (Inventories.ts) may be trusted without a look at the disk. While
 * the server's watcher is on, and on Linux only (where a folder's watch is inotify's, and sees
 * what happens to its entries), a kept skill is "covered" while watches see nothing that could
 * change it:
 *
 * - a watch of each of its folders, made before the folder was read or its stamp last checked:
 *   a file or folder in it added, removed, renamed, written or replaced (by a link too);
 * - a watch of each folder above the skill folder, up to `/`, told of the one name on the way
 *   down: the skill folder or a folder above it removed, renamed, or replaced by a link, so the
 *   skill folder's real path is still its path while covered.
 *
 * Any event ends the skill's coverage and closes its watches: the next call checks its stamps
 * again (after new watches, which then follow the folders now at those paths: a watch follows a
 * folder's inode, not its path, so a skill removed and copied back in place is watched anew).
 * What a watch cannot see (a file written through a hard link elsewhere, through a shared memory
 * mapping, or by another machine on a network file system) is caught by stamps: a skill with a
 * file of more than one link is never covered, and Inventories re-checks covered skills' stamps
 * in the background, a few at a time. These watches take at most half the system's limit on
 * watches (`watchBudget`), and none are made after the system first refuses one for want of room
 * (ENOSPC) or once the catalog's own watcher could not watch every folder (`yieldRoom`); skills
 * past either are checked by their stamps, as are skills on file systems not known to raise an
 * event for every change (`reliableEvents`: local disk file systems only, not FUSE, NFS, 9p, SMB
 * or cluster file systems) and skills with a folder or file on another file system than the
 * skill folder (a mount inside the skill: Manifests.ts).
 * Events can also be lost: when the kernel's queue of events overflows (a large checkout while
 * the server is busy), Node drops the overflow silently; the background re-check bounds how long
 * a covered skill may then be answered as it was.
 */
import type { FSWatcher } from "node:fs"
import { readFileSync, statfsSync, watch } from "node:fs"
import * as path from "node:path"
import { errorCode } from "../platform/Fs.js"

/** A folder above skill folders, watched for the names that lead down to them. */
interface Above {
  readonly watcher: FSWatcher
  /** Skill folders (real paths) by the name, in this folder, that leads to them. */
  readonly below: Map<string, Set<string>>
}

/** The folders above `base` up to `/`, each with the name in it that leads down to `base`. */
const ancestorsOf = (base: string): Array<readonly [string, string]> => {
  const chain: Array<readonly [string, string]> = []
  for (let dir = base, parent = path.dirname(dir); parent !== dir; dir = parent, parent = path.dirname(dir))
    chain.push([parent, path.basename(dir)])
  return chain
}

/**
 * How many watches these may hold: half the system's limit on a user's watches (Linux's
 * `max_user_watches`), leaving the rest to the catalog's watcher, whose watches say what skills
 * there are; past it, skills are checked by their stamps.
 */
const watchBudget = (): number => {
  try {
    const limit = Number.parseInt(readFileSync("/proc/sys/fs/inotify/max_user_watches", "utf8"), 10)
    return Number.isFinite(limit) ? Math.floor(limit / 2) : Number.POSITIVE_INFINITY
  } catch {
    return Number.POSITIVE_INFINITY
  }
}

/**
 * File systems whose watches see every change, by `statfs`'s type: local disk and memory file
 * systems, where every change goes through this kernel (ext2/3/4, XFS, Btrfs, F2FS, ZFS, tmpfs,
 * ramfs, overlay). Any other (FUSE such as sshfs, WSL2's /mnt/c or Docker Desktop's shares; NFS;
 * 9p; SMB; Ceph, Lustre and other cluster file systems) may be changed by another machine or the
 * server behind it without an event here.
 */
const RELIABLE_TYPES: ReadonlySet<number> = new Set([
  0xef53, 0x58465342, 0x9123683e, 0xf2f52010, 0x2fc12fc1, 0x01021994, 0x858458f6, 0x794c7630,
])

/** The file system type of the folder `dir` (`statfs`), undefined when it cannot be read. */
const fileSystemType = (dir: string): number | undefined => {
  try {
    return statfsSync(dir).type
  } catch {
    return undefined
  }
}

const isReliable = (type: number | undefined): boolean => type !== undefined && RELIABLE_TYPES.has(type)

/**
 * Whether every change to what is in the folder `dir` goes through this kernel (a local disk or
 * memory file system: RELIABLE_TYPES), so that its watches, and its stats, see each one.
 */
export const seesEveryChange = (dir: string): boolean => isReliable(fileSystemType(dir))

/** A watch of `dir` that reports each event's name (null: the watch itself broke), or the error that refused it. */
const open = (
  dir: string,
  onEvent: (name: string | null) => void,
): FSWatcher | { readonly refused: unknown } => {
  try {
    const watcher = watch(dir, { persistent: false }, (_event, name) =>
      onEvent(name === null ? null : name.toString()),
    )
    watcher.on("error", () => onEvent(null))
    return watcher
  } catch (error) {
    return { refused: error }
  }
}

/** What tests may set: the budget of watches, and how a folder's file system type is read. */
export interface WatchesOptions {
  readonly budget?: number
  readonly typeOf?: (dir: string) => number | undefined
}

/** Watches that say which kept skills are unchanged (see the top of this file); `enabled` false: none. */
export const makeWatches = (enabled: boolean, options: WatchesOptions = {}) => {
  const on = enabled && process.platform === "linux"
  const typeOf = options.typeOf ?? fileSystemType
  /** Whether watches of the folder `dir` see every change to it (see RELIABLE_TYPES). */
  const reliableEvents = (dir: string): boolean => isReliable(typeOf(dir))
  /** The watches of each watched skill's own folders, by skill folder. */
  const own = new Map<string, Array<FSWatcher>>()
  const above = new Map<string, Above>()
  const covered = new Set<string>()
  const budget = on ? (options.budget ?? watchBudget()) : 0
  /** Watches held now (own and above). */
  let held = 0
  /** A watch was refused for want of room (the budget) since watches were last closed. */
  let refused = false
  /**
   * The system had no room for one more watch (ENOSPC), or the catalog's watcher needs the room
   * (`yieldRoom`): none are made any more.
   */
  let exhausted = false

  /**
   * A watch of `dir` within the budget; undefined when over it (then `refused`), or refused by
   * the system (for want of room: then `exhausted`; else for this folder only: gone, not readable).
   */
  const watchWithin = (dir: string, onEvent: (name: string | null) => void) => {
    if (held >= budget) {
      refused = true
      return undefined
    }
    const watcher = open(dir, onEvent)
    if (!("refused" in watcher)) {
      held++
      return watcher
    }
    if (errorCode(watcher.refused) === "ENOSPC") exhausted = true
    return undefined
  }
  const unwatch = (watcher: FSWatcher) => {
    watcher.close()
    held--
  }

  /** Ends a skill folder's coverage and closes its watches (those above once no skill needs them). */
  const release = (base: string) => {
    covered.delete(base)
    const watchers = own.get(base)
    if (watchers === undefined) return
    own.delete(base)
    // Watches closed: there may be room for others again.
    refused = false
    for (const watcher of watchers) unwatch(watcher)
    for (const [dir, name] of ancestorsOf(base)) {
      const folder = above.get(dir)
      const bases = folder?.below.get(name)
      if (folder === undefined || bases === undefined) continue
      bases.delete(base)
      if (bases.size === 0) folder.below.delete(name)
      if (folder.below.size === 0) {
        unwatch(folder.watcher)
        above.delete(dir)
      }
    }
  }

  /** A skill whose watches could not all be made: released, still saying whether the budget was why. */
  const giveUp = (base: string): false => {
    const overBudget = refused
    release(base)
    refused = overBudget
    return false
  }

  /** Closes every watch (releasing every skill). */
  const closeAll = () => {
    for (const base of [...own.keys()]) release(base)
  }

  /** An event in a folder above skill folders: those below the name it names are released. */
  const aboveChanged = (dir: string, name: string | null) => {
    const folder = above.get(dir)
    if (folder === undefined) return
    // No name, or the folder's own (it was removed or moved itself): every skill below it.
    const names = name === null || name === path.basename(dir) ? [...folder.below.keys()] : [name]
    for (const each of names) for (const base of [...(folder.below.get(each) ?? [])]) release(base)
  }

  return {
    enabled: on,
    /**
     * Starts watching a skill folder (a real path) and the folders above it, before it is read
     * or its stamps checked; `folder` adds its subfolders. Any earlier watches of it are
     * closed first. False when not watched (the skill is then not covered): no room (see
     * `room`), a file system whose watches miss changes, or a watch the system refused.
     */
    begin: (base: string): boolean => {
      release(base)
      if (!on || exhausted || !reliableEvents(base)) return false
      const watchers: Array<FSWatcher> = []
      own.set(base, watchers)
      for (const [dir, name] of ancestorsOf(base)) {
        let folder = above.get(dir)
        if (folder === undefined) {
          const watcher = watchWithin(dir, (changed) => aboveChanged(dir, changed))
          if (watcher === undefined) return giveUp(base)
          folder = { watcher, below: new Map() }
          above.set(dir, folder)
        }
        let bases = folder.below.get(name)
        if (bases === undefined) {
          bases = new Set()
          folder.below.set(name, bases)
        }
        bases.add(base)
      }
      const watcher = watchWithin(base, () => release(base))
      if (watcher === undefined) return giveUp(base)
      watchers.push(watcher)
      return true
    },
    /** Watches one more folder of a skill `begin` started on; false when refused or not started. */
    folder: (base: string, dir: string): boolean => {
      const watchers = own.get(base)
      if (watchers === undefined) return false
      const watcher = watchWithin(dir, () => release(base))
      if (watcher === undefined) return giveUp(base)
      watchers.push(watcher)
      return true
    },
    /**
     * Whether a skill might be covered now: false once a watch was refused over the budget until
     * some are closed, and for good once the system had no room (ENOSPC) or `yieldRoom`.
     */
    room: (): boolean => on && !refused && !exhausted,
    /**
     * Closes every watch and makes no more: the catalog's watcher, whose watches say what skills
     * there are, could not watch every folder, and needs the room more.
     */
    yieldRoom: () => {
      exhausted = true
      closeAll()
    },
    /** How many watches are open (own and above). */
    open: (): number => held,
    /** The skill's stamps were found to hold after its watches began: it is covered. */
    confirm: (base: string) => {
      if (own.has(base)) covered.add(base)
    },
    release,
    /** Whether a kept skill folder is unchanged since its stamps last held (see the top of this file). */
    covered: (base: string): boolean => covered.has(base),
    /** The covered skill folders (for the background re-check). */
    coveredNow: (): ReadonlySet<string> => covered,
    /** Closes every watch. */
    close: closeAll,
  } as const
}

export type Watches = ReturnType<typeof makeWatches>
