import * as fs from "node:fs/promises"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import MiniSearch from "minisearch"
import { Catalog } from "../src/catalog/Catalog.js"
import type { Searchable } from "../src/catalog/Search.js"
import { INDEX_OPTIONS, makeSearchIndex, searchWords } from "../src/catalog/Search.js"
import { servicesFor } from "./support/layers.js"
import { skillMd, tempTree } from "./support/tree.js"

const skill = (id: string, description: string, name = id): Searchable => ({ id, name, description })

const indexOf = (skills: ReadonlyArray<Searchable>) => {
  const index = makeSearchIndex()
  index.sync(skills, new Map(skills.map((entry) => [entry.id, entry])))
  const rank = (query: string) => {
    const { skills: ranked, match } = index.rank(query)
    return { ids: ranked.map((entry) => entry.id), match }
  }
  return { index, rank }
}

const corpus = [
  skill("csv-tools", "Convert CSV files and clean columns."),
  skill("pdf-processing", "Extract text and tables from PDF files, fill PDF forms."),
  skill("spreadsheets", "Create spreadsheets with formulas and charts."),
  skill("notes", "Write release notes from commits.", "Release Notes"),
  skill("forms", "Fill web forms in a browser."),
  skill("pdf", "Merge PDF documents."),
]

describe("search words", () => {
  it("split on anything but letters and digits, lowercase, without stop words", () => {
    expect(searchWords("Fill the PDF-forms of a Web_app, v2!")).toEqual([
      "fill",
      "pdf",
      "forms",
      "web",
      "app",
      "v2",
    ])
    expect(searchWords("the and of")).toEqual([])
  })
})

describe("search index", () => {
  it("ranks an id or name match above a description match, then catalog order on equal scores", () => {
    const { rank } = indexOf(corpus)
    const ranking = rank("pdf")
    expect(ranking.match).toBe("all")
    expect(ranking.ids[0]).toBe("pdf")
    expect(new Set(ranking.ids)).toEqual(new Set(["pdf", "pdf-processing"]))
  })

  it("matches word beginnings and small typos", () => {
    const { rank } = indexOf(corpus)
    expect(rank("spread").ids).toEqual(["spreadsheets"])
    expect(rank("spredsheets").ids).toEqual(["spreadsheets"])
    expect(rank("relese notes").ids).toEqual(["notes"])
  })

  it("ranks skills matching every word; only when none does, those matching some", () => {
    const { rank } = indexOf(corpus)
    expect(rank("pdf forms")).toEqual({ ids: ["pdf-processing"], match: "all" })
    const some = rank("pdf browser")
    expect(some.match).toBe("any")
    expect(new Set(some.ids)).toEqual(new Set(["pdf", "pdf-processing", "forms"]))
    expect(rank("kubernetes")).toEqual({ ids: [], match: "all" })
    expect(rank("the of")).toEqual({ ids: [], match: "all" })
  })

  it("follows edits, additions and removals, re-indexing only what changed", () => {
    const { index, rank } = indexOf(corpus)
    const edited = [...corpus.slice(1), skill("csv-tools", "Plot zebras."), skill("zoo", "Feed zebras.")]
    index.sync(edited, new Map(edited.map((entry) => [entry.id, entry])))
    expect(new Set(rank("zebras").ids)).toEqual(new Set(["csv-tools", "zoo"]))
    expect(rank("columns").ids).toEqual([])
    const removed = edited.filter((entry) => entry.id !== "zoo")
    index.sync(removed, new Map(removed.map((entry) => [entry.id, entry])))
    expect(rank("zebras").ids).toEqual(["csv-tools"])
    expect(index.size()).toBe(removed.length)
  })
})

/**
 * The ranking as MiniSearch's own `search` gives it, with the options the index ranks by:
 * the reference the faster ranking must equal, order included.
 */
const referenceRank = (skills: ReadonlyArray<Searchable>, query: string): Array<string> => {
  const mini = new MiniSearch<Searchable>(INDEX_OPTIONS)
  mini.addAll([...skills])
  const holds = (term: string) => mini.search(term, { prefix: false, fuzzy: false }).length > 0
  const options = {
    boost: { names: 3 },
    prefix: true,
    fuzzy: (term: string) => (holds(term) ? false : term.length >= 9 ? 2 : term.length >= 5 ? 1 : false),
  }
  const words = [...new Set(searchWords(query))].join(" ")
  const every = mini.search(words, { ...options, combineWith: "AND" })
  const results = every.length > 0 ? every : mini.search(words, { ...options, combineWith: "OR" })
  const order = new Map(skills.map((entry, at) => [entry.id, at]))
  return results
    .map((result) => ({ id: String(result.id), score: result.score }))
    .sort((a, b) => b.score - a.score || (order.get(a.id) ?? 0) - (order.get(b.id) ?? 0))
    .map((result) => result.id)
}

describe("search ranking", () => {
  /** A deterministic catalog whose words overlap, begin one another and differ by a letter. */
  const generated = (count = 400): Array<Searchable> => {
    const words = [
      "report",
      "reports",
      "reporting",
      "deploy",
      "deployment",
      "deployments",
      "test",
      "tests",
      "testing",
      "chart",
      "charts",
      "charting",
      "review",
      "reviews",
      "data",
      "database",
      "datasets",
      "kubernetes",
      "cluster",
      "clusters",
      "invoice",
      "invoices",
      "translate",
      "translation",
      "template",
      "templates",
      "schema",
      "schemas",
      "golang",
      "python",
    ]
    let seed = 7
    const next = (below: number) => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0
      return seed % below
    }
    return Array.from({ length: count }, (_, at) => {
      const pick = () => words[next(words.length)] ?? "data"
      const id = `${pick()}-${pick()}-${at}`
      const description = Array.from({ length: 4 + next(12) }, pick).join(" ")
      return skill(id, `${description}.`, next(4) === 0 ? `${pick()} ${pick()}` : id)
    })
  }

  it("equals MiniSearch's own search, order included", () => {
    const skills = generated()
    const { index, rank } = indexOf(skills)
    const queries = [
      "report",
      "rep",
      "deplo",
      "testing charts",
      "review data schemas",
      "kubernetes",
      "translaton",
      "tempaltes",
      "golang python",
      "invoice clusters reports",
      "databse",
      "chart zebra",
      "reporting deployment templates translate",
    ]
    for (const query of queries) {
      const expected = referenceRank(skills, query)
      expect(expected.length, query).toBeGreaterThan(0)
      expect(rank(query).ids, query).toEqual(expected)
    }
    // Ten skills removed (fewer than MiniSearch's vacuum waits for: they stay in the postings)
    // and one moved to the end.
    const [first, ...others] = skills.filter((_, at) => at % 40 !== 3)
    const remaining = first === undefined ? others : [...others, first]
    index.sync(remaining, new Map(remaining.map((entry) => [entry.id, entry])))
    for (const query of queries) expect(rank(query).ids, query).toEqual(referenceRank(remaining, query))
  })

  it("ranks 3,000 equal scores in catalog order, not in the order they were indexed", () => {
    const skills = Array.from({ length: 3000 }, (_, at) =>
      skill(`tie-${String(at).padStart(4, "0")}`, "Alpha beta."),
    )
    const { index, rank } = indexOf(skills)
    // Positions past 2,047 (more than one digit of the radix sort), unrelated to the numbering.
    const shuffled = skills.flatMap((_, at) => skills[(at * 1237) % skills.length] ?? [])
    expect(new Set(shuffled).size).toBe(skills.length)
    index.sync(shuffled, new Map(shuffled.map((entry) => [entry.id, entry])))
    expect(rank("alpha").ids).toEqual(shuffled.map((entry) => entry.id))
  })

  it("equals it in a catalog of 5,000 whose order is not the one the skills were indexed in", () => {
    // Rankings of thousands, catalog positions above 2,047 (more than one digit of the radix
    // sort, see SkillIndex.bestFirst), and ties broken by a position unrelated to the numbering.
    const skills = generated(5000)
    const { index, rank } = indexOf(skills)
    const reordered = [
      ...skills.filter((_, at) => at % 2 === 1).reverse(),
      ...skills.filter((_, at) => at % 2 === 0),
    ]
    index.sync(reordered, new Map(reordered.map((entry) => [entry.id, entry])))
    const lengths = ["report", "testing charts", "review data schemas", "translaton", "golang python"].map(
      (query) => {
        const expected = referenceRank(reordered, query)
        expect(rank(query).ids, query).toEqual(expected)
        return expected.length
      },
    )
    expect(Math.min(...lengths)).toBeGreaterThan(100)
    expect(Math.max(...lengths)).toBeGreaterThan(2048)
  })

  it("counts and scores only current skills while removed ones wait in the postings", () => {
    const removed = Array.from({ length: 9 }, (_, at) => skill(`gone-${at}`, "Alpha alpha beta."))
    const current = [skill("x", "Alpha."), skill("y", "Beta.")]
    const { index, rank } = indexOf([...current, ...removed])
    index.sync(current, new Map(current.map((entry) => [entry.id, entry])))
    // Only removed skills hold both words: the current ones holding either are ranked. Counting
    // the removed holders of "alpha" (more than of "beta") would also put y first.
    expect(rank("alpha beta")).toEqual({ ids: ["x", "y"], match: "any" })
    expect(referenceRank(current, "alpha beta")).toEqual(["x", "y"])
    expect(rank("alpha")).toEqual({ ids: ["x"], match: "all" })
  })

  it("stays equal to MiniSearch's search once removed skills are purged and skills numbered again", () => {
    const skills = generated()
    const { index, rank } = indexOf(skills)
    const queries = ["report", "deplo", "testing charts", "translaton", "invoice clusters reports", "golang"]
    const syncTo = (next: ReadonlyArray<Searchable>) => {
      index.sync(next, new Map(next.map((entry) => [entry.id, entry])))
      for (const query of queries) expect(rank(query).ids, query).toEqual(referenceRank(next, query))
    }
    // Half removed (more than a quarter: purged), then some edited and new ones added, which
    // take numbers after the purge.
    const half = skills.filter((_, at) => at % 2 === 0)
    syncTo(half)
    const edited = half.map((entry, at) => (at % 10 === 0 ? skill(entry.id, "Golang reports.") : entry))
    syncTo([
      ...edited,
      skill("fresh-golang", "Golang testing charts."),
      skill("fresh-invoice", "Invoice clusters."),
    ])
    expect(index.size()).toBe(half.length + 2)
  })

  it("gives a term number freed by a purge to a new word with no postings of the old one", () => {
    const { index, rank } = indexOf([])
    const syncTo = (next: ReadonlyArray<Searchable>) =>
      index.sync(next, new Map(next.map((entry) => [entry.id, entry])))
    const many = Array.from({ length: 200 }, (_, at) =>
      skill(`k${at}`, at % 2 === 1 ? `odd${at} common` : "common"),
    )
    syncTo(many)
    const kept = many.filter((_, at) => at % 2 === 0)
    syncTo(kept) // 100 removed, more than 64 and a quarter of 100: purged, their words freed
    syncTo([...kept, skill("fresh", "fresh")])
    expect(rank("fresh").ids).toEqual(["fresh"])
    // A word that left is no longer found, not even through the number it had.
    for (let at = 1; at < 200; at += 2) expect(rank(`odd${at}`).ids).toEqual([])
  })

  it("counts every occurrence a description within the limits can hold", () => {
    // 300 times a two-letter word and 30 other words: a 1,019-character description, ranked
    // above one saying it 10 times in 4 words only when all 300 count (not 32, say).
    const others = Array.from({ length: 30 }, (_, at) => `w${String(at).padStart(2, "0")}`).join(" ")
    const skills = [
      skill("repeated", `${"go ".repeat(300)}${others}`),
      skill("ten", `${"go ".repeat(10)}x y z`),
      ...Array.from({ length: 5 }, (_, at) => skill(`other-${at}`, "Something else entirely today.")),
    ]
    expect(skills[0]?.description.length).toBeLessThanOrEqual(1024)
    expect(referenceRank(skills, "go")).toEqual(["repeated", "ten"])
    const { rank } = indexOf(skills)
    expect(rank("go").ids).toEqual(referenceRank(skills, "go"))
  })
})

describe("Catalog search", () => {
  const tree = () => {
    const files: Record<string, string> = {}
    for (let i = 0; i < 30; i++) {
      const id = `report-${String(i).padStart(2, "0")}`
      files[`${id}/SKILL.md`] = skillMd(id, `Build ${i % 3 === 0 ? "quarterly sales" : "weekly"} reports.`)
    }
    files["sales/SKILL.md"] = skillMd("sales", "Sales dashboards.")
    return files
  }

  it.scoped("puts an exact id first and pages through a ranking in one order", () =>
    Effect.gen(function* () {
      const root = yield* tempTree(tree())
      yield* Effect.gen(function* () {
        const catalog = yield* Catalog
        const whole = yield* catalog.list({ query: "sales reports", limit: 100 })
        expect(whole.total).toBe(10)
        const first = yield* catalog.list({ query: "Sales" })
        expect(first.skills[0]?.id).toBe("sales")
        expect(first.match).toBe("all")
        const paged: Array<string> = []
        let cursor: string | undefined
        do {
          const page = yield* catalog.list({
            query: "sales reports",
            limit: 3,
            ...(cursor ? { cursor } : {}),
          })
          paged.push(...page.skills.map((entry) => entry.id))
          cursor = page.nextCursor
        } while (cursor !== undefined)
        expect(paged).toEqual(whole.skills.map((entry) => entry.id))
        // Without a query: catalog order, as before.
        expect((yield* catalog.list({ limit: 2 })).skills.map((entry) => entry.id)).toEqual([
          "report-00",
          "report-01",
        ])
      }).pipe(Effect.provide(servicesFor([root], { pageSize: 50 })))
    }),
  )

  it.scoped("refuses a cursor of another query, keeps a ranking's order across a change", () =>
    Effect.gen(function* () {
      const root = yield* tempTree(tree())
      yield* Effect.gen(function* () {
        const catalog = yield* Catalog
        const first = yield* catalog.list({ query: "weekly", limit: 5 })
        const cursor = first.nextCursor ?? ""
        const other = yield* Effect.flip(catalog.list({ query: "sales", cursor }))
        expect(other._tag).toBe("InvalidArgument")
        const plain = yield* Effect.flip(catalog.list({ cursor }))
        expect(plain._tag).toBe("InvalidArgument")
        // A skill of the ranking is removed and one is added: the next page continues the
        // same ranking, showing skills as they are now.
        const all = (yield* catalog.list({ query: "weekly", limit: 50 })).skills.map((entry) => entry.id)
        const gone = all[6] ?? ""
        yield* Effect.promise(() => fs.rm(`${root}/${gone}`, { recursive: true }))
        yield* Effect.promise(() => fs.mkdir(`${root}/aaa-weekly`))
        yield* Effect.promise(() =>
          fs.writeFile(`${root}/aaa-weekly/SKILL.md`, skillMd("aaa-weekly", "Weekly.")),
        )
        const second = yield* catalog.list({ query: "weekly", limit: 5, cursor })
        expect(second.skills.map((entry) => entry.id)).toEqual(all.slice(5, 10).filter((id) => id !== gone))
        // A new search sees the change.
        const fresh = yield* catalog.list({ query: "weekly", limit: 50 })
        expect(fresh.skills.map((entry) => entry.id)).toContain("aaa-weekly")
        expect(fresh.skills.map((entry) => entry.id)).not.toContain(gone)
      }).pipe(Effect.provide(servicesFor([root], { pageSize: 50 })))
    }),
  )
})
