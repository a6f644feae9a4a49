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
 * MiniSearch keeps the index (words, their postings, prefix and typo lookup); the ranking is
 * computed here, over that index, with MiniSearch's own scoring (BM25+, its prefix and typo
 * weights, a skill's score times the number of query words it matches). MiniSearch's
 * `search` builds a result object with match details for every matching skill and then
 * intersects them: at 10,000 skills, a query whose words thousands of skills hold took 4 to
 * 15 ms (in-process, warm). Here scores add up in reused typed arrays indexed by
 * MiniSearch's short document ids, and only the ranked ids are allocated.
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

/** MiniSearch's index for one term: per field id, the term's count in each short document id. */
type TermData = ReadonlyMap<number, ReadonlyMap<number, number>>

/** MiniSearch's defaults, which the rankings were tuned with. */
const PREFIX_WEIGHT = 0.375
const TYPO_WEIGHT = 0.45
const BM25_K = 1.2
const BM25_B = 0.7
const BM25_D = 0.5

/** Indexed fields, in MiniSearch's field order, with their weights. */
const FIELDS = ["names", "description"] as const
const FIELD_BOOSTS: Readonly<Record<(typeof FIELDS)[number], number>> = { names: 3, description: 1 }

const bitCount = (bits: number) => {
  let count = 0
  for (let rest = bits; rest !== 0; rest &= rest - 1) count++
  return count
}

/** MiniSearch with a ranking of its own (see the top of this file), using its protected index. */
class SkillIndex extends MiniSearch<Searchable> {
  /**
   * Per short document id: the score so far, the current word's share, the words matched (a
   * bit per query word) and the catalog position. Reused by every ranking, left all zero.
   */
  private total = new Float64Array(0)
  private share = new Float64Array(0)
  private words = new Uint16Array(0)
  private place = new Float64Array(0)

  /** How many skills hold `word` in one field or more (removed ones count until vacuumed). */
  holders(word: string): number {
    let most = 0
    for (const documents of this._index.get(word)?.values() ?? []) most = Math.max(most, documents.size)
    return most
  }

  /** The indexed terms a query word stands for, with their weights (MiniSearch's rules). */
  private expansions(word: string): Array<readonly [TermData, number]> {
    const found: Array<readonly [TermData, number]> = []
    const exact = this._index.get(word)
    if (exact !== undefined) found.push([exact, 1])
    const prefixed = new Set<string>()
    for (const [term, data] of this._index.atPrefix(word)) {
      const distance = term.length - word.length
      if (distance === 0) continue
      prefixed.add(term)
      found.push([data, (PREFIX_WEIGHT * term.length) / (term.length + 0.3 * distance)])
    }
    // A word some skill holds is taken as meant; only an unknown word may be a typo.
    const typos = this.holders(word) === 0 ? typosFor(word) : false
    if (typos !== false) {
      for (const [term, [data, distance]] of this._index.fuzzyGet(word, typos)) {
        if (distance === 0 || prefixed.has(term)) continue
        found.push([data, (TYPO_WEIGHT * term.length) / (term.length + distance)])
      }
    }
    return found
  }

  /** Adds one term's BM25+ scores to the current word's share; `touched` gets the new documents. */
  private score(data: TermData, weight: number, touched: Array<number>) {
    for (const field of FIELDS) {
      const fieldId = this._fieldIds[field]
      if (fieldId === undefined) continue
      const postings = data.get(fieldId)
      if (postings === undefined) continue
      let holding = postings.size
      // Removed documents stay in the postings until MiniSearch's vacuum; they are not counted.
      // MiniSearch drops a removed document's field lengths: that tells them apart here and below.
      if (this._dirtCount > 0)
        for (const document of postings.keys()) if (!this._fieldLength.has(document)) holding--
      const idf = Math.log(1 + (this._documentCount - holding + 0.5) / (holding + 0.5))
      const average = this._avgFieldLength[fieldId] ?? 1
      const boost = weight * FIELD_BOOSTS[field]
      const share = this.share
      postings.forEach((frequency, document) => {
        const length = this._fieldLength.get(document)?.[fieldId]
        if (length === undefined) return
        const bm25 =
          idf *
          (BM25_D +
            (frequency * (BM25_K + 1)) / (frequency + BM25_K * (1 - BM25_B + (BM25_B * length) / average)))
        if (share[document] === 0) touched.push(document)
        share[document] = (share[document] ?? 0) + boost * bm25
      })
    }
  }

  /** Document ids by relevance to `words` (at most 16), best first; see `rank`. */
  rankWords(words: ReadonlyArray<string>, position: (id: string) => number): Ranking {
    if (this.total.length < this._nextId) {
      const size = Math.max(1024, this._nextId * 2)
      this.total = new Float64Array(size)
      this.share = new Float64Array(size)
      this.words = new Uint16Array(size)
      this.place = new Float64Array(size)
    }
    const { total, share, words: matched, place } = this
    const hits: Array<number> = []
    words.forEach((word, index) => {
      const touched: Array<number> = []
      for (const [data, weight] of this.expansions(word)) this.score(data, weight, touched)
      for (const document of touched) {
        if (matched[document] === 0) hits.push(document)
        total[document] = (total[document] ?? 0) + (share[document] ?? 0)
        share[document] = 0
        matched[document] = (matched[document] ?? 0) | (1 << index)
      }
    })
    const every = (1 << words.length) - 1
    const all = hits.filter((document) => matched[document] === every)
    const ranked = all.length > 0 ? all : hits
    for (const document of ranked) total[document] = (total[document] ?? 0) * bitCount(matched[document] ?? 0)
    const idOf = (document: number): string => String(this._documentIds.get(document))
    // Catalog positions are looked up once per skill, not once per comparison (ties are common).
    for (const document of ranked) place[document] = position(idOf(document))
    ranked.sort((a, b) => (total[b] ?? 0) - (total[a] ?? 0) || (place[a] ?? 0) - (place[b] ?? 0))
    const ids = ranked.map(idOf)
    for (const document of hits) {
      total[document] = 0
      place[document] = 0
      matched[document] = 0
    }
    return { ids, match: all.length > 0 || hits.length === 0 ? "all" : "any" }
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

/**
 * How skills are indexed: one field for the id and the name (usually equal: half the postings
 * of two fields) and one for the description, split and filtered as `searchWords` does.
 */
export const INDEX_OPTIONS = {
  idField: "id",
  fields: [...FIELDS],
  extractField: (skill: Searchable, field: string): string =>
    field === "id"
      ? skill.id
      : field === "names"
        ? skill.name === skill.id
          ? skill.id
          : `${skill.id} ${skill.name}`
        : skill.description,
  tokenize,
  processTerm,
}

export interface SearchIndex {
  /** Makes the index hold exactly `skills` (unique ids); re-indexes only what changed. */
  readonly sync: (skills: ReadonlyArray<Searchable>, byId: ReadonlyMap<string, Searchable>) => void
  /** Adds a skill unless it is indexed already (the first build, skill by skill in slices). */
  readonly addNew: (skill: Searchable) => void
  /** Ranks the indexed skills; equal scores keep the order `position` gives (catalog order). */
  readonly rank: (query: string, position: (id: string) => number) => Ranking
  readonly size: () => number
}

export const makeSearchIndex = (): SearchIndex => {
  const mini = new SkillIndex(INDEX_OPTIONS)
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
    return mini.rankWords(usefulWords(mini, words), position)
  }

  return {
    sync,
    addNew: (skill) => {
      if (!indexed.has(skill.id)) put(skill)
    },
    rank,
    size: () => indexed.size,
  }
}
