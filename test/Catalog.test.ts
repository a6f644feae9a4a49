import * as fs from "node:fs/promises"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Stream from "effect/Stream"
import { Catalog } from "../src/catalog/Catalog.js"
import { decodeCursor, encodeCursor } from "../src/catalog/Paging.js"
import { closestIds, editDistance } from "../src/catalog/Suggestions.js"
import { servicesFor } from "./support/layers.js"
import { skillMd, tempTree } from "./support/tree.js"

/** Runs `body` against a Catalog over the given roots. */
const withCatalog = <A, E>(
  roots: ReadonlyArray<string>,
  body: (catalog: Catalog) => Effect.Effect<A, E>,
  overrides: Parameters<typeof servicesFor>[1] = {},
) => Effect.flatMap(Catalog, body).pipe(Effect.provide(servicesFor(roots, overrides)))

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

  it.scoped("gives a name or a case-folded key to the first skill in catalog order, and follows edits", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({
        "a-one/SKILL.md": skillMd("Shared", "First."),
        "b-two/SKILL.md": skillMd("shared", "Second."),
        "c-three/SKILL.md": skillMd("Third", "Third."),
      })
      yield* withCatalog([root], (catalog) =>
        Effect.gen(function* () {
          expect((yield* catalog.get("shared")).id).toBe("b-two") // exact name first
          expect((yield* catalog.get("SHARED")).id).toBe("a-one") // then ignoring case, first wins
          expect((yield* catalog.get("B-TWO")).id).toBe("b-two")
          expect((yield* catalog.get("third")).id).toBe("c-three")
          yield* Effect.promise(() =>
            fs.writeFile(`${root}/b-two/SKILL.md`, skillMd("shared", "Second, edited.")),
          )
          expect((yield* catalog.get("shared")).description).toBe("Second, edited.")
          expect((yield* catalog.get("SHARED")).id).toBe("a-one")
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
