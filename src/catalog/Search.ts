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
 *   matches, which score above typos (MiniSearch's weights).
 * - The id and name weigh three times the description.
 * - Skills matching every word come first; only when none does, skills matching some of the
 *   words are ranked instead (the result says which).
 * - Equal scores keep catalog order (first root first).
 * - A query's first 12 distinct words count (a query is a few words, not a document).
 * - Common words bound the work in large catalogs: while a query's words, with the words each
 *   begins, are held by more than 10,000 (skill, field) pairs in all, its most common word is
 *   left out, down to one word. A word most skills hold says little about the task (BM25 weighs
 *   it near zero) and is what makes a search slow: MiniSearch scores a pair in a microsecond or
 *   two, and at 10,000 skills (the bench's corpus, in process, on a busy machine) a 12-word query
 *   of common words took 105 to 120 ms without this, 13 to 25 with it. Small catalogs are never
 *   affected.
 *
 * An exact id or name is put first by the Catalog, not here.
 *
 * The index follows the catalog incrementally: `sync` re-indexes only skills whose metadata
 * object changed (the catalog keeps unchanged skills as the very same objects) and removes the
 * ones that left at once (MiniSearch's `remove`, given the object that was indexed), so word
 * counts and scores always equal those of a fresh index of the same skills.
 */
import MiniSearch from "minisearch"

/** What is searched. */
export interface Searchable {
  readonly id: string
  readonly name: string
  readonly description: string
}

/** Skills by relevance, best first; `all` when every query word matched. */
export interface Ranking<S extends Searchable> {
  readonly skills: ReadonlyArray<S>
  readonly match: "all" | "any"
}

const MAX_QUERY_WORDS = 12

const STOP_WORDS: ReadonlySet<string> = new Set(
  (
    "a an and are as at be by for from how i in into is it its of on or that the this to " +
    "was what when where which with you your"
  ).split(" "),
)

const WORD_SEPARATORS = /[^\p{L}\p{N}]+/u

/** A word as indexed and searched: lowercase; null for a stop word. */
const processTerm = (term: string): string | null => {
  const word = term.toLowerCase()
  return word === "" || STOP_WORDS.has(word) ? null : word
}

/** A text's words as indexed and searched: lowercase, stop words left out. */
export const searchWords = (text: string): Array<string> =>
  text.split(WORD_SEPARATORS).flatMap((part) => processTerm(part) ?? [])

/** Most (skill, field) entries a query may score, over its words and the words they begin. */
const MAX_QUERY_ENTRIES = 10_000

/** MiniSearch, plus what its term tree tells about a word (the tree is open to subclasses). */
class SkillIndex extends MiniSearch<Searchable> {
  /** Whether some skill holds `word`. */
  holds(word: string): boolean {
    return this._index.has(word)
  }

  /** The (skill, field) entries a search for `word` scores: those of every word it begins. */
  entries(word: string): number {
    let count = 0
    for (const [, fields] of this._index.atPrefix(word))
      for (const skills of fields.values()) count += skills.size
    return count
  }
}

/** `words` without their most common ones while they hold too many entries (see the top). */
const affordable = (mini: SkillIndex, words: ReadonlyArray<string>): Array<string> => {
  const costs = words.map((word) => ({ word, cost: mini.entries(word) })).sort((a, b) => a.cost - b.cost)
  let total = costs.reduce((sum, { cost }) => sum + cost, 0)
  while (costs.length > 1 && total > MAX_QUERY_ENTRIES) total -= costs.pop()?.cost ?? 0
  return costs.map(({ word }) => word)
}

export interface SearchIndex<S extends Searchable> {
  /**
   * Makes the index hold exactly `skills` (unique ids), in this order (the catalog's: equal
   * scores rank in it); re-indexes only what changed. Ranks only after a sync.
   */
  readonly sync: (skills: ReadonlyArray<S>, byId: ReadonlyMap<string, S>) => void
  /** Adds a skill unless it is indexed already (the first build, skill by skill in slices). */
  readonly addNew: (skill: S) => void
  /** Ranks the skills of the last sync. */
  readonly rank: (query: string) => Ranking<S>
  readonly size: () => number
}

export const makeSearchIndex = <S extends Searchable>(): SearchIndex<S> => {
  const mini: SkillIndex = new SkillIndex({
    idField: "id",
    // One field for the id and the name (usually equal: half the postings of two fields).
    fields: ["names", "description"],
    extractField: (skill, field) =>
      field === "id"
        ? skill.id
        : field === "names"
          ? skill.name === skill.id
            ? skill.id
            : `${skill.id} ${skill.name}`
          : skill.description,
    tokenize: (text) => text.split(WORD_SEPARATORS),
    processTerm,
    searchOptions: {
      boost: { names: 3 },
      prefix: true,
      // A word some skill holds is taken as meant; only an unknown word may be a typo.
      fuzzy: (word) => (mini.holds(word) ? false : word.length >= 9 ? 2 : word.length >= 5 ? 1 : false),
      combineWith: "OR",
    },
  })
  /** Per id: the skill object indexed (another object for the id is an edit), its catalog position. */
  const indexed = new Map<string, { skill: S; position: number }>()

  const put = (skill: S, position: number) => {
    const entry = indexed.get(skill.id)
    if (entry?.skill === skill) {
      entry.position = position
      return
    }
    if (entry !== undefined) mini.remove(entry.skill)
    mini.add(skill)
    indexed.set(skill.id, { skill, position })
  }

  const sync = (skills: ReadonlyArray<S>, byId: ReadonlyMap<string, S>) => {
    skills.forEach(put)
    // Every current id is indexed now, so any extra one is a skill that left.
    if (indexed.size === skills.length) return
    for (const [id, entry] of indexed) {
      if (byId.get(id) === undefined) {
        mini.remove(entry.skill)
        indexed.delete(id)
      }
    }
  }

  const rank = (query: string): Ranking<S> => {
    const distinct = [...new Set(searchWords(query))].slice(0, MAX_QUERY_WORDS)
    if (distinct.length === 0) return { skills: [], match: "all" }
    const words = affordable(mini, distinct)
    // One search for any word; `queryTerms` tells the skills that matched every one (their
    // scores are the ones a search with combineWith "AND" gives).
    const results = mini.search(words.join(" "))
    const every = results.filter((result) => result.queryTerms.length === words.length)
    const ranked = (every.length > 0 ? every : results).flatMap((result) => {
      const entry = indexed.get(String(result.id))
      return entry === undefined ? [] : [{ score: result.score, ...entry }]
    })
    ranked.sort((a, b) => b.score - a.score || a.position - b.position)
    return {
      skills: ranked.map((entry) => entry.skill),
      match: every.length > 0 || results.length === 0 ? "all" : "any",
    }
  }

  return {
    sync,
    addNew: (skill) => {
      if (!indexed.has(skill.id)) put(skill, indexed.size)
    },
    rank,
    size: () => indexed.size,
  }
}
