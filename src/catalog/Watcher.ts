/**
 * Watcher: turns file changes into batches of changed paths, debounced.
 *
 * Node's own `fs.watch`, one non-recursive watch per folder that matters (roots, groups, skill
 * folders, and the folders of subscribed files), rather than a recursive watcher: a recursive
 * watch crawls and watches every folder of every skill (references, scripts, assets), at a
 * large cost in memory and start-up, while a new skill, a removed one and an edited SKILL.md
 * all show up in the folders watched here. No native addon (the server stays one bundled file,
 * with nothing to build on install). Watches never keep the process alive; when the system
 * refuses more of them (inotify limits) the server says so once and relies on the per-request
 * check instead.
 */
import type { FSWatcher } from "node:fs"
import { watch } from "node:fs"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import * as Runtime from "effect/Runtime"
import * as Stream from "effect/Stream"
import { sliced } from "../platform/EventLoop.js"

/** Changes closer together than this are delivered as one batch. */
export const DEBOUNCE_MS = 75

export class Watcher extends Effect.Service<Watcher>()("skills-mcp/Watcher", {
  scoped: Effect.gen(function* () {
    const runtime = yield* Effect.runtime<never>()
    const log = (message: string) => Runtime.runFork(runtime)(Effect.logWarning(message))
    const batches = yield* Effect.acquireRelease(Queue.unbounded<ReadonlyArray<string>>(), Queue.shutdown)
    const watchers = new Map<string, FSWatcher>()
    let pending = new Set<string>()
    let timer: NodeJS.Timeout | undefined
    let warned = false

    /** Empties the changes seen but not yet delivered, cutting the debounce short. */
    const take = () => {
      if (timer !== undefined) clearTimeout(timer)
      timer = undefined
      const batch = [...pending]
      pending = new Set()
      return batch
    }

    const flush = () => {
      const batch = take()
      if (batch.length > 0) batches.unsafeOffer(batch)
    }

    const changed = (dir: string, filename: string | Buffer | null) => {
      pending.add(filename === null ? dir : path.join(dir, filename.toString()))
      if (timer === undefined) timer = setTimeout(flush, DEBOUNCE_MS).unref()
    }

    const unwatch = (dir: string) => {
      watchers.get(dir)?.close()
      watchers.delete(dir)
    }

    /**
     * Adds a watch: "watched" (or the folder vanished meanwhile, needing none); "refused" for
     * this folder (not readable, not a folder); "full" when the system has no room for more.
     */
    const add = (dir: string): "watched" | "refused" | "full" => {
      try {
        const watcher = watch(dir, { persistent: false }, (_event, filename) => changed(dir, filename))
        watcher.on("error", () => {
          // The folder went away (or the watch broke): its parent's watch reports the change.
          unwatch(dir)
          changed(dir, null)
        })
        watchers.set(dir, watcher)
        return "watched"
      } catch (error) {
        const code =
          typeof error === "object" && error !== null && "code" in error ? String(error.code) : "unknown"
        if ((code === "ENOSPC" || code === "EMFILE") && !warned) {
          warned = true
          log(
            `Cannot watch more folders (${code}: the system's limit on file watches is reached, ${watchers.size} watched). Changes elsewhere show up on the next request instead.`,
          )
        }
        // A folder that vanished in the meantime needs no watch; any other refusal is a gap.
        if (code === "ENOSPC" || code === "EMFILE") return "full"
        return code === "ENOENT" ? "watched" : "refused"
      }
    }

    /**
     * Watches exactly these folders: new ones are added, ones no longer listed are released.
     * Answers how many are watched, whether every one could be, whether one was refused for want
     * of room (`full`), and the folders newly watched (a change made in one before its watch
     * existed was not seen: see Catalog's `recheck`).
     */
    const sync = (dirs: Iterable<string>) =>
      Effect.gen(function* () {
        const wanted = new Set(dirs)
        for (const dir of watchers.keys()) if (!wanted.has(dir)) unwatch(dir)
        const missing = [...wanted].filter((dir) => !watchers.has(dir))
        let complete = true
        let full = false
        // In slices of time, so requests are not held up by thousands of watches.
        yield* sliced(missing, (dir) => {
          const added = add(dir)
          if (added !== "watched") complete = false
          if (added === "full") full = true
        })
        return { watched: watchers.size, complete, full, added: missing.filter((dir) => watchers.has(dir)) }
      })

    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        if (timer !== undefined) clearTimeout(timer)
        for (const watcher of watchers.values()) watcher.close()
        watchers.clear()
      }),
    )

    return {
      sync,
      /** The changes seen but not yet delivered (the debounce is cut short). */
      takePending: Effect.sync(take),
      /** Batches of changed paths (files or folders), after the debounce. */
      changes: Stream.fromQueue(batches),
    } as const
  }),
}) {}
