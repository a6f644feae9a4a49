import * as fs from "node:fs/promises"
import { describe, expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import { Catalog } from "../src/catalog/Catalog.js"
import type { Ranking } from "../src/catalog/Ranking.js"
import type { Searchable } from "../src/catalog/Search.js"
import { makeSearchIndex } from "../src/catalog/Search.js"
import { makeSearching } from "../src/catalog/Searching.js"
import { makeSnapshot } from "../src/catalog/Snapshot.js"
import { MAX_PAUSE_WAIT_MS, makeCalls } from "../src/platform/EventLoop.js"
import { servicesFor } from "./support/layers.js"
import { fakeSkill } from "./support/skills.js"
import { skillMd, tempTree } from "./support/tree.js"

const skill = (id: string, description: string, name = id): Searchable => ({ id, name, description })

/** Every skill of a ranking, in order. */
const allOf = <S extends Searchable>(ranking: Ranking<S>) => ranking.slice(0, ranking.total)

const indexOf = (skills: ReadonlyArray<Searchable>) => {
  const index = makeSearchIndex()
  index.sync(skills, new Map(skills.map((entry) => [entry.id, entry])))
  const rank = (query: string) => {
    const ranking = index.rank(query)
    return { ids: allOf(ranking).map((entry) => entry.id), match: ranking.match }
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

  it("takes a word some skill holds as meant, not as a typo of another", () => {
    const { rank } = indexOf([...corpus, skill("norms", "Check house norms.")])
    // Exact matches first, then a word its term ("form") begins.
    expect(rank("forms").ids).toEqual(["forms", "pdf-processing", "spreadsheets"])
    expect(rank("norms").ids).toEqual(["norms"])
    expect(new Set(rank("formz").ids)).toEqual(new Set(["forms", "pdf-processing"]))
  })

  it("ranks skills matching more of the query's words first, then those matching some", () => {
    const { rank } = indexOf(corpus)
    const both = rank("pdf forms")
    expect(both.match).toBe("all")
    expect(both.ids[0]).toBe("pdf-processing")
    expect(new Set(both.ids)).toEqual(new Set(["pdf-processing", "pdf", "forms", "spreadsheets"]))
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
    expect(index.size().skills).toBe(removed.length)
  })
})

/** The ranking a fresh index of `skills` gives: what an index kept in step must give too. */
const freshRank = (skills: ReadonlyArray<Searchable>, query: string): Array<string> =>
  indexOf(skills).rank(query).ids

describe("search among a caller's skills", () => {
  // Over HTTP with --auth a caller searches only the skills it may see: the ranking must be the
  // one an index of only those skills gives (counts, lengths, typos), or it would tell of others.
  const words = ["pdf", "forms", "merge", "tables", "charts", "zebra", "stripes", "deploy", "docker", "notes"]
  let seed = 7
  const next = () => {
    seed = (seed * 1103515245 + 12345) % 2147483648
    return seed
  }
  const many = Array.from({ length: 240 }, (_, at) =>
    skill(
      `skill-${at}`,
      Array.from({ length: 2 + (next() % 6) }, () => words[next() % words.length]).join(" "),
    ),
  )
  // Only hidden skills hold "confidential": for the caller it is an unknown word, open to typos.
  const hidden = [skill("secret-a", "confidential merger"), skill("secret-b", "confidential zebra")]
  const all = [
    ...many.slice(0, 120),
    ...hidden,
    ...many.slice(120),
    skill("skill-1001", "confidental handbook"),
  ]
  const keep = (entry: Searchable) => !entry.id.startsWith("secret") && Number(entry.id.slice(6)) % 3 !== 0
  const kept = all.filter(keep)

  it.each([
    "pdf",
    "zebra stripes",
    "merge pdf forms",
    "docker deploy notes",
    "confidential",
    "confidentail merge",
    "charts tables zebra pdf",
  ])("ranks %s as an index of only those skills would", (query) => {
    const { index } = indexOf(all)
    const viewed = index.rank(query, { within: keep })
    const fresh = indexOf(kept).rank(query)
    expect({ ids: allOf(viewed).map((entry) => entry.id), match: viewed.match }).toEqual(fresh)
    expect(allOf(viewed).some((entry) => entry.id.startsWith("secret"))).toBe(false)
  })
})

describe("search among a caller's skills as the index changes", () => {
  // A caller's view is asked again and again with the same `within` function (one per view of a
  // snapshot): what the index made of it must follow bodies indexed and skills that leave.
  const skills = Array.from({ length: 60 }, (_, at) =>
    skill(`s-${at}`, at % 2 === 0 ? "Zebra stripes." : "Stripes and more stripes, and zebra crossings."),
  )
  const within = (entry: Searchable) => Number(entry.id.slice(2)) % 3 !== 0
  const bodyOf = (at: number) => `${"zebra ".repeat(1 + (at % 5))}${"word ".repeat(at % 17)}`
  const idsOf = (ranking: Ranking<Searchable>) => allOf(ranking).map((entry) => entry.id)

  it("ranks as a fresh index of the view's skills after bodies come and skills leave", () => {
    const { index } = indexOf(skills)
    const fresh = indexOf(skills.filter(within))
    expect(idsOf(index.rank("zebra stripe", { within }))).toEqual(fresh.rank("zebra stripe").ids)
    skills.forEach((entry, at) => {
      if (at % 2 === 1) return
      index.addBody(entry, bodyOf(at))
      if (within(entry)) fresh.index.addBody(entry, bodyOf(at))
    })
    expect(idsOf(index.rank("zebra stripe", { within }))).toEqual(fresh.rank("zebra stripe").ids)
    const left = skills.filter((_, at) => at % 4 !== 1)
    index.sync(left, new Map(left.map((entry) => [entry.id, entry])))
    const kept = left.filter(within)
    fresh.index.sync(kept, new Map(kept.map((entry) => [entry.id, entry])))
    expect(idsOf(index.rank("zebra stripe", { within }))).toEqual(fresh.rank("zebra stripe").ids)
  })
})

describe("search over bodies", () => {
  const skills = [
    skill("described", "Draw zebra stripes."),
    skill("headed", "Paint animals."),
    skill("mentioned", "Paint more animals."),
    skill("silent", "Nothing here."),
  ]

  it("finds words only a body holds: a heading above the text, both below the description", () => {
    const { index, rank } = indexOf(skills)
    expect(rank("zebra").ids).toEqual(["described"])
    expect(index.addBody(skills[1] as Searchable, "# Zebra stripes\n\nHow to paint them.")).toBe(true)
    expect(index.addBody(skills[2] as Searchable, "# Stripes\n\nA zebra has them.")).toBe(true)
    expect(index.addBody(skills[3] as Searchable, "Nothing about it.")).toBe(true)
    expect(rank("zebra").ids).toEqual(["described", "headed", "mentioned"])
    expect(index.size()).toEqual({ skills: 4, bodies: 3 })
  })

  it("indexes a body once, and only for the skill object indexed: an edit takes a new body", () => {
    const { index, rank } = indexOf(skills)
    const old = skills[3] as Searchable
    expect(index.addBody(old, "Zebra crossing.")).toBe(true)
    expect(index.addBody(old, "Twice.")).toBe(false)
    const edited = skill("silent", "Nothing here, still.")
    const current = [...skills.slice(0, 3), edited]
    index.sync(current, new Map(current.map((entry) => [entry.id, entry])))
    // The old object's body went with it; a late read of it is not taken for the new one.
    expect(rank("crossing").ids).toEqual([])
    expect(index.addBody(old, "Zebra crossing.")).toBe(false)
    expect(index.addBody(edited, "Pelican crossing.")).toBe(true)
    expect(rank("crossing").ids).toEqual(["silent"])
    expect(rank("zebra").ids).toEqual(["described"])
  })

  it("matches other forms of a word through its stem, typed or indexed", () => {
    const { index, rank } = indexOf([skill("debugging", "Find bugs."), skill("other", "Other things.")])
    index.addBody(
      index.rank("bugs").slice(0, 1)[0] as Searchable,
      "When a test fails, trace the failure to its root cause.",
    )
    expect(rank("my tests keep failing").ids[0]).toBe("debugging")
    expect(rank("tested").ids).toEqual(["debugging"])
  })
})

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

  it("ranks as a fresh index of the same skills after removals and a move", () => {
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
    for (const query of queries) expect(rank(query).ids.length, query).toBeGreaterThan(0)
    // Ten skills removed and one moved to the end.
    const [first, ...others] = skills.filter((_, at) => at % 40 !== 3)
    const remaining = first === undefined ? others : [...others, first]
    index.sync(remaining, new Map(remaining.map((entry) => [entry.id, entry])))
    for (const query of queries) expect(rank(query).ids, query).toEqual(freshRank(remaining, query))
  })

  it("pages through a ranking in the order of a full sort, as a view, with a first skill and only some shown", () => {
    // Two indexes of the same skills (bodies for a third of them): one gives the reference, a
    // whole ranking sorted at once; the other is asked page by page, the queries in reverse order
    // (a ranking must not depend on the ones before it).
    const skills = generated(3000)
    const bodyOf = (entry: Searchable) => `# ${entry.id.split("-")[0]}\n\n${entry.description} templates`
    const reference = indexOf(skills).index
    const paged = indexOf(skills).index
    for (const [at, entry] of skills.entries()) {
      if (at % 3 !== 0) continue
      reference.addBody(entry, bodyOf(entry))
      paged.addBody(entry, bodyOf(entry))
    }
    const words = ["report", "deploy", "testing", "charts", "review", "database", "kubernetes", "invoice"]
    const queries = [
      ...words,
      ...words.map((word) => word.slice(0, 3)),
      ...words.map((word) => `${word.slice(0, 2)}${word.slice(3)}`),
      ...words.map((word, at) => `${word} ${words[(at + 3) % words.length]}`),
      "translaton tempaltes golang",
      "python zebra",
      "data",
      "the",
    ]
    const within = (entry: Searchable) => !entry.id.endsWith("7")
    const shown = (entry: Searchable) => entry.id.length % 4 !== 0
    const first = skills[1234]
    const cases = queries.flatMap((query) => [
      { query, options: {} },
      { query, options: { within } },
      { query, options: { within, first, shown } },
      { query, options: { first } },
    ])
    const expected = cases.map(({ query, options }) => {
      const whole = reference.rank(query, { within: options.within })
      const all = allOf(whole)
      const firstOf =
        options.first === undefined ? all : [options.first, ...all.filter((entry) => entry !== options.first)]
      const ids = firstOf.filter(options.shown ?? (() => true)).map((entry) => entry.id)
      return { ids, total: ids.length, match: whole.match }
    })
    expect(expected.filter(({ total }) => total > 500).length).toBeGreaterThan(20)
    const sizes = [1, 3, 20, 7, 50]
    for (const [at, { query, options }] of [...cases.entries()].reverse()) {
      const ranking = paged.rank(query, options)
      const ids: Array<string> = []
      for (let page = 0; ids.length < ranking.total; page++) {
        const size = sizes[page % sizes.length] ?? 1
        ids.push(...ranking.slice(ids.length, ids.length + size).map((entry) => entry.id))
      }
      expect({ ids, total: ranking.total, match: ranking.match }, `${query} ${Object.keys(options)}`).toEqual(
        expected[at],
      )
    }
  })

  it("ranks 3,000 equal scores in catalog order, not in the order they were indexed", () => {
    const skills = Array.from({ length: 3000 }, (_, at) =>
      skill(`tie-${String(at).padStart(4, "0")}`, "Alpha beta."),
    )
    const { index, rank } = indexOf(skills)
    // Positions unrelated to the order the skills were indexed in.
    const shuffled = skills.flatMap((_, at) => skills[(at * 1237) % skills.length] ?? [])
    expect(new Set(shuffled).size).toBe(skills.length)
    index.sync(shuffled, new Map(shuffled.map((entry) => [entry.id, entry])))
    expect(rank("alpha").ids).toEqual(shuffled.map((entry) => entry.id))
  })

  it("ranks thousands as a fresh index in a catalog order not the one the skills were indexed in", () => {
    const skills = generated(5000)
    const { index, rank } = indexOf(skills)
    const reordered = [
      ...skills.filter((_, at) => at % 2 === 1).reverse(),
      ...skills.filter((_, at) => at % 2 === 0),
    ]
    index.sync(reordered, new Map(reordered.map((entry) => [entry.id, entry])))
    const lengths = ["report", "testing charts", "review data schemas", "translaton", "golang python"].map(
      (query) => {
        const expected = freshRank(reordered, query)
        expect(rank(query).ids, query).toEqual(expected)
        return expected.length
      },
    )
    expect(Math.min(...lengths)).toBeGreaterThan(100)
    expect(Math.max(...lengths)).toBeGreaterThan(2048)
  })

  it("counts and scores only current skills once others were removed", () => {
    const removed = Array.from({ length: 9 }, (_, at) => skill(`gone-${at}`, "Alpha alpha beta."))
    const current = [skill("x", "Alpha."), skill("y", "Beta.")]
    const { index, rank } = indexOf([...current, ...removed])
    index.sync(current, new Map(current.map((entry) => [entry.id, entry])))
    // Only removed skills hold both words: the current ones holding either are ranked. Counting
    // the removed holders of "alpha" (more than of "beta") would also put y first.
    expect(rank("alpha beta")).toEqual({ ids: ["x", "y"], match: "any" })
    expect(freshRank(current, "alpha beta")).toEqual(["x", "y"])
    expect(rank("alpha")).toEqual({ ids: ["x"], match: "all" })
  })

  it("ranks as a fresh index after half the skills leave, some are edited and new ones come", () => {
    const skills = generated()
    const { index, rank } = indexOf(skills)
    const queries = ["report", "deplo", "testing charts", "translaton", "invoice clusters reports", "golang"]
    const syncTo = (next: ReadonlyArray<Searchable>) => {
      index.sync(next, new Map(next.map((entry) => [entry.id, entry])))
      for (const query of queries) expect(rank(query).ids, query).toEqual(freshRank(next, query))
    }
    const half = skills.filter((_, at) => at % 2 === 0)
    syncTo(half)
    const edited = half.map((entry, at) => (at % 10 === 0 ? skill(entry.id, "Golang reports.") : entry))
    syncTo([
      ...edited,
      skill("fresh-golang", "Golang testing charts."),
      skill("fresh-invoice", "Invoice clusters."),
    ])
    expect(index.size().skills).toBe(half.length + 2)
  })

  it("ranks as a fresh index while removals add up past a quarter of the skills, and after", () => {
    const skills = generated()
    const { index, rank } = indexOf(skills)
    // Bodies too: each skill's body names another skill's first word, and a heading.
    const bodyOf = (entry: Searchable) => `# ${entry.description}\n\nSee ${entry.id.split("-")[1]} and more.`
    for (const entry of skills) index.addBody(entry, bodyOf(entry))
    const fresh = (current: ReadonlyArray<Searchable>, query: string) => {
      const made = indexOf(current)
      for (const entry of current) made.index.addBody(entry, bodyOf(entry))
      return made.rank(query).ids
    }
    const queries = [
      "report",
      "deplo",
      "testing charts",
      "translaton",
      "invoice clusters reports",
      "see python",
    ]
    let current = skills
    // 30 skills leave and one is edited at each step (its body indexed again): the removed
    // skills' postings and numbers are dropped along the way.
    for (let step = 1; step <= 8; step++) {
      current = current
        .filter((_, at) => at % 13 !== step)
        .map((entry, at) => (at === step ? skill(entry.id, "Golang deployment reports.") : entry))
      for (const added of index.sync(current, new Map(current.map((entry) => [entry.id, entry]))))
        index.addBody(added, bodyOf(added))
      expect(index.size()).toEqual({ skills: current.length, bodies: current.length })
      for (const query of [...queries, "golang"])
        expect(rank(query).ids, query).toEqual(fresh(current, query))
    }
    expect(current.length).toBeLessThan(skills.length * 0.6)
  })

  it("leaves out a query's most common word while its words are held by more than 40,000 (skill, field) pairs", () => {
    // "common" in 20,001 descriptions and bodies: with any other word, the query is over the bound.
    const skills = [
      ...Array.from({ length: 20_001 }, (_, at) => skill(`c${at}`, at < 5 ? "Common rare." : "Common.")),
      skill("only-rare", "Rare."),
    ]
    const { index, rank } = indexOf(skills)
    for (const entry of skills.slice(0, 20_001)) index.addBody(entry, "Common, common.")
    const bounded = rank("common rare")
    expect(new Set(bounded.ids)).toEqual(new Set(["c0", "c1", "c2", "c3", "c4", "only-rare"]))
    // One word is searched whatever it costs.
    expect(rank("common").ids.length).toBe(20_001)
  })

  it("orders what a rare word ties by a common word's near-zero weight, across a page's edge, and counts every match", () => {
    // 40 skills hold the rare word, equally; what orders them is how often their body says a word
    // every skill holds (its weight near zero), then the catalog order, which is not the order
    // they were indexed in. 200 more hold only the common word. A ranking that skipped a word once
    // the best page looked settled, or cut ties at the page's edge, would misorder or miscount.
    const rare = Array.from({ length: 40 }, (_, at) =>
      skill(`zebra-${String(at).padStart(2, "0")}`, "Zebra stripes."),
    )
    const common = Array.from({ length: 200 }, (_, at) =>
      skill(`plain-${String(at).padStart(3, "0")}`, "Ledger."),
    )
    const times = (entry: Searchable) => (Number(entry.id.slice(-2)) * 7) % 5
    const skills = [...common, ...rare]
    const { index } = indexOf(skills)
    for (const entry of rare)
      index.addBody(entry, `${"ledger ".repeat(times(entry) + 1)}${"pad ".repeat(8 - times(entry))}`)
    const catalog = skills.flatMap((_, at) => skills[(at * 97) % skills.length] ?? [])
    expect(new Set(catalog).size).toBe(skills.length)
    index.sync(catalog, new Map(catalog.map((entry) => [entry.id, entry])))
    const position = new Map(catalog.map((entry, at) => [entry, at]))
    const inOrder = (entries: ReadonlyArray<Searchable>) =>
      [...entries]
        .sort((a, b) => times(b) - times(a) || (position.get(a) ?? 0) - (position.get(b) ?? 0))
        .map((entry) => entry.id)
    const byCatalog = (entries: ReadonlyArray<Searchable>) =>
      [...entries].sort((a, b) => (position.get(a) ?? 0) - (position.get(b) ?? 0)).map((entry) => entry.id)
    const within = (entry: Searchable) => !entry.id.endsWith("3")
    const shown = (entry: Searchable) => !entry.id.endsWith("5")
    const first = common[17]
    const pages = (ranking: Ranking<Searchable>) => {
      const ids: Array<string> = []
      for (let at = 0; at < ranking.total; at += 20)
        ids.push(...ranking.slice(at, at + 20).map((entry) => entry.id))
      return ids
    }
    // The exact word, a prefix of it, and a typo of it.
    for (const query of ["zebra ledger", "zebr ledger", "zebrq ledger"]) {
      const all = index.rank(query)
      expect({ ids: pages(all), total: all.total, match: all.match }, query).toEqual({
        ids: [...inOrder(rare), ...byCatalog(common)],
        total: 240,
        match: "all",
      })
      const viewed = index.rank(query, { within, shown, first })
      const expected = [
        ...(first === undefined ? [] : [first.id]),
        ...inOrder(rare.filter(within).filter(shown)),
        ...byCatalog(
          common
            .filter(within)
            .filter(shown)
            .filter((entry) => entry !== first),
        ),
      ]
      expect({ ids: pages(viewed), total: viewed.total }, `${query} in a view`).toEqual({
        ids: expected,
        total: expected.length,
      })
      // A page that ends inside a run of equal scores, then the rest.
      expect([...viewed.slice(0, 13), ...viewed.slice(13, viewed.total)].map((entry) => entry.id)).toEqual(
        expected,
      )
    }
  })

  it("ranks a description saying a word more often above one saying it less", () => {
    // 300 times a two-letter word and 30 other words: a 1,019-character description.
    const others = Array.from({ length: 30 }, (_, at) => `w${String(at).padStart(2, "0")}`).join(" ")
    const skills = [
      skill("ten", `${"go ".repeat(10)}x y z`),
      skill("repeated", `${"go ".repeat(300)}${others}`),
      ...Array.from({ length: 5 }, (_, at) => skill(`other-${at}`, "Something else entirely today.")),
    ]
    expect(skills[1]?.description.length).toBeLessThanOrEqual(1024)
    const { rank } = indexOf(skills)
    expect(rank("go").ids).toEqual(["repeated", "ten"])
  })
})

/** Two skills, only one of whose bodies speaks of a zebra. */
const zebraTree = () => ({
  "alpha/SKILL.md": skillMd("alpha", "First skill.", "# Alpha\n\nUse a zebra.\n"),
  "beta/SKILL.md": skillMd("beta", "Second skill.", "# Beta\n\nNo stripes.\n"),
})

describe("searching while bodies are read", () => {
  it.scoped("answers from what is indexed, saying so, and follows an edited body", () =>
    Effect.gen(function* () {
      const root = yield* tempTree(zebraTree())
      yield* Effect.gen(function* () {
        const catalog = yield* Catalog
        const snapshot = yield* catalog.peek
        // Bodies are read only once `open` is: until then the index holds the metadata alone.
        const open = yield* Deferred.make<void>()
        const searching = yield* makeSearching(
          catalog.peek,
          (entry) => Effect.as(Deferred.await(open), entry.id === "alpha" ? "Use a zebra." : "No stripes."),
          makeCalls(),
        )
        const early = yield* searching.search("zebra", 10, undefined)
        expect(early.skills).toEqual([])
        expect(early.searched).toEqual({ skills: 2, bodies: 0 })
        yield* Deferred.succeed(open, undefined)
        yield* searching.indexed
        const later = yield* searching.search("zebra", 10, undefined)
        expect(later.skills.map((entry) => entry.id)).toEqual(["alpha"])
        expect(later.searched).toEqual({ skills: snapshot.skills.length, bodies: 2 })

        // Through the catalog: an edited body is read and indexed again.
        yield* catalog.searchIndexed
        expect((yield* catalog.list({ query: "zebra" })).skills.map((entry) => entry.id)).toEqual(["alpha"])
        yield* Effect.promise(() =>
          fs.writeFile(`${root}/beta/SKILL.md`, skillMd("beta", "Second skill.", "# Beta\n\nA zebra too.\n")),
        )
        yield* Effect.promise(() =>
          fs.writeFile(`${root}/alpha/SKILL.md`, skillMd("alpha", "First skill.", "# Alpha\n\nA horse.\n")),
        )
        yield* catalog.refresh
        yield* catalog.searchIndexed
        const edited = yield* catalog.list({ query: "zebra" })
        expect(edited.skills.map((entry) => entry.id)).toEqual(["beta"])
        expect(edited.searched).toEqual({ skills: 2, bodies: 2 })
      }).pipe(Effect.provide(servicesFor([root])))
    }),
  )
})

describe("indexing while calls are answered", () => {
  it.scopedLive("reads bodies once calls pause, and a step at a time under calls that never pause", () =>
    Effect.gen(function* () {
      const root = yield* tempTree(zebraTree())
      yield* Effect.gen(function* () {
        const catalog = yield* Catalog
        const calls = makeCalls()
        let reads = 0
        let firstReadAt = Number.POSITIVE_INFINITY
        const searching = yield* makeSearching(
          catalog.peek,
          (entry) =>
            Effect.sync(() => {
              reads++
              firstReadAt = Math.min(firstReadAt, performance.now())
            }).pipe(Effect.as(entry.id === "alpha" ? "Use a zebra." : "")),
          calls,
        )
        // A call in flight: a query is answered at once (from the metadata), no body is read yet.
        const ended = calls.begin()
        const asked = performance.now()
        expect((yield* searching.search("first", 10, undefined)).skills.map((entry) => entry.id)).toEqual([
          "alpha",
        ])
        // Calls never pause: the bodies are still read, a few at a time, once the wait is up (a
        // lower bound: a loaded machine only reads them later).
        yield* searching.indexed
        expect(reads).toBe(2)
        expect(firstReadAt - asked).toBeGreaterThanOrEqual(MAX_PAUSE_WAIT_MS)
        ended()
        expect((yield* searching.search("zebra", 10, undefined)).skills.map((entry) => entry.id)).toEqual([
          "alpha",
        ])

        // A build of thousands, in many slices, each waiting for a pause: a query made meanwhile
        // ranks every skill (that it no longer waits on pauses is EventLoop.test's `unless`).
        const many = makeSnapshot({
          skills: Array.from({ length: 6000 }, (_, at) => fakeSkill(`skill-${at}`, `Skill number ${at}.`)),
        })
        const crowd = makeCalls()
        const crowded = yield* makeSearching(Effect.succeed(many), () => Effect.succeed(""), crowd)
        const never = crowd.begin()
        yield* crowded.warm
        yield* Effect.sleep(MAX_PAUSE_WAIT_MS * 1.5)
        const found = yield* crowded.search("skill-5999", 10, undefined)
        expect(found.skills[0]?.id).toBe("skill-5999")
        expect(found.searched?.skills).toBe(6000)
        never()

        // The background build waits for a pause too, then reads the bodies.
        const idle = makeCalls()
        let idleReads = 0
        let firstIdleReadAt = Number.POSITIVE_INFINITY
        const warmed = yield* makeSearching(
          catalog.peek,
          () =>
            Effect.sync(() => {
              idleReads++
              firstIdleReadAt = Math.min(firstIdleReadAt, performance.now())
            }).pipe(Effect.as("")),
          idle,
        )
        const busy = idle.begin()
        const warmedAt = performance.now()
        yield* warmed.warm
        yield* warmed.indexed
        expect(idleReads).toBe(2)
        expect(firstIdleReadAt - warmedAt).toBeGreaterThanOrEqual(MAX_PAUSE_WAIT_MS)
        busy()
      }).pipe(Effect.provide(servicesFor([root])))
    }),
  )
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
        // Every body indexed first: one indexed between two of the searches below would rank
        // the second anew (a new generation), with the body's words counted.
        yield* catalog.searchIndexed
        // A search's page is 20 unless more are asked for.
        const first20 = yield* catalog.list({ query: "reports" })
        expect(first20.skills).toHaveLength(20)
        expect(first20.total).toBe(30)
        expect(first20.nextCursor).toBeDefined()
        const whole = yield* catalog.list({ query: "sales reports", limit: 100 })
        // Every skill matches a word; the ten matching both come first.
        expect(whole.total).toBe(31)
        expect(new Set(whole.skills.slice(0, 10).map((entry) => entry.description))).toEqual(
          new Set(["Build quarterly sales reports."]),
        )
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
