import * as fs from "node:fs/promises"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Stream from "effect/Stream"
import {
  Catalog,
  closestIds,
  decodeCursor,
  editDistance,
  encodeCursor,
  findSkill,
  prepareLookups,
} from "../src/catalog/Catalog.js"
import { syncFs } from "../src/platform/Fs.js"
import { servicesFor } from "./support/layers.js"
import { skillMd, tempTree } from "./support/tree.js"

/** Runs `body` against a Catalog over the given roots. */
const withCatalog = <A, E>(
  roots: ReadonlyArray<string>,
  body: (catalog: Catalog) => Effect.Effect<A, E>,
  overrides: Parameters<typeof servicesFor>[1] = {},
) => Effect.flatMap(Catalog, body).pipe(Effect.provide(servicesFor(roots, overrides)))

/**
 * Notes what the synchronous port (the first scan's) is asked while the scope lasts: its lstat
 * and opens of a SKILL.md (by path below `root`), and its reads.
 */
const noteFirstScan = (root: string) =>
  Effect.gen(function* () {
    const calls: Array<string> = []
    const original = { ...syncFs }
    const noting =
      <A extends Array<unknown>, B>(name: string, call: (file: string, ...rest: A) => B) =>
      (file: string, ...rest: A): B => {
        if (file.endsWith("/SKILL.md")) calls.push(`${name} ${file.slice(root.length + 1)}`)
        return call(file, ...rest)
      }
    const read: typeof original.read = (...args) => {
      calls.push("read")
      return original.read(...args)
    }
    yield* Effect.acquireRelease(
      Effect.sync(() => {
        Reflect.set(syncFs, "lstat", noting("lstat", original.lstat))
        Reflect.set(syncFs, "open", noting("open", original.open))
        Reflect.set(syncFs, "openNoFollow", noting("openNoFollow", original.openNoFollow))
        Reflect.set(syncFs, "read", read)
      }),
      () => Effect.sync(() => Object.assign(syncFs, original)),
    )
    return calls
  })

describe("Catalog", () => {
  it.scoped("serves valid skills, skips malformed ones with a reason, first root wins on duplicate ids", () =>
    Effect.gen(function* () {
      const first = yield* tempTree({
        "pdf/SKILL.md": skillMd("pdf", "First PDF"),
        "broken/SKILL.md": "---\nname: broken\n",
        "human/SKILL.md": skillMd("Human Name", "A human-readable name"),
      })
      const second = yield* tempTree({
        "pdf/SKILL.md": skillMd("pdf", "Second PDF"),
        "csv/SKILL.md": skillMd("csv", "C"),
      })
      yield* withCatalog([first, second], (catalog) =>
        Effect.gen(function* () {
          const snapshot = yield* catalog.snapshot
          expect(snapshot.skills.map((skill) => skill.id)).toEqual(["human", "pdf", "csv"])
          expect(snapshot.byId.get("pdf")?.description).toBe("First PDF")
          expect(snapshot.shadowed).toEqual([
            { id: "pdf", file: `${second}/pdf/SKILL.md`, shadowedBy: `${first}/pdf/SKILL.md` },
          ])
          expect(snapshot.skipped.map((skip) => [skip.id, skip.reason])).toEqual([
            ["broken", "the frontmatter is not closed: add a line with only '---' after the last field"],
          ])
          expect(snapshot.byId.get("human")?.diagnostics.map((d) => d.rule)).toEqual([
            "name-characters",
            "name-matches-folder",
          ])
        }),
      )
    }),
  )

  it.scoped("serves the next skill of an id when the first cannot be served", () =>
    Effect.gen(function* () {
      const first = yield* tempTree({ "pdf/SKILL.md": "---\nname: pdf\n" })
      const second = yield* tempTree({ "pdf/SKILL.md": skillMd("pdf", "Second PDF") })
      const third = yield* tempTree({ "pdf/SKILL.md": skillMd("pdf", "Third PDF") })
      yield* withCatalog([first, second, third], (catalog) =>
        Effect.gen(function* () {
          const snapshot = yield* catalog.snapshot
          expect(snapshot.skills.map((skill) => skill.description)).toEqual(["Second PDF"])
          expect(snapshot.skipped.map((skip) => skip.file)).toEqual([`${first}/pdf/SKILL.md`])
          expect(snapshot.shadowed).toEqual([
            { id: "pdf", file: `${third}/pdf/SKILL.md`, shadowedBy: `${second}/pdf/SKILL.md` },
          ])
          // Mended, the first copy wins again.
          yield* Effect.promise(() => fs.writeFile(`${first}/pdf/SKILL.md`, skillMd("pdf", "First PDF")))
          const mended = yield* catalog.snapshot
          expect(mended.skills.map((skill) => skill.description)).toEqual(["First PDF"])
          expect(mended.skipped).toEqual([])
          expect(mended.shadowed.map((shadow) => shadow.file)).toEqual([
            `${second}/pdf/SKILL.md`,
            `${third}/pdf/SKILL.md`,
          ])
        }),
      )
    }),
  )

  it.scoped(
    "first scan: opens each permitted SKILL.md once and stats none of the regular ones; links and denied skills as before",
    () =>
      Effect.gen(function* () {
        const root = yield* tempTree({
          "plain/SKILL.md": skillMd("plain", "Plain"),
          "broken/SKILL.md": "---\nname: broken\n",
          "big/SKILL.md": skillMd("big", "Too big", "x".repeat(2_000)),
          "linked/real.md": skillMd("linked", "Through a link"),
          "linked/SKILL.md": { symlink: "real.md" },
          "denied/SKILL.md": skillMd("denied", "Not served"),
          "group/SKILL.md/notes.md": "a folder named SKILL.md: not a skill",
          "group/inner/SKILL.md": skillMd("inner", "In a group"),
        })
        const calls = yield* noteFirstScan(root)
        yield* withCatalog(
          [root],
          (catalog) =>
            Effect.gen(function* () {
              const snapshot = yield* catalog.peek
              expect(snapshot.skills.map((skill) => [skill.id, skill.description])).toEqual([
                ["inner", "In a group"],
                ["linked", "Through a link"],
                ["plain", "Plain"],
              ])
              expect(snapshot.skipped.map((skip) => [skip.id, skip.rule])).toEqual([
                ["big", "skill-unreadable"],
                ["broken", "frontmatter-unclosed"],
              ])
              const opened = (file: string) => calls.filter((call) => call.endsWith(` ${file}`))
              // One read each, for the four read (big is over the limit: not read).
              expect(calls.filter((call) => call === "read")).toHaveLength(4)
              for (const file of [
                "plain/SKILL.md",
                "broken/SKILL.md",
                "big/SKILL.md",
                "group/inner/SKILL.md",
              ])
                expect(opened(file)).toEqual([`openNoFollow ${file}`])
              // A link is refused by the open, then looked at as before; a denied skill is only
              // looked at.
              expect(opened("linked/SKILL.md")).toEqual([
                "openNoFollow linked/SKILL.md",
                "lstat linked/SKILL.md",
                "open linked/SKILL.md",
              ])
              expect(opened("denied/SKILL.md")).toEqual(["lstat denied/SKILL.md"])
              expect(opened("group/SKILL.md")).toEqual(["openNoFollow group/SKILL.md"])
              // A folder with no SKILL.md costs the failed open only.
              expect(opened("group/SKILL.md/SKILL.md")).toEqual(["openNoFollow group/SKILL.md/SKILL.md"])
            }),
          { maxFileBytes: 1_000, deny: ["denied"] },
        )
      }),
  )

  it.scoped("first scan: a catalog over --max-skills is not read whole while it is discovered", () =>
    Effect.gen(function* () {
      const tree: Record<string, string> = {}
      for (let index = 0; index < 12; index++)
        tree[`s${index + 10}/SKILL.md`] = skillMd(`s${index + 10}`, "d")
      const root = yield* tempTree(tree)
      const calls = yield* noteFirstScan(root)
      yield* withCatalog(
        [root],
        (catalog) =>
          Effect.gen(function* () {
            expect((yield* catalog.peek).skills.map((skill) => skill.id)).toEqual(["s10", "s11"])
            // Discovery opens and reads the first two it comes to and only looks at the others;
            // the build then reads the two served if they were not among them.
            const kind = (name: string) => calls.filter((call) => call.startsWith(`${name} s`))
            expect(kind("openNoFollow")).toHaveLength(2)
            expect(kind("lstat")).toHaveLength(10)
            const firstBuildOpen = calls.findIndex((call) => call.startsWith("open "))
            const duringDiscovery = firstBuildOpen === -1 ? calls : calls.slice(0, firstBuildOpen)
            expect(duringDiscovery.filter((call) => call === "read")).toHaveLength(2)
            expect(calls.filter((call) => call === "read").length).toBeLessThanOrEqual(4)
          }),
        { maxSkills: 2 },
      )
    }),
  )

  it.scoped("skips a SKILL.md over the file size limit: get_skill could not load it", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({
        "big/SKILL.md": skillMd("big", "Too big", "x".repeat(2_000)),
        "small/SKILL.md": skillMd("small", "Fits"),
      })
      yield* withCatalog(
        [root],
        (catalog) =>
          Effect.gen(function* () {
            const snapshot = yield* catalog.snapshot
            expect(snapshot.skills.map((skill) => skill.id)).toEqual(["small"])
            expect(snapshot.skipped.map((skip) => [skip.id, skip.rule])).toEqual([
              ["big", "skill-unreadable"],
            ])
            expect(snapshot.skipped[0]?.reason).toMatch(/^SKILL\.md is \d+ bytes, over the 1000-byte limit/)
          }),
        { maxFileBytes: 1_000 },
      )
    }),
  )

  it.scoped("looks up by id, then name, then ignoring case; suggests close ids", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({
        "pdf-tools/SKILL.md": skillMd("pdf-tools", "d"),
        "notes/SKILL.md": skillMd("Release Notes", "d"),
      })
      yield* withCatalog([root], (catalog) =>
        Effect.gen(function* () {
          expect((yield* catalog.get("pdf-tools")).id).toBe("pdf-tools")
          expect((yield* catalog.get("Release Notes")).id).toBe("notes")
          expect((yield* catalog.get("PDF-Tools")).id).toBe("pdf-tools")
          expect((yield* catalog.get("release notes")).id).toBe("notes")
          const missing = yield* Effect.flip(catalog.get("pdf-tool"))
          expect(missing._tag).toBe("SkillNotFound")
          expect(missing.suggestions).toEqual(["pdf-tools"])
          expect(missing.message).toContain("Skill 'pdf-tool' not found")
          expect(missing.message).toContain("list_skills")
        }),
      )
    }),
  )

  it.scoped("makes the lookups by name and case skill by skill or whole, the first skill winning", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({
        "a-one/SKILL.md": skillMd("Shared Name", "d"),
        "b-two/SKILL.md": skillMd("shared name", "d"),
        "c-three/SKILL.md": skillMd("Third", "d"),
      })
      yield* withCatalog([root], (catalog) =>
        Effect.gen(function* () {
          const snapshot = yield* catalog.peek
          expect(prepareLookups(snapshot)).toBe(true) // the first skill only
          // A lookup meanwhile completes them: the second and third skills are found.
          expect(snapshot.byName.get("Third")?.id).toBe("c-three")
          expect(snapshot.byName.get("shared name")?.id).toBe("b-two")
          expect(snapshot.byNameLower.get("shared name")?.id).toBe("a-one")
          expect(snapshot.byIdLower.get("b-two")?.id).toBe("b-two")
          expect(prepareLookups(snapshot)).toBe(false)
        }),
      )
    }),
  )

  it.scoped(
    "carries its lookups over an edit that replaces skills in place, the first skill still winning",
    () =>
      Effect.gen(function* () {
        const root = yield* tempTree({
          "a-one/SKILL.md": skillMd("Shared", "First."),
          "b-two/SKILL.md": skillMd("shared", "Second."),
        })
        const edit = (id: string, description: string) =>
          Effect.promise(() =>
            fs.writeFile(
              `${root}/${id}/SKILL.md`,
              skillMd(id === "a-one" ? "Shared" : "shared", description),
            ),
          )
        yield* withCatalog([root], (catalog) =>
          Effect.gen(function* () {
            expect((yield* catalog.peek).byNameLower.get("shared")?.id).toBe("a-one") // made whole

            yield* edit("b-two", "Second, edited.")
            yield* catalog.refreshPaths([`${root}/b-two/SKILL.md`])
            const once = yield* catalog.peek
            expect(prepareLookups(once)).toBe(false) // carried over, complete
            expect(once.byName.get("shared")).toBe(once.byId.get("b-two"))
            expect(once.byName.get("shared")?.description).toBe("Second, edited.")
            expect(once.byNameLower.get("shared")?.id).toBe("a-one")

            yield* edit("a-one", "First, edited.")
            yield* catalog.refreshPaths([`${root}/a-one/SKILL.md`])
            const twice = yield* catalog.peek
            expect(prepareLookups(twice)).toBe(false)
            expect(twice.byNameLower.get("shared")).toBe(twice.byId.get("a-one"))
            expect(twice.byNameLower.get("shared")?.description).toBe("First, edited.")
            expect(twice.byIdLower.get("a-one")).toBe(twice.byId.get("a-one"))
            expect(twice.byName.get("Shared")).toBe(twice.byId.get("a-one"))
            expect(twice.byName.get("shared")).toBe(once.byId.get("b-two"))
            // What get_skill and the search look through (the overlay, not the getters' whole maps).
            expect(findSkill(once, "shared")).toBe(once.byId.get("b-two"))
            expect(findSkill(once, "SHARED")).toBe(once.byId.get("a-one"))
            expect(findSkill(twice, "SHARED")?.description).toBe("First, edited.")
            expect(findSkill(twice, "B-TWO")).toBe(once.byId.get("b-two"))
            expect((yield* catalog.get("SHARED")).description).toBe("First, edited.")
          }),
        )
      }),
  )

  it.scoped("makes its lookups anew once edits have given more than 256 keys to other objects", () =>
    Effect.gen(function* () {
      const tree: Record<string, string> = {}
      const ids = Array.from({ length: 90 }, (_, i) => `s${String(i).padStart(2, "0")}`)
      for (const id of ids) tree[`${id}/SKILL.md`] = skillMd(id, `Skill ${id}.`)
      const root = yield* tempTree(tree)
      yield* withCatalog([root], (catalog) =>
        Effect.gen(function* () {
          expect(findSkill(yield* catalog.peek, "S00")?.id).toBe("s00") // made whole
          const files = ids.map((id) => `${root}/${id}/SKILL.md`)
          yield* Effect.promise(() =>
            Promise.all(
              ids.map((id, i) => fs.writeFile(files[i] ?? "", skillMd(id, `Skill ${id}, edited.`))),
            ),
          )
          yield* catalog.refreshPaths(files)
          const after = yield* catalog.peek
          expect(after.byId.get("s89")?.description).toBe("Skill s89, edited.")
          expect(prepareLookups(after)).toBe(true) // 270 keys: made anew
          expect(findSkill(after, "S89")).toBe(after.byId.get("s89"))
        }),
      )
    }),
  )

  // The first query after start found them unmade and V8's ranking code uncompiled: at 10,000
  // skills it took 25 to 40 ms, about 22 of them the lookups.
  it.scopedLive("makes the lookups of its first snapshot in the background, with the search index", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({
        "alpha/SKILL.md": skillMd("alpha", "Alpha."),
        "beta/SKILL.md": skillMd("beta", "Beta."),
      })
      yield* withCatalog([root], (catalog) =>
        Effect.gen(function* () {
          yield* catalog.warmSearch
          for (let waited = 0; waited < 5_000 && catalog.startingUp(); waited++)
            yield* Effect.sleep("1 millis")
          expect(catalog.startingUp()).toBe(false)
          expect(prepareLookups(yield* catalog.peek)).toBe(false)
        }),
      )
    }),
  )

  it.scopedLive("once queries are made, makes a changed catalog's lookups in the background", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({ "alpha/SKILL.md": skillMd("alpha", "Alpha.") })
      yield* withCatalog([root], (catalog) =>
        Effect.gen(function* () {
          yield* catalog.warmSearch
          for (let waited = 0; waited < 5_000 && catalog.startingUp(); waited++)
            yield* Effect.sleep("1 millis")
          yield* Effect.promise(async () => {
            await fs.mkdir(`${root}/beta`)
            await fs.writeFile(`${root}/beta/SKILL.md`, skillMd("beta", "Beta."))
          })
          yield* catalog.refreshPaths([`${root}/beta`]) // the root's event: the skill is added
          const added = yield* catalog.peek
          expect(added.byId.get("beta")?.id).toBe("beta")
          yield* Effect.sleep("50 millis") // the background's slices (no query meanwhile)
          expect(prepareLookups(added)).toBe(false)
        }),
      )
    }),
  )

  it.scoped("filters by every word of a query and pages with cursors", () =>
    Effect.gen(function* () {
      const tree: Record<string, string> = {}
      for (let i = 0; i < 25; i++)
        tree[`s${String(i).padStart(2, "0")}/SKILL.md`] = skillMd(`s${i}`, `Skill number ${i}`)
      tree["pdf/SKILL.md"] = skillMd("pdf", "Extract TEXT from PDF files")
      const root = yield* tempTree(tree)
      yield* withCatalog(
        [root],
        (catalog) =>
          Effect.gen(function* () {
            const found = yield* catalog.list({ query: "text pdf" })
            expect(found.skills.map((skill) => skill.id)).toEqual(["pdf"])
            expect((yield* catalog.list({ query: "nothing matches" })).total).toBe(0)
            const first = yield* catalog.list({})
            expect(first.skills).toHaveLength(10)
            expect(first.total).toBe(26)
            const ids = first.skills.map((skill) => skill.id)
            let cursor = first.nextCursor
            while (cursor !== undefined) {
              const page = yield* catalog.list({ cursor })
              ids.push(...page.skills.map((skill) => skill.id))
              cursor = page.nextCursor
            }
            expect(new Set(ids).size).toBe(26)
            expect((yield* catalog.list({ limit: 500 })).skills).toHaveLength(10)
            const bad = yield* Effect.flip(catalog.list({ cursor: "garbage" }))
            expect(bad._tag).toBe("InvalidArgument")
          }),
        { pageSize: 10 },
      )
    }),
  )

  it.scoped("picks up added, edited and removed skills on the next call, re-parsing only what changed", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({ "a/SKILL.md": skillMd("a", "A"), "b/SKILL.md": skillMd("b", "B") })
      yield* withCatalog([root], (catalog) =>
        Effect.gen(function* () {
          const before = yield* catalog.snapshot
          yield* Effect.promise(() => fs.writeFile(`${root}/b/SKILL.md`, skillMd("b", "B, edited")))
          yield* Effect.promise(() => fs.mkdir(`${root}/c`))
          yield* Effect.promise(() => fs.writeFile(`${root}/c/SKILL.md`, skillMd("c", "C")))
          const after = yield* catalog.snapshot
          expect(after.skills.map((skill) => [skill.id, skill.description])).toEqual([
            ["a", "A"],
            ["b", "B, edited"],
            ["c", "C"],
          ])
          // Unchanged skills are the very same objects: nothing was re-read for them.
          expect(after.byId.get("a")).toBe(before.byId.get("a"))
          expect(after.version).toBe(before.version + 1)
          yield* Effect.promise(() => fs.rm(`${root}/a`, { recursive: true }))
          const removed = yield* catalog.snapshot
          expect(removed.skills.map((skill) => skill.id)).toEqual(["b", "c"])
        }),
      )
    }),
  )

  it.scoped("publishes each change once on `changes`", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({ "a/SKILL.md": skillMd("a", "A") })
      yield* withCatalog([root], (catalog) =>
        Effect.gen(function* () {
          const collected = yield* catalog.changes.pipe(Stream.take(1), Stream.runCollect, Effect.fork)
          yield* Effect.yieldNow()
          yield* Effect.promise(() => fs.mkdir(`${root}/b`))
          yield* Effect.promise(() => fs.writeFile(`${root}/b/SKILL.md`, skillMd("b", "B")))
          yield* catalog.refresh
          const [change] = yield* Fiber.join(collected)
          expect(change).toMatchObject({ added: ["b"], removed: [], changed: [] })
        }),
      )
    }),
  )

  it.scoped("throttles the disk check to the refresh interval", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({ "a/SKILL.md": skillMd("a", "A") })
      yield* withCatalog(
        [root],
        (catalog) =>
          Effect.gen(function* () {
            yield* Effect.promise(() => fs.writeFile(`${root}/a/SKILL.md`, skillMd("a", "A2")))
            // Within the interval the index is not re-checked...
            expect((yield* catalog.snapshot).byId.get("a")?.description).toBe("A")
            // ...and an explicit refresh sees the edit.
            yield* catalog.refresh
            expect((yield* catalog.snapshot).byId.get("a")?.description).toBe("A2")
          }),
        { refreshIntervalMs: 60_000 },
      )
    }),
  )

  it.scoped("stops indexing at maxSkills", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({
        "a/SKILL.md": skillMd("a", "A"),
        "b/SKILL.md": skillMd("b", "B"),
        "c/SKILL.md": skillMd("c", "C"),
      })
      yield* withCatalog(
        [root],
        (catalog) => Effect.map(catalog.snapshot, (s) => expect(s.skills).toHaveLength(2)),
        {
          maxSkills: 2,
        },
      )
    }),
  )
})

/** Numbers below n from a fixed seed (a linear congruential generator): the same every run. */
const seeded = (start: number) => {
  let seed = start
  return (n: number) => {
    seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648
    return seed % n
  }
}

describe("Catalog helpers", () => {
  it("computes edit distances", () => {
    expect(editDistance("kitten", "sitting")).toBe(3)
    expect(editDistance("", "abc")).toBe(3)
    expect(editDistance("abc", "")).toBe(3)
    // With a limit: the distance when within it, limit + 1 when over it, on random pairs
    // against the full matrix.
    const full = (x: string, y: string) => {
      const rows = Array.from({ length: x.length + 1 }, (_, i) =>
        Array.from({ length: y.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
      )
      for (let i = 1; i <= x.length; i++)
        for (let j = 1; j <= y.length; j++) {
          const row = rows[i] ?? []
          const above = rows[i - 1] ?? []
          row[j] = Math.min(
            (above[j] ?? 0) + 1,
            (row[j - 1] ?? 0) + 1,
            (above[j - 1] ?? 0) + (x[i - 1] === y[j - 1] ? 0 : 1),
          )
        }
      return rows[x.length]?.[y.length] ?? 0
    }
    const random = seeded(7)
    const word = () => Array.from({ length: random(12) }, () => "abcd-"[random(5)]).join("")
    for (let round = 0; round < 2_000; round++) {
      const [x, y, limit] = [word(), word(), random(6)]
      const distance = full(x, y)
      expect(editDistance(x, y)).toBe(distance)
      expect(editDistance(x, y, limit)).toBe(distance <= limit ? distance : limit + 1)
    }
  })

  it("round-trips cursors and refuses foreign ones", () => {
    expect(decodeCursor(encodeCursor(42))).toEqual(Either.right(42))
    expect(Either.isLeft(decodeCursor("bm9wZQ"))).toBe(true)
  })

  it("suggests only ids a typo or two away", () => {
    const skills = ["pdf-processing", "webapp-testing", "api-design", "docx"].map((id) => ({ id }) as never)
    expect(closestIds(skills, "pdf-procesing")).toEqual(["pdf-processing"])
    expect(closestIds(skills, "DOCS")).toEqual(["docx"])
    expect(closestIds(skills, "testing")).toEqual(["webapp-testing"])
  })

  it("suggests what comparing every id in full would, with its shortcuts", () => {
    const random = seeded(11)
    const word = () => Array.from({ length: 1 + random(14) }, () => "abcdeABé-"[random(9)]).join("")
    const reference = (ids: ReadonlyArray<string>, query: string) => {
      const needle = query.toLowerCase()
      return ids
        .flatMap((raw) => {
          const id = raw.toLowerCase()
          const limit = Math.max(2, Math.max(needle.length, id.length) / 3)
          if (id.includes(needle) || needle.includes(id)) return [{ id: raw, distance: 0.5 }]
          const distance = editDistance(needle, id)
          return distance <= limit ? [{ id: raw, distance }] : []
        })
        .sort((x, y) => x.distance - y.distance || (x.id < y.id ? -1 : 1))
        .slice(0, 3)
        .map((entry) => entry.id)
    }
    for (let round = 0; round < 300; round++) {
      const ids = [...new Set(Array.from({ length: 40 }, word))]
      const query = word()
      expect(
        closestIds(
          ids.map((id) => ({ id }) as never),
          query,
        ),
      ).toEqual(reference(ids, query))
    }
  })

  it("suggests nothing for an unrelated query", () => {
    const skills = [{ id: "pdf" }, { id: "docx" }] as const
    expect(
      closestIds(
        skills.map((s) => ({ ...s }) as never),
        "zzzzzzzzzz",
      ),
    ).toEqual([])
  })
})
