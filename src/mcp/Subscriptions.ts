/**
 * Subscriptions: `resources/subscribe` and `resources/unsubscribe` for one client. Each
 * subscribed URI is kept with what it looked like when last seen (a file's fingerprint, a
 * manifest's digests, the catalog's version); `check` tells the client of every one that has
 * changed since. At most MAX_SUBSCRIPTIONS per client: each may add a watch, and the system's
 * limit on watches is shared by every process of the user.
 */
import * as path from "node:path"
import * as Effect from "effect/Effect"
import { Catalog } from "../catalog/Catalog.js"
import type { Snapshot } from "../catalog/Snapshot.js"
import { InvalidArgument } from "../Errors.js"
import { SkillFiles } from "../files/SkillFiles.js"
import { Fs } from "../platform/Fs.js"
import { fingerprintOf } from "../platform/Paths.js"
import { fileOfPath, MANIFEST_SEGMENT } from "../skills/Uris.js"
import { diagnosticsText, resolveUri } from "./resources.js"

const MAX_SUBSCRIPTIONS = 256

interface Seen {
  /** What the URI's content looked like. */
  readonly signature: string
  /** The folders to watch for it. */
  readonly folders: ReadonlyArray<string>
}

export const makeSubscriptions = (notify: (uri: string) => Effect.Effect<void>) =>
  Effect.gen(function* () {
    const catalog = yield* Catalog
    const files = yield* SkillFiles
    const fs = yield* Fs
    const subscribed = new Map<string, Seen>()

    /** What a URI looks like in `snapshot`; fails as a read would when it names nothing. */
    const look = (snapshot: Snapshot, uri: string) =>
      Effect.gen(function* () {
        const target = yield* resolveUri(snapshot, uri)
        if (target._tag === "PromptXml") return { signature: `catalog ${snapshot.version}`, folders: [] }
        if (target._tag === "Diagnostics") return { signature: diagnosticsText(snapshot, files), folders: [] }
        if (target.rest.length === 1 && target.rest[0] === MANIFEST_SEGMENT) {
          const { files: listed } = yield* files.manifest(target.skill)
          const folders = new Set(
            listed.map((file) => path.join(target.skill.dir, path.posix.dirname(file.path))),
          )
          return { signature: JSON.stringify(listed), folders: [...folders] }
        }
        const resolved = yield* files.resolve(target.skill, fileOfPath(target.rest))
        const info = yield* Effect.promise(async () => fs.async.stat(resolved.real))
        const seen: Seen = {
          signature: info === null ? "missing" : JSON.stringify(fingerprintOf(info)),
          folders: [path.dirname(resolved.real)],
        }
        return seen
      })

    /** What a URI looks like now; "gone" when it no longer names anything. */
    const observe = (uri: string): Effect.Effect<Seen> =>
      Effect.flatMap(catalog.peek, (current) => look(current, uri)).pipe(
        Effect.orElseSucceed(() => ({ signature: "gone", folders: [] })),
      )

    /** Subscribes to a URI the server serves (refused like a read when it serves nothing there). */
    const subscribe = (uri: string) =>
      Effect.gen(function* () {
        if (!subscribed.has(uri) && subscribed.size >= MAX_SUBSCRIPTIONS) {
          return yield* new InvalidArgument({
            argument: "uri",
            reason: `this client already holds ${MAX_SUBSCRIPTIONS} subscriptions, the most one client may hold; unsubscribe from one first`,
          })
        }
        subscribed.set(uri, yield* look(yield* catalog.snapshot, uri))
      })

    /** One check at a time: two at once could both see a change and tell it twice. */
    const checking = yield* Effect.makeSemaphore(1)

    /** Sends `notifications/resources/updated` for each subscribed URI whose content changed. */
    const check = Effect.suspend(() =>
      Effect.forEach(
        [...subscribed.entries()],
        ([uri, before]) =>
          Effect.gen(function* () {
            const now = yield* observe(uri)
            if (before.signature === now.signature || !subscribed.has(uri)) return
            subscribed.set(uri, now)
            yield* notify(uri)
          }),
        { discard: true },
      ),
    ).pipe(checking.withPermits(1))

    return {
      subscribe,
      unsubscribe: (uri: string) => subscribed.delete(uri),
      check,
      any: () => subscribed.size > 0,
      /** Folders holding subscribed files (watched too). */
      folders: () => [...subscribed.values()].flatMap((seen) => seen.folders),
    } as const
  })
