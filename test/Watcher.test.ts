import * as fs from "node:fs/promises"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Stream from "effect/Stream"
import { Watcher } from "../src/catalog/Watcher.js"
import { tempTree } from "./support/tree.js"

describe("Watcher", () => {
  it.scopedLive("reports changes in watched folders in debounced batches, and stops when released", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({ "a/SKILL.md": "x", "b/SKILL.md": "y", "unwatched/file": "z" })
      const batches = yield* Effect.scoped(
        Effect.gen(function* () {
          const watcher = yield* Watcher
          expect(yield* watcher.sync([root, `${root}/a`])).toEqual({
            watched: 2,
            complete: true,
            full: false,
            added: [root, `${root}/a`],
          })
          const first = yield* watcher.changes.pipe(Stream.take(1), Stream.runCollect, Effect.fork)
          yield* Effect.promise(() => fs.writeFile(`${root}/unwatched/file`, "changed"))
          yield* Effect.promise(() => fs.writeFile(`${root}/a/SKILL.md`, "edited"))
          yield* Effect.promise(() => fs.writeFile(`${root}/a/SKILL.md`, "edited again"))
          yield* Effect.promise(() => fs.mkdir(`${root}/c`))
          const [batch] = yield* Fiber.join(first)
          // Re-syncing releases folders no longer wanted.
          expect(yield* watcher.sync([root])).toEqual({ watched: 1, complete: true, full: false, added: [] })
          return batch ?? []
        }).pipe(Effect.provide(Watcher.Default)),
      )
      expect(batches).toEqual(expect.arrayContaining([`${root}/a/SKILL.md`, `${root}/c`]))
      expect(batches).not.toContain(`${root}/unwatched/file`)
    }),
  )

  it.live("does not fail on folders that do not exist", () =>
    Effect.gen(function* () {
      const watcher = yield* Watcher
      expect(yield* watcher.sync(["/no/such/folder/anywhere"])).toEqual({
        watched: 0,
        complete: true,
        full: false,
        added: [],
      })
    }).pipe(Effect.provide(Watcher.Default), Effect.scoped),
  )

  // A folder it cannot watch (here a file where a folder was) is a gap, but not a lack of room:
  // kept skills' own watches are closed only for want of room (Watching.ts, Watches `yieldRoom`).
  it.scopedLive("tells a folder it cannot watch from a system without room for more watches", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({ "a/SKILL.md": "x", "not-a-folder": "z" })
      const watcher = yield* Watcher
      expect(yield* watcher.sync([`${root}/a`, `${root}/not-a-folder/inside`])).toEqual({
        watched: 1,
        complete: false,
        full: false,
        added: [`${root}/a`],
      })
    }).pipe(Effect.provide(Watcher.Default)),
  )
})
