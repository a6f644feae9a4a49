/**
 * Search: ranks skills by relevance to a query over their id, name and description. The rules
 * as users see them (words, prefixes, typos, weights, all words first, the bound on common
 * words) are in docs/MCP.md, `list_skills`. An exact id or name is put first by the Catalog.
 *
 * The scoring is MiniSearch's (BM25+ with its parameters, prefix and typo weights, a skill's
 * score times the number of query words it matches) and the terms sit in its radix tree
 * (`minisearch/SearchableMap`, for prefix and typo lookups), but the postings are ours: one
 * typed array per term, and a ranking sums scores in one array by document number (MiniSearch's
 * own index, a Map per term and field and an object per match, costs several times the memory
 * and query time).
 *
 * `sync` re-indexes only skills whose metadata object changed (the catalog keeps unchanged ones
 * as the very same objects). A removed skill's entries stay, skipped, while the counts of holders
 * drop at once (scores equal a fresh index's); once removed skills outnumber a quarter of the
 * current ones (and 64), the index is built afresh.
 */
import SearchableMap from "minisearch/SearchableMap"

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
/**
 * Most (skill, field) pairs a query may score, over its words and the words they stand for;
 * past it the most common words are dropped (down to one): a word most skills hold says little
 * (BM25 weighs it near zero) and is what makes a search slow.
 */
const MAX_QUERY_PAIRS = 10_000
/**
 * A word's occurrences counted at most in a field of a skill (an entry each): more than a
 * 1,024-character description holds, so a hostile long one costs no more.
 */
const MAX_OCCURRENCES = 512

/** MiniSearch's defaults, which the rankings were tuned with. */
const PREFIX_WEIGHT = 0.375
const TYPO_WEIGHT = 0.45
const [K, B, D] = [1.2, 0.7, 0.5]
/** Per field (0: the id and the name, 1: the description): its weight. */
const FIELD_BOOSTS = [3, 1] as const

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

/**
 * A skill's fields: the id and the name in one (usually equal: half the entries of two
 * fields), then the description. Per field: its words with their counts, and its length as
 * MiniSearch measures it (distinct raw tokens).
 */
const fieldsOf = (skill: Searchable) =>
  [skill.name === skill.id ? skill.id : `${skill.id} ${skill.name}`, skill.description].map((text) => {
    const tokens = text.split(WORD_SEPARATORS)
    const counts = new Map<string, number>()
    for (const token of tokens) {
      const word = processTerm(token)
      if (word !== null) counts.set(word, (counts.get(word) ?? 0) + 1)
    }
    return { counts, length: new Set(tokens).size }
  })

const bitCount = (bits: number) => {
  let count = 0
  for (let rest = bits; rest !== 0; rest &= rest - 1) count++
  return count
}

interface Term {
  /** `document * 2 + field` per occurrence; a document's entries side by side. */
  postings: Uint32Array
  used: number
  /** Per field: how many current skills hold the term there. */
  readonly holders: [number, number]
}

/** The terms a query word stands for, with their weights. */
type Expansions = ReadonlyArray<readonly [Term, number]>

class Index<S extends Searchable> {
  /** The terms: a radix tree for prefix and typo lookups, a Map for exact ones (halves the build). */
  readonly tree = new SearchableMap<Term>()
  readonly terms = new Map<string, Term>()
  /** Per document number: its skill (undefined once removed) and catalog position. */
  readonly skills: Array<S | undefined> = []
  readonly positions: Array<number> = []
  /** Per entry (`document * 2 + field`): the field's length, 0 once the document is removed. */
  readonly lengths: Array<number> = []
  /** Per field: the summed length of the current skills (for the average). */
  readonly totalLengths = [0, 0]
  readonly documentOf = new Map<string, number>()
  removed = 0

  add(skill: S, position: number) {
    const document = this.skills.length
    this.skills.push(skill)
    this.positions.push(position)
    this.documentOf.set(skill.id, document)
    fieldsOf(skill).forEach(({ counts, length }, field) => {
      this.lengths.push(length)
      this.totalLengths[field] = (this.totalLengths[field] ?? 0) + length
      for (const [word, occurrences] of counts) {
        let term = this.terms.get(word)
        if (term === undefined) {
          term = { postings: new Uint32Array(2), used: 0, holders: [0, 0] }
          this.terms.set(word, term)
          this.tree.set(word, term)
        }
        const used = term.used + Math.min(occurrences, MAX_OCCURRENCES)
        if (used > term.postings.length) {
          const larger = new Uint32Array(Math.max(used, term.postings.length * 2))
          larger.set(term.postings)
          term.postings = larger
        }
        term.postings.fill(document * 2 + field, term.used, used)
        term.used = used
        term.holders[field] = (term.holders[field] ?? 0) + 1
      }
    })
  }

  remove(document: number) {
    const skill = this.skills[document]
    if (skill === undefined) return
    fieldsOf(skill).forEach(({ counts, length }, field) => {
      this.totalLengths[field] = (this.totalLengths[field] ?? 0) - length
      this.lengths[document * 2 + field] = 0
      for (const word of counts.keys()) {
        const term = this.terms.get(word)
        if (term !== undefined) term.holders[field] = (term.holders[field] ?? 1) - 1
      }
    })
    this.skills[document] = undefined
    this.documentOf.delete(skill.id)
    this.removed++
  }

  /** The terms a query word stands for, with their weights (MiniSearch's rules). */
  expansions(word: string): Expansions {
    const found: Array<readonly [Term, number]> = []
    const exact = this.terms.get(word)
    if (exact !== undefined) found.push([exact, 1])
    const prefixed = new Set<string>()
    for (const [term, data] of this.tree.atPrefix(word)) {
      if (term.length === word.length) continue
      prefixed.add(term)
      found.push([data, (PREFIX_WEIGHT * term.length) / (term.length + 0.3 * (term.length - word.length))])
    }
    // A word some skill holds is taken as meant; only an unknown word may be a typo.
    const held = exact !== undefined && exact.holders[0] + exact.holders[1] > 0
    const typos = held ? 0 : word.length >= 9 ? 2 : word.length >= 5 ? 1 : 0
    if (typos === 0) return found
    for (const [term, [data, distance]] of this.tree.fuzzyGet(word, typos)) {
      if (distance > 0 && !prefixed.has(term))
        found.push([data, (TYPO_WEIGHT * term.length) / (term.length + distance)])
    }
    return found
  }

  /** Per query word, its expansions; less the most common words while too many pairs hold them. */
  affordable(words: ReadonlyArray<string>): Array<Expansions> {
    const costs = words.map((word) => {
      const terms = this.expansions(word)
      return { terms, cost: terms.reduce((sum, [{ holders }]) => sum + holders[0] + holders[1], 0) }
    })
    costs.sort((a, b) => a.cost - b.cost)
    let total = costs.reduce((sum, { cost }) => sum + cost, 0)
    while (costs.length > 1 && total > MAX_QUERY_PAIRS) total -= costs.pop()?.cost ?? 0
    return costs.map(({ terms }) => terms)
  }

  /** Skills by relevance to the words (at most 16) these expansions stand for, best first. */
  rank(words: ReadonlyArray<Expansions>): Ranking<S> {
    const { lengths, positions } = this
    const count = this.documentOf.size
    const averages = this.totalLengths.map((total) => total / count)
    const scores = new Float64Array(this.skills.length)
    /** Per document number: the query words it matched, a bit each. */
    const matched = new Uint16Array(this.skills.length)
    const hits: Array<number> = []
    words.forEach((terms, bit) => {
      for (const [term, weight] of terms) {
        const { postings, used, holders } = term
        const idf = holders.map((holding) => Math.log(1 + (count - holding + 0.5) / (holding + 0.5)))
        let at = 0
        while (at < used) {
          const entry = postings[at] ?? 0
          let frequency = 1
          while (++at < used && postings[at] === entry) frequency++
          const length = lengths[entry] ?? 0
          if (length === 0) continue
          const document = entry >>> 1
          const field = entry & 1
          const norm = K * (1 - B + (B * length) / (averages[field] ?? 1))
          const bm25 = (idf[field] ?? 0) * (D + (frequency * (K + 1)) / (frequency + norm))
          if (matched[document] === 0) hits.push(document)
          matched[document] = (matched[document] ?? 0) | (1 << bit)
          scores[document] = (scores[document] ?? 0) + weight * (FIELD_BOOSTS[field] ?? 1) * bm25
        }
      }
    })
    const all = hits.filter((document) => matched[document] === (1 << words.length) - 1)
    const ranked = all.length > 0 ? all : hits
    for (const document of ranked)
      scores[document] = (scores[document] ?? 0) * bitCount(matched[document] ?? 0)
    ranked.sort((a, b) => (scores[b] ?? 0) - (scores[a] ?? 0) || (positions[a] ?? 0) - (positions[b] ?? 0))
    const skills: Array<S> = []
    for (const document of ranked) {
      const skill = this.skills[document]
      if (skill !== undefined) skills.push(skill)
    }
    return { skills, match: all.length > 0 || hits.length === 0 ? "all" : "any" }
  }
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
  let index = new Index<S>()

  const sync = (skills: ReadonlyArray<S>, byId: ReadonlyMap<string, S>) => {
    skills.forEach((skill, position) => {
      const document = index.documentOf.get(skill.id)
      // Another object for the id is an edit: the catalog keeps unchanged skills as they are.
      if (document !== undefined && index.skills[document] === skill) index.positions[document] = position
      else {
        if (document !== undefined) index.remove(document)
        index.add(skill, position)
      }
    })
    // Every current id is indexed now, so any extra one is a skill that left.
    if (index.documentOf.size !== skills.length) {
      for (const [id, document] of [...index.documentOf])
        if (byId.get(id) === undefined) index.remove(document)
    }
    if (index.removed > Math.max(64, index.documentOf.size / 4)) {
      index = new Index<S>()
      skills.forEach((skill, position) => {
        index.add(skill, position)
      })
    }
  }

  return {
    sync,
    addNew: (skill) => {
      if (!index.documentOf.has(skill.id)) index.add(skill, index.documentOf.size)
    },
    rank: (query) => {
      const words = [...new Set(searchWords(query))].slice(0, MAX_QUERY_WORDS)
      if (words.length === 0) return { skills: [], match: "all" }
      return index.rank(index.affordable(words))
    },
    size: () => index.documentOf.size,
  }
}
