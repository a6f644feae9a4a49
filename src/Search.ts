/**
 * Search: ranks skills by relevance to a query over their id, name and description, with
 * MiniSearch (an inverted index, BM25+ scoring, prefix and typo-tolerant matching).
 *
 * - Words are split on anything that is not a letter or a digit (`pdf-tools` is `pdf` and
 *   `tools`), compared without case, and a few English stop words (`the`, `for`, `with`...)
 *   are left out on both sides.
 * - A query word also matches words it begins (`spread` finds `spreadsheets`); a word no skill
 *   holds may be a typo and, from five letters on, also matches words one edit away (two from
 *   nine letters: `spredsheet` finds `spreadsheets`). Exact matches score above prefix
 *   matches, which score above typos.
 * - The id and name weigh three times the description.
 * - Skills matching every word come first; only when none does, skills matching some of the
 *   words are ranked instead (the result says which).
 * - Common words bound the work in large catalogs: while the skills holding each word of a
 *   query add up to more than 10,000 (say, three words each in half of 10,000 skills), its most
 *   common word is left out, down to one word. A word most skills hold says little about the
 *   task (BM25 weighs it near zero) and is what makes a search slow; small catalogs are never
 *   affected.
 * - Equal scores keep catalog order (first root first).
 *
 * The index follows the catalog incrementally: `sync` re-indexes only skills whose metadata
 * object changed (the catalog keeps unchanged skills as the very same objects) and drops the
 * ones that left. Removed entries are purged by MiniSearch's own batched vacuum.
 */
import MiniSearch from "minisearch"

/** What is searched. */
export interface Searchable {
  readonly id: string
  readonly name: string
  readonly description: string
}

/** Ids by relevance, best first; `all` when every query word matched. */
export interface Ranking {
  readonly ids: ReadonlyArray<string>
  readonly match: "all" | "any"
}

/** Query words beyond this many are ignored (a query is a few words, not a document). */
export const MAX_QUERY_WORDS = 12

const STOP_WORDS: ReadonlySet<string> = new Set(
  (
    "a an and are as at be by for from how i in into is it its of on or that the this to " +
    "was what when where which with you your"
  ).split(" "),
)

const WORD_SEPARATORS = /[^\p{L}\p{N}]+/u

/** A text's words as indexed and searched: lowercase, stop words left out. */
export const searchWords = (text: string): Array<string> => {
  const words: Array<string> = []
  for (const part of text.split(WORD_SEPARATORS)) {
    const word = part.toLowerCase()
    if (word !== "" && !STOP_WORDS.has(word)) words.push(word)
  }
  return words
}

const processTerm = (term: string) => {
  const word = term.toLowerCase()
  return word === "" || STOP_WORDS.has(word) ? null : word
}

const tokenize = (text: string) => text.split(WORD_SEPARATORS)

/** Edits tolerated for a query word of this length. */
const typosFor = (word: string) => (word.length >= 9 ? 2 : word.length >= 5 ? 1 : false)

/** Most skills a query's words may be held by, summed over the words. */
const MAX_QUERY_POSTINGS = 10_000

/** MiniSearch, plus how many skills hold a word (read from its index, as a subclass may). */
class SkillIndex extends MiniSearch<Searchable> {
  /** How many skills hold `word` in one field or more (removed ones count until vacuumed). */
  holders(word: string): number {
    let most = 0
    for (const documents of this._index.get(word)?.values() ?? []) most = Math.max(most, documents.size)
    return most
  }
}

/** The query's words that are worth searching for (see the top of this file). */
const usefulWords = (index: SkillIndex, words: ReadonlyArray<string>): ReadonlyArray<string> => {
  const holders = new Map(words.map((word) => [word, index.holders(word)]))
  const kept = [...words]
  let total = [...holders.values()].reduce((sum, count) => sum + count, 0)
  const byCount = [...words].sort((a, b) => (holders.get(b) ?? 0) - (holders.get(a) ?? 0))
  for (const common of byCount) {
    if (total <= MAX_QUERY_POSTINGS || kept.length === 1) break
    kept.splice(kept.indexOf(common), 1)
    total -= holders.get(common) ?? 0
  }
  return kept
}

export interface SearchIndex {
  /** Makes the index hold exactly `skills` (unique ids); re-indexes only what changed. */
  readonly sync: (skills: ReadonlyArray<Searchable>, byId: ReadonlyMap<string, Searchable>) => void
  /** Adds skills not indexed yet (the first build, in slices). */
  readonly addNew: (skills: ReadonlyArray<Searchable>) => void
  /** Ranks the indexed skills; equal scores keep the order `position` gives (catalog order). */
  readonly rank: (query: string, position: (id: string) => number) => Ranking
  readonly size: () => number
}

export const makeSearchIndex = (): SearchIndex => {
  const mini: SkillIndex = new SkillIndex({
    idField: "id",
    // One field for the id and the name (usually equal): half the postings of two fields.
    fields: ["names", "description"],
    extractField: (skill, field) =>
      field === "id"
        ? skill.id
        : field === "names"
          ? skill.name === skill.id
            ? skill.id
            : `${skill.id} ${skill.name}`
          : skill.description,
    tokenize,
    processTerm,
    searchOptions: {
      boost: { names: 3 },
      prefix: true,
      // A word some skill holds is taken as meant; only an unknown word may be a typo.
      fuzzy: (term): number | false => (mini.holders(term) > 0 ? false : typosFor(term)),
      maxFuzzy: 2,
    },
  })
  /** The skill objects indexed, by id: an id whose object differs was edited. */
  const indexed = new Map<string, Searchable>()

  const put = (skill: Searchable) => {
    const previous = indexed.get(skill.id)
    if (previous === skill) return
    if (previous !== undefined) mini.discard(skill.id)
    mini.add(skill)
    indexed.set(skill.id, skill)
  }

  const sync = (skills: ReadonlyArray<Searchable>, byId: ReadonlyMap<string, Searchable>) => {
    for (const skill of skills) put(skill)
    // Every current id is indexed now, so any extra entry is a skill that left.
    if (indexed.size === skills.length) return
    for (const id of [...indexed.keys()]) {
      if (byId.get(id) === undefined) {
        mini.discard(id)
        indexed.delete(id)
      }
    }
  }

  const rank = (query: string, position: (id: string) => number): Ranking => {
    const words = [...new Set(searchWords(query))].slice(0, MAX_QUERY_WORDS)
    if (words.length === 0) return { ids: [], match: "all" }
    const text = usefulWords(mini, words).join(" ")
    const every = mini.search(text, { combineWith: "AND" })
    const results = every.length > 0 ? every : mini.search(text, { combineWith: "OR" })
    // MiniSearch sorts by score; only runs of equal scores are put in catalog order.
    const ids: Array<string> = []
    for (let start = 0; start < results.length; ) {
      let end = start + 1
      while (end < results.length && results[end]?.score === results[start]?.score) end++
      const run: Array<string> = []
      for (let index = start; index < end; index++) {
        const id = results[index]?.id
        if (typeof id === "string") run.push(id)
      }
      if (run.length > 1) run.sort((a, b) => position(a) - position(b))
      for (const id of run) ids.push(id)
      start = end
    }
    return { ids, match: every.length > 0 || results.length === 0 ? "all" : "any" }
  }

  return {
    sync,
    addNew: (skills) => {
      for (const skill of skills) if (!indexed.has(skill.id)) put(skill)
    },
    rank,
    size: () => indexed.size,
  }
}
