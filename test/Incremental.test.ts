/**
 * The catalog's incremental paths, each step checked through the stat sweep (every request
 * re-checks the disk) and through the watcher (the real Watcher service feeding
 * `refreshPaths`, as the server wires it): edit, add, remove, rename, a skill moving between
 * roots, and shadowing resolved when the first of two skills with one id goes away.
 */
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Ref from "effect/Ref"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import type { CatalogChange } from "../src/catalog/Catalog.js"
import { Catalog } from "../src/catalog/Catalog.js"
import type { Snapshot } from "../src/catalog/Snapshot.js"
import { Watcher } from "../src/catalog/Watcher.js"
import { watchCatalog as keepWatched } from "../src/catalog/Watching.js"
import { MAX_PAUSE_WAIT_MS } from "../src/platform/EventLoop.js"
import { servicesFor } from "./support/layers.js"
import { skillMd, tempTree } from "./support/tree.js"

type Mode = "sweep" | "watcher"

/** Retries `check` on the current snapshot until it passes (the watcher delivers asynchronously). */
const until = (catalog: Catalog, check: (snapshot: Snapshot) => void) =>
  Effect.flatMap(catalog.snapshot, (snapshot) => Effect.try(() => check(snapshot))).pipe(
    Effect.retry({ schedule: Schedule.spaced("25 millis"), times: 400 }),
  )

const ids = (snapshot: Snapshot) => snapshot.skills.map((skill) => skill.id)

/** Waits until the changes announced so far are `expected` (a subscriber gets them asynchronously). */
const announced = (changes: Ref.Ref<ReadonlyArray<CatalogChange>>, expected: ReadonlyArray<CatalogChange>) =>
  Effect.flatMap(Ref.get(changes), (all) => Effect.try(() => expect(all).toEqual(expected))).pipe(
    Effect.retry({ schedule: Schedule.spaced("10 millis"), times: 200 }),
  )

/**
 * A skill folder put in place at once, as a copy or an unpacked archive lands: written
 * elsewhere, then renamed into its root (one event, however loaded the machine).
 */
const placeSkill = (dir: string, text: string) =>
  Effect.promise(async () => {
    const staging = await fs.mkdtemp(path.join(os.tmpdir(), "skills-mcp-staging-"))
    await fs.writeFile(`${staging}/SKILL.md`, text)
    await fs.rename(staging, dir)
  })

/** The real Watcher keeping the catalog fresh, as the server wires it; returns once the watches are in place. */
const watchCatalog = () => Effect.asVoid(keepWatched({ extraFolders: () => [], afterChanges: Effect.void }))

/** The catalog over these roots and the real Watcher; the interval sweep never comes. */
const watchedServices = (roots: ReadonlyArray<string>) =>
  Layer.mergeAll(servicesFor(roots, { refreshIntervalMs: 3_600_000 }), Watcher.Default)

/** The messages logged while `logs` is provided. */
const capturedLogs = () => {
  const warnings: Array<string> = []
  const logger = Logger.make(({ message }) => {
    warnings.push(String(message))
  })
  return { warnings, logs: Logger.replace(Logger.defaultLogger, logger) }
}

const run = (mode: Mode) =>
  Effect.gen(function* () {
    const first = yield* tempTree({
      "alpha/SKILL.md": skillMd("alpha", "Alpha original."),
      "beta/SKILL.md": skillMd("beta", "Beta in the first root."),
      "gamma/SKILL.md": skillMd("gamma", "Gamma goes away."),
      "delta/SKILL.md": skillMd("delta", "Delta gets renamed, keyword quokka."),
    })
    const second = yield* tempTree({
      "beta/SKILL.md": skillMd("beta", "Beta in the second root."),
      "epsilon/SKILL.md": skillMd("epsilon", "Epsilon moves to the first root."),
    })
    const services = servicesFor([first, second], {
      // Through the watcher only: the interval is never reached while the test runs.
      refreshIntervalMs: mode === "sweep" ? 0 : 3_600_000,
    })
    yield* Effect.gen(function* () {
      const catalog = yield* Catalog
      const changes = yield* Ref.make<ReadonlyArray<CatalogChange>>([])
      yield* catalog.changes.pipe(
        Stream.runForEach((change) => Ref.update(changes, (all) => [...all, change])),
        Effect.forkScoped,
      )
      if (mode === "watcher") yield* watchCatalog()
      yield* Effect.yieldNow()
      const start = yield* catalog.snapshot
      expect(ids(start)).toEqual(["alpha", "beta", "delta", "gamma", "epsilon"])
      expect(start.byId.get("beta")?.file).toBe(`${first}/beta/SKILL.md`)
      expect((yield* catalog.list({ query: "quokka" })).skills.map((skill) => skill.id)).toEqual(["delta"])

      // Edit: one skill changes, every other one is the very same object (not read again),
      // and exactly one change is published.
      yield* Effect.promise(() =>
        fs.writeFile(`${first}/alpha/SKILL.md`, skillMd("alpha", "Alpha edited, wombat.")),
      )
      const edited = yield* until(catalog, (snapshot) =>
        expect(snapshot.byId.get("alpha")?.description).toBe("Alpha edited, wombat."),
      ).pipe(Effect.zipRight(catalog.snapshot))
      for (const id of ["beta", "gamma", "delta", "epsilon"])
        expect(edited.byId.get(id)).toBe(start.byId.get(id))
      expect(edited.version).toBe(start.version + 1)
      yield* announced(changes, [{ version: edited.version, added: [], removed: [], changed: ["alpha"] }])
      expect((yield* catalog.list({ query: "wombat" })).skills.map((skill) => skill.id)).toEqual(["alpha"])
      yield* catalog.refresh
      expect(yield* catalog.peek).toBe(edited)

      // Add.
      yield* placeSkill(`${first}/zeta`, skillMd("zeta", "Zeta is new, keyword narwhal."))
      const withZeta = yield* until(catalog, (snapshot) =>
        expect(snapshot.byId.get("zeta")?.description).toContain("narwhal"),
      ).pipe(Effect.zipRight(catalog.snapshot))
      expect(ids(withZeta)).toEqual(["alpha", "beta", "delta", "gamma", "zeta", "epsilon"])
      expect(withZeta.version).toBe(edited.version + 1)
      yield* announced(changes, [
        { version: edited.version, added: [], removed: [], changed: ["alpha"] },
        { version: withZeta.version, added: ["zeta"], removed: [], changed: [] },
      ])
      // What a whole discovery finds: the same catalog (the very snapshot is kept).
      yield* catalog.refresh
      expect(yield* catalog.peek).toBe(withZeta)
      expect((yield* catalog.list({ query: "narwhal" })).skills.map((skill) => skill.id)).toEqual(["zeta"])

      // Remove.
      yield* Effect.promise(() => fs.rm(`${first}/gamma`, { recursive: true }))
      yield* until(catalog, (snapshot) => expect(snapshot.byId.has("gamma")).toBe(false))
      expect((yield* Effect.flip(catalog.get("gamma")))._tag).toBe("SkillNotFound")
      expect((yield* catalog.list({ query: "gamma" })).total).toBe(0)

      // Rename: the folder is the id.
      yield* Effect.promise(() => fs.rename(`${first}/delta`, `${first}/delta-renamed`))
      yield* until(catalog, (snapshot) => {
        expect(snapshot.byId.has("delta")).toBe(false)
        expect(snapshot.byId.get("delta-renamed")?.description).toContain("quokka")
      })
      expect((yield* catalog.list({ query: "quokka" })).skills.map((skill) => skill.id)).toEqual([
        "delta-renamed",
      ])

      // A skill moving from the second root to the first.
      yield* Effect.promise(() => fs.rename(`${second}/epsilon`, `${first}/epsilon`))
      yield* until(catalog, (snapshot) => expect(snapshot.byId.get("epsilon")?.root).toBe(first))

      // Shadowing resolved: the first root's beta goes, the second root's is served.
      expect((yield* catalog.snapshot).shadowed.map((shadow) => shadow.file)).toEqual([
        `${second}/beta/SKILL.md`,
      ])
      yield* Effect.promise(() => fs.rm(`${first}/beta`, { recursive: true }))
      const resolved = yield* until(catalog, (snapshot) =>
        expect(snapshot.byId.get("beta")?.description).toBe("Beta in the second root."),
      ).pipe(Effect.zipRight(catalog.snapshot))
      expect(resolved.shadowed).toEqual([])
      expect(ids(resolved)).toEqual(["alpha", "delta-renamed", "epsilon", "zeta", "beta"])
      const found = yield* catalog.list({ query: "second root" })
      expect(found.skills[0]?.id).toBe("beta")
      expect(found.match).toBe("all")
    }).pipe(Effect.provide(Layer.merge(services, Watcher.Default)))
  })

describe("incremental refresh", () => {
  it.scopedLive("through the stat sweep: edit, add, remove, rename, move between roots, shadowing", () =>
    run("sweep"),
  )
  it.scopedLive("through the watcher: edit, add, remove, rename, move between roots, shadowing", () =>
    run("watcher"),
  )

  // An edit that keeps a skill's id, name and file replaces that skill alone (the watcher test
  // above); any other edit rebuilds the catalog, which logs what became wrong.
  it.scopedLive(
    "through the watcher: edits of a name, of a shadowed copy and into a broken file rebuild",
    () =>
      Effect.gen(function* () {
        const first = yield* tempTree({
          "alpha/SKILL.md": skillMd("alpha", "Alpha original."),
          "beta/SKILL.md": skillMd("beta", "Beta in the first root."),
          "gamma/SKILL.md": skillMd("gamma", "Gamma original."),
        })
        const second = yield* tempTree({ "beta/SKILL.md": skillMd("beta", "Beta in the second root.") })
        const { warnings, logs } = capturedLogs()
        const write = (file: string, text: string) => Effect.promise(() => fs.writeFile(file, text))
        yield* Effect.gen(function* () {
          const catalog = yield* Catalog
          yield* watchCatalog()
          const start = yield* catalog.snapshot

          // A name that breaks the naming rules: still served, left out of the extension, logged.
          yield* write(`${first}/alpha/SKILL.md`, skillMd("Alpha_Bad", "Alpha renamed."))
          yield* until(catalog, (snapshot) => expect(snapshot.byId.get("alpha")?.name).toBe("Alpha_Bad"))
          expect(warnings.filter((line) => line.includes("Skill 'alpha'"))).toEqual([
            expect.stringContaining("is not listed over the MCP Skills extension"),
          ])
          expect((yield* catalog.snapshot).published.map((skill) => skill.id)).toEqual(["beta", "gamma"])

          // The shadowed copy is edited (shadowed folders are not watched: reported here as a
          // watcher would): the first root's beta is still the one served, the very same object.
          yield* write(`${second}/beta/SKILL.md`, skillMd("beta", "Beta in the second root, edited."))
          yield* catalog.refreshPaths([`${second}/beta/SKILL.md`])
          expect((yield* catalog.snapshot).byId.get("beta")).toBe(start.byId.get("beta"))

          // The served beta breaks: it is skipped, and the second root's copy is served instead.
          yield* write(`${first}/beta/SKILL.md`, "---\nname: beta\n---\nNo description.\n")
          const broken = yield* until(catalog, (snapshot) =>
            expect(snapshot.byId.get("beta")?.description).toBe("Beta in the second root, edited."),
          ).pipe(Effect.zipRight(catalog.snapshot))
          expect(broken.skipped.map((skip) => skip.file)).toEqual([`${first}/beta/SKILL.md`])
          expect(broken.shadowed).toEqual([])
        }).pipe(Effect.provide(watchedServices([first, second])), Effect.provide(logs))
      }),
  )

  it.scopedLive(
    "through the watcher: new folders other than plain skills are found by a whole discovery",
    () =>
      Effect.gen(function* () {
        const first = yield* tempTree({ "alpha/SKILL.md": skillMd("alpha", "Alpha.") })
        const second = yield* tempTree({ "beta/SKILL.md": skillMd("beta", "Beta in the second root.") })
        const { warnings, logs } = capturedLogs()
        const add = (dir: string, text: string) =>
          Effect.promise(async () => {
            await fs.mkdir(dir, { recursive: true })
            await fs.writeFile(`${dir}/SKILL.md`, text)
          })
        yield* Effect.gen(function* () {
          const catalog = yield* Catalog
          yield* watchCatalog()

          // An id the second root serves: the first root's copy wins, the other is shadowed.
          yield* add(`${first}/beta`, skillMd("beta", "Beta in the first root."))
          const shadowing = yield* until(catalog, (snapshot) =>
            expect(snapshot.byId.get("beta")?.description).toBe("Beta in the first root."),
          ).pipe(Effect.zipRight(catalog.snapshot))
          expect(ids(shadowing)).toEqual(["alpha", "beta"])
          expect(shadowing.shadowed.map((shadow) => shadow.file)).toEqual([`${second}/beta/SKILL.md`])

          // A group with a skill inside, and a skill that does not parse.
          yield* add(`${first}/group/inner`, skillMd("inner", "Inner, in a group."))
          yield* add(`${first}/broken`, "---\nname: broken\n---\nNo description.\n")
          const grouped = yield* until(catalog, (snapshot) => {
            expect(snapshot.byId.get("inner")?.segments).toEqual(["group", "inner"])
            expect(snapshot.skipped.map((skip) => skip.file)).toEqual([`${first}/broken/SKILL.md`])
          }).pipe(Effect.zipRight(catalog.snapshot))
          expect(ids(grouped)).toEqual(["alpha", "beta", "inner"])

          // A plain one, between the others in path order, added alone.
          yield* placeSkill(`${first}/delta`, skillMd("delta", "Delta, plain."))
          const plain = yield* until(catalog, (snapshot) =>
            expect(snapshot.byId.has("delta")).toBe(true),
          ).pipe(Effect.zipRight(catalog.snapshot))
          expect(ids(plain)).toEqual(["alpha", "beta", "delta", "inner"])
          expect(plain.skipped).toEqual(grouped.skipped)
          expect((yield* catalog.list({ query: "plain" })).skills.map((skill) => skill.id)).toEqual(["delta"])

          // A plain one whose name breaks the naming rules: added alone, and logged as left out
          // of the extension.
          yield* placeSkill(`${first}/omega`, skillMd("Omega_Bad", "Omega, badly named."))
          const named = yield* until(catalog, (snapshot) =>
            expect(snapshot.byId.has("omega")).toBe(true),
          ).pipe(Effect.zipRight(catalog.snapshot))
          expect(named.skipped).toEqual(grouped.skipped)
          expect(warnings.filter((line) => line.includes("Skill 'omega'"))).toEqual([
            expect.stringContaining("is not listed over the MCP Skills extension"),
          ])
        }).pipe(Effect.provide(watchedServices([first, second])), Effect.provide(logs))
      }),
  )

  it.scopedLive(
    "through the watcher: a skill in a root nested in another, added or edited, stays the outer root's",
    () =>
      Effect.gen(function* () {
        const outer = yield* tempTree({
          "alpha/SKILL.md": skillMd("alpha", "Alpha."),
          "sub/old/SKILL.md": skillMd("old", "Old, in both roots."),
        })
        const inner = `${outer}/sub`
        yield* Effect.gen(function* () {
          const catalog = yield* Catalog
          yield* watchCatalog()
          // The outer root comes first: it serves the skills, at their paths there; the inner
          // root's view of the same folders is the same skill, not a shadow of it.
          yield* Effect.promise(async () => {
            await fs.mkdir(`${inner}/fresh`)
            await fs.writeFile(`${inner}/fresh/SKILL.md`, skillMd("fresh", "Fresh, in both roots."))
          })
          const found = yield* until(catalog, (snapshot) =>
            expect(snapshot.byId.get("fresh")?.segments).toEqual(["sub", "fresh"]),
          ).pipe(Effect.zipRight(catalog.snapshot))
          expect(found.byId.get("fresh")?.root).toBe(outer)
          expect(found.shadowed).toEqual([])

          // A skill there from the start, edited: still the outer root's, at its path there.
          yield* Effect.promise(() =>
            fs.writeFile(`${inner}/old/SKILL.md`, skillMd("old", "Old, edited in both roots.")),
          )
          const edited = yield* until(catalog, (snapshot) =>
            expect(snapshot.byId.get("old")?.description).toBe("Old, edited in both roots."),
          ).pipe(Effect.zipRight(catalog.snapshot))
          expect(edited.byId.get("old")?.root).toBe(outer)
          expect(edited.byId.get("old")?.segments).toEqual(["sub", "old"])
          // A change of the catalog: the search index and the clients hear of it.
          expect(edited.version).toBe(found.version + 1)
          expect((yield* catalog.list({ query: "edited" })).skills.map((skill) => skill.id)).toEqual(["old"])
        }).pipe(Effect.provide(watchedServices([outer, inner])))
      }),
  )

  it.scopedLive("a group that becomes a skill is rediscovered, even when only the root reports it", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({
        "alpha/SKILL.md": skillMd("alpha", "Alpha."),
        "group/inner/SKILL.md": skillMd("inner", "Inner, in a group."),
      })
      yield* Effect.gen(function* () {
        const catalog = yield* Catalog
        expect(ids(yield* catalog.peek)).toEqual(["alpha", "inner"])
        // The group's own watch may be missing (the system's limit): only the root's event.
        yield* Effect.promise(() =>
          fs.writeFile(`${root}/group/SKILL.md`, skillMd("group", "Group, now a skill.")),
        )
        yield* catalog.refreshPaths([`${root}/group`])
        const after = yield* catalog.peek
        expect(ids(after)).toEqual(["alpha", "group"])
        // What a whole discovery finds: the same catalog.
        yield* catalog.refresh
        expect(yield* catalog.peek).toBe(after)
      }).pipe(Effect.provide(servicesFor([root], { refreshIntervalMs: 3_600_000 })))
    }),
  )

  it.scopedLive("recheck finds what changed in a new skill or group folder before its watch existed", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({ "alpha/SKILL.md": skillMd("alpha", "Alpha.") })
      yield* Effect.gen(function* () {
        const catalog = yield* Catalog
        yield* placeSkill(`${root}/fresh`, skillMd("fresh", "Fresh."))
        yield* catalog.refreshPaths([`${root}/fresh`]) // the root's event: the skill is added
        expect((yield* catalog.peek).byId.get("fresh")?.description).toBe("Fresh.")
        // Edited before a watch on its folder exists: no event says so.
        yield* Effect.promise(() =>
          fs.writeFile(`${root}/fresh/SKILL.md`, skillMd("fresh", "Fresh, edited early.")),
        )
        expect(yield* catalog.recheck([root, `${root}/fresh`])).toBe(true)
        const after = yield* catalog.peek
        expect(after.byId.get("fresh")?.description).toBe("Fresh, edited early.")
        // Nothing changed since.
        expect(yield* catalog.recheck([`${root}/fresh`])).toBe(false)
        expect(yield* catalog.peek).toBe(after)

        // A new group folder, found empty, gains a skill before a watch on it exists.
        yield* Effect.promise(() => fs.mkdir(`${root}/pack`))
        yield* catalog.refreshPaths([`${root}/pack`])
        yield* placeSkill(`${root}/pack/inner`, skillMd("inner", "Inner, added early."))
        expect(yield* catalog.recheck([`${root}/pack`])).toBe(true)
        expect((yield* catalog.peek).byId.get("inner")?.segments).toEqual(["pack", "inner"])
      }).pipe(Effect.provide(servicesFor([root], { refreshIntervalMs: 3_600_000 })))
    }),
  )

  it.scopedLive("recheck waits for calls to pause, or goes ahead under calls that never pause", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({ "alpha/SKILL.md": skillMd("alpha", "Alpha.") })
      yield* Effect.gen(function* () {
        const catalog = yield* Catalog
        yield* Effect.promise(() =>
          fs.writeFile(`${root}/alpha/SKILL.md`, skillMd("alpha", "Alpha, edited.")),
        )
        const ended = catalog.calls.begin()
        const started = performance.now()
        // A call is in flight, and calls never pause: it goes ahead all the same, once the wait is
        // up (a lower bound: a loaded machine only makes it later).
        expect(yield* catalog.recheck([`${root}/alpha`])).toBe(true)
        expect(performance.now() - started).toBeGreaterThanOrEqual(MAX_PAUSE_WAIT_MS)
        expect((yield* catalog.peek).byId.get("alpha")?.description).toBe("Alpha, edited.")
        ended()
      }).pipe(Effect.provide(servicesFor([root], { refreshIntervalMs: 3_600_000 })))
    }),
  )

  it.scopedLive("a new folder that brings another root into being is rediscovered", () =>
    Effect.gen(function* () {
      const outer = yield* tempTree({ "alpha/SKILL.md": skillMd("alpha", "Alpha.") })
      const later = `${outer}/pack/inner` // a root that does not exist yet
      yield* Effect.gen(function* () {
        const catalog = yield* Catalog
        yield* Effect.promise(async () => {
          const staging = await fs.mkdtemp(path.join(os.tmpdir(), "skills-mcp-staging-"))
          await fs.mkdir(`${staging}/inner/y`, { recursive: true })
          await fs.writeFile(`${staging}/inner/y/SKILL.md`, skillMd("y", "Y, in the second root."))
          await fs.rename(staging, `${outer}/pack`)
        })
        yield* catalog.refreshPaths([`${outer}/pack`])
        const packed = yield* catalog.peek
        // Below the outer root's depth limit: the second root's skill.
        expect(packed.byId.get("y")?.root).toBe(later)
        expect(packed.notices).toEqual([])
        yield* catalog.refresh
        expect(yield* catalog.peek).toBe(packed)
      }).pipe(Effect.provide(servicesFor([outer, later], { refreshIntervalMs: 3_600_000, maxDepth: 2 })))
    }),
  )

  it.scopedLive("several new skill folders at once are each added where a discovery puts them", () =>
    Effect.gen(function* () {
      const first = yield* tempTree({ "b/SKILL.md": skillMd("b", "B."), "d/SKILL.md": skillMd("d", "D.") })
      const second = yield* tempTree({ "a/SKILL.md": skillMd("a", "A in the second root.") })
      yield* Effect.gen(function* () {
        const catalog = yield* Catalog
        const before = yield* catalog.peek
        const added = [`${first}/e`, `${second}/9z`, `${first}/a0`, `${first}/c`]
        for (const dir of added) yield* placeSkill(dir, skillMd(path.basename(dir), "New."))
        yield* catalog.refreshPaths(added)
        const after = yield* catalog.peek
        expect(ids(after)).toEqual(["a0", "b", "c", "d", "e", "9z", "a"])
        expect(after.skipped).toEqual(before.skipped)
        yield* catalog.refresh
        expect(yield* catalog.peek).toBe(after)
      }).pipe(Effect.provide(servicesFor([first, second], { refreshIntervalMs: 3_600_000 })))
    }),
  )

  /** A tree whose folders were last changed an hour ago, and the catalog over it. */
  const settledTree = Effect.gen(function* () {
    const root = yield* tempTree({
      "alpha/SKILL.md": skillMd("alpha", "Alpha original."),
      "beta/SKILL.md": skillMd("beta", "Beta original."),
    })
    const hourAgo = new Date(Date.now() - 3_600_000)
    for (const dir of [root, `${root}/alpha`, `${root}/beta`])
      yield* Effect.promise(() => fs.utimes(dir, hourAgo, hourAgo))
    return root
  })

  it.scopedLive("an edit made before the watches existed is caught once they are in place", () =>
    Effect.gen(function* () {
      const root = yield* settledTree
      yield* Effect.gen(function* () {
        const catalog = yield* Catalog
        // Between the start-up scan and the watches: no watcher event will ever report it. An
        // edit in place changes the file, not its folder.
        yield* Effect.promise(() =>
          fs.writeFile(`${root}/alpha/SKILL.md`, skillMd("alpha", "Alpha edited meanwhile.")),
        )
        yield* watchCatalog()
        expect((yield* catalog.snapshot).byId.get("alpha")?.description).toBe("Alpha edited meanwhile.")
      }).pipe(Effect.provide(watchedServices([root])))
    }),
  )

  it.scopedLive("a skill added before the watches existed is caught once they are in place", () =>
    Effect.gen(function* () {
      const root = yield* settledTree
      yield* Effect.gen(function* () {
        const catalog = yield* Catalog
        yield* Effect.promise(async () => {
          await fs.mkdir(`${root}/gamma`)
          await fs.writeFile(`${root}/gamma/SKILL.md`, skillMd("gamma", "Gamma added meanwhile."))
        })
        yield* watchCatalog()
        expect(ids(yield* catalog.snapshot)).toEqual(["alpha", "beta", "gamma"])
      }).pipe(Effect.provide(watchedServices([root])))
    }),
  )

  it.scopedLive("with nothing changed before the watches, the catalog stays the very same", () =>
    Effect.gen(function* () {
      const root = yield* settledTree
      yield* Effect.gen(function* () {
        const catalog = yield* Catalog
        const before = yield* catalog.snapshot
        yield* watchCatalog()
        expect(yield* catalog.snapshot).toBe(before)
      }).pipe(Effect.provide(watchedServices([root])))
    }),
  )
})
