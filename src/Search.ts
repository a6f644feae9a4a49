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
 * MiniSearch's short document ids, and the catalog position and skill of each short id are
 * kept from the last sync: a ranking allocates only its list, and looks nothing up by id.
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

/** Skills by relevance, best first; `all` when every query word matched. */
export interface Ranking<S extends Searchable> {
  readonly skills: ReadonlyArray<S>
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
class SkillIndex<S extends Searchable> extends MiniSearch<S> {
  /**
   * Per short document id: the score so far, the current word's share and the words matched
   * (a bit per query word). Reused by every ranking, left all zero.
   */
  private total = new Float64Array(0)
  private share = new Float64Array(0)
  private words = new Uint16Array(0)
  /**
   * Per short document id, as of the last `setOrder`: the catalog position (ties rank in it)
   * and the skill itself. A ranking then needs no lookup by id for any of its skills.
   */
  private place = new Float64Array(0)
  private entries: Array<S | undefined> = []
  /** Per field id, then short document id: the field's length in words (0: not a current skill). */
  private lengths: Array<Uint32Array> = []

  /** Room for every short document id given so far. */
  private grow() {
    if (this.total.length >= this._nextId) return
    const size = Math.max(1024, this._nextId * 2)
    this.total = new Float64Array(size)
    this.share = new Float64Array(size)
    this.words = new Uint16Array(size)
    const place = new Float64Array(size)
    place.set(this.place)
    this.place = place
  }

  /** Records the catalog order of the indexed skills (every one of them, in that order). */
  setOrder(skills: ReadonlyArray<S>) {
    this.grow()
    // Filled to its length: written in catalog order, not id order, it must not become sparse.
    this.entries = new Array<S | undefined>(this.total.length).fill(undefined)
    this.lengths = []
    for (const fieldId of Object.values(this._fieldIds))
      this.lengths[fieldId] = new Uint32Array(this.total.length)
    skills.forEach((skill, position) => {
      const document = this._idToShortId.get(skill.id)
      if (document === undefined) return
      this.place[document] = position
      this.entries[document] = skill
      this._fieldLength.get(document)?.forEach((length, fieldId) => {
        const lengths = this.lengths[fieldId]
        if (lengths !== undefined) lengths[document] = length
      })
    })
  }

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
      const lengths = this.lengths[fieldId]
      if (postings === undefined || lengths === undefined) continue
      // Removed skills stay in the postings until MiniSearch's vacuum. They have no length
      // here (see setOrder; a skill holding a word has a length of one or more in that field),
      // and are neither counted nor scored.
      let holding = postings.size
      if (this._dirtCount > 0)
        for (const document of postings.keys()) if ((lengths[document] ?? 0) === 0) holding--
      const idf = Math.log(1 + (this._documentCount - holding + 0.5) / (holding + 0.5))
      const average = this._avgFieldLength[fieldId] ?? 1
      const boost = weight * FIELD_BOOSTS[field]
      const share = this.share
      postings.forEach((frequency, document) => {
        const length = lengths[document] ?? 0
        if (length === 0) return
        const bm25 =
          idf *
          (BM25_D +
            (frequency * (BM25_K + 1)) / (frequency + BM25_K * (1 - BM25_B + (BM25_B * length) / average)))
        if (share[document] === 0) touched.push(document)
        share[document] = (share[document] ?? 0) + boost * bm25
      })
    }
  }

  /** Skills by relevance to `words` (at most 16), best first; see `rank`. */
  rankWords(words: ReadonlyArray<string>): Ranking<S> {
    this.grow()
    const { total, share, words: matched, place, entries } = this
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
    ranked.sort((a, b) => (total[b] ?? 0) - (total[a] ?? 0) || (place[a] ?? 0) - (place[b] ?? 0))
    const skills: Array<S> = []
    for (const document of ranked) {
      const entry = entries[document]
      if (entry !== undefined) skills.push(entry)
    }
    for (const document of hits) {
      total[document] = 0
      matched[document] = 0
    }
    return { skills, match: all.length > 0 || hits.length === 0 ? "all" : "any" }
  }
}

/** The query's words that are worth searching for (see the top of this file). */
const usefulWords = <S extends Searchable>(
  index: SkillIndex<S>,
  words: ReadonlyArray<string>,
): ReadonlyArray<string> => {
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
  const mini = new SkillIndex<S>(INDEX_OPTIONS)
  /** The skill objects indexed, by id: an id whose object differs was edited. */
  const indexed = new Map<string, S>()

  const put = (skill: S) => {
    const previous = indexed.get(skill.id)
    if (previous === skill) return
    if (previous !== undefined) mini.discard(skill.id)
    mini.add(skill)
    indexed.set(skill.id, skill)
  }

  const sync = (skills: ReadonlyArray<S>, byId: ReadonlyMap<string, S>) => {
    for (const skill of skills) put(skill)
    // Every current id is indexed now, so any extra entry is a skill that left.
    if (indexed.size !== skills.length) {
      for (const id of [...indexed.keys()]) {
        if (byId.get(id) === undefined) {
          mini.discard(id)
          indexed.delete(id)
        }
      }
    }
    mini.setOrder(skills)
  }

  const rank = (query: string): Ranking<S> => {
    const words = [...new Set(searchWords(query))].slice(0, MAX_QUERY_WORDS)
    if (words.length === 0) return { skills: [], match: "all" }
    return mini.rankWords(usefulWords(mini, words))
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
