/**
 * Watching: keeps the catalog fresh from file watches (src/catalog/Watcher.ts) once a client
 * has connected. The watches follow the catalog's folders (and any others the server names, such
 * as subscribed files' folders); every change the watcher sees is applied, and a folder newly
 * watched is checked once, since a change made in it before its watch existed reached no
 * watcher. While every folder is watched, requests apply the watcher's pending changes instead of
 * sweeping the disk; when the system refuses more watches, they sweep again.
 */
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import { SkillFiles } from "../files/SkillFiles.js"
import { Catalog } from "./Catalog.js"
import { foldersToWatch } from "./Snapshot.js"
import { Watcher } from "./Watcher.js"

export const watchCatalog = (options: {
  /** Folders to watch besides the catalog's (the folders of subscribed files). */
  readonly extraFolders: () => ReadonlyArray<string>
  /** Runs after changes were seen, once the catalog is up to date with them. */
  readonly afterChanges: Effect.Effect<void>
}) =>
  Effect.gen(function* () {
    const catalog = yield* Catalog
    const watcher = yield* Watcher
    const files = yield* SkillFiles
    // Changes a request applied, having taken them from the watcher before its debounce ended:
    // the watches and `afterChanges` still follow them.
    const taken = yield* Queue.unbounded<ReadonlyArray<string>>()
    const pending = Effect.tap(watcher.takePending, (paths) =>
      paths.length === 0 ? Effect.void : Queue.offer(taken, paths),
    )

    /** Brings the watches in step with the catalog, re-checking new ones (a few rounds at most). */
    const follow = Effect.gen(function* () {
      for (let round = 0; round < 3; round++) {
        const folders = [...foldersToWatch(yield* catalog.peek), ...options.extraFolders()]
        const { complete, full, added } = yield* watcher.sync(folders)
        // Its watches say what skills there are: kept skills' watches make room for them.
        if (full) files.yieldWatches()
        yield* catalog.useWatcher(complete ? pending : undefined)
        if (added.length === 0 || !(yield* catalog.recheck(added))) return
      }
    })

    yield* watcher.changes.pipe(
      Stream.runForEach((paths) =>
        catalog.refreshPaths(paths).pipe(Effect.zipRight(follow), Effect.zipRight(options.afterChanges)),
      ),
      Effect.forkScoped,
    )
    yield* Queue.take(taken).pipe(
      Effect.zipRight(Queue.takeAll(taken)),
      Effect.zipRight(follow),
      Effect.zipRight(options.afterChanges),
      Effect.forever,
      Effect.forkScoped,
    )
    // Requests apply the watcher's changes from now on; the first round of `follow` sets up every
    // watch and checks what changed before each existed.
    yield* catalog.useWatcher(pending)
    yield* follow
    /** Call after the extra folders changed (a new subscription). */
    return { follow } as const
  })
