/**
 * Search: ranks skills by relevance to a query over four fields: the id and the name, the
 * description, and the SKILL.md body's headings and text (given later, by `addBody`). Words
 * become terms as src/catalog/Words.ts says (split, stop words, stems). The rules as users see
 * them are in docs/MCP.md, `list_skills`.
 *
 * The scoring is BM25F: per skill and query term, the occurrences in each field, weighted by the
 * field and normalised by its length, are summed before they saturate, times the term's rarity
 * among skills; a skill's score is then multiplied by the number of query words it matches.
 * Query words also stand for the terms their term begins and, when no skill holds it, terms a
 * typo or two away (MiniSearch's radix tree, `minisearch/SearchableMap`, finds both), at lower
 * weights. The postings are ours: per term, a typed array of (skill, field) pairs and one of
 * counts, and a ranking sums scores in one array by document number (MiniSearch's own index, a
 * Map per term and field and an object per match, costs several times the memory and query time).
 *
 * `sync` re-indexes only skills whose metadata object changed (the catalog keeps unchanged ones
 * as the very same objects); an edited skill is a new document, whose body is indexed again. A
 * removed skill's postings stay, skipped: a ranking counts a term's holders among current skills
 * only, so scores equal a fresh index's. Once removed skills outnumber a quarter of the current
 * ones (and 64), their postings and document numbers are dropped (`compact`). Until then they
 * still count toward the bound on a query's postings, so near that bound a query may leave out
 * a common word a fresh index would keep.
 */
import SearchableMap from "minisearch/SearchableMap"
import type { Ranking } from "./Ranking.js"
import { LazyRanking } from "./Ranking.js"
import type { QueryWord } from "./Words.js"
import { bodyParts, forEachTerm, queryWords } from "./Words.js"

/** What is searched, besides a body given later. */
export interface Searchable {
  readonly id: string
  readonly name: string
  readonly description: string
}

/** How to rank, besides the query. */
export interface RankOptions<S extends Searchable> {
  /** Other weights than the index's (to compare them). */
  readonly weights?: RankingWeights
  /**
   * Only the skills it keeps are ranked (a caller's view of the catalog), as an index of only
   * those would rank them: counts and lengths are theirs alone.
   */
  readonly within?: ((skill: S) => boolean) | undefined
  /** A skill listed first whether the query's words match it or not (an exact id or name). */
  readonly first?: S | undefined
  /**
   * Only the skills it shows are listed, ranked as among all (`match` is the whole ranking's):
   * the skills the Skills extension publishes.
   */
  readonly shown?: ((skill: S) => boolean) | undefined
}

const MAX_QUERY_WORDS = 12
/**
 * Most postings ((skill, field) pairs) a query may read, over its words and the words they stand
 * for; past it the most common words are dropped (down to one): a word most skills hold says
 * little (BM25 weighs it near zero) and is what makes a search slow.
 */
const MAX_QUERY_POSTINGS = 40_000
/** A word's occurrences counted at most in a field of a skill (a posting holds the count). */
const MAX_OCCURRENCES = 0xffff
/** A body is indexed up to this many characters (a SKILL.md is meant to stay under 500 lines). */
const MAX_BODY_CHARS = 100_000

/** The fields of a skill, each a posting's low two bits. */
const ID_AND_NAME = 0
const DESCRIPTION = 1
const HEADINGS = 2
const BODY = 3
const FIELDS = 4
/**
 * How a ranking weighs what it finds. The defaults were chosen on the relevance evaluation
 * (test/bench/search-eval): `node test/bench/search-tune.mjs` scores a grid of weightings on it,
 * the same for every query, and the defaults sit in a region where neighbours score alike.
 */
export interface RankingWeights {
  /** Per field (id and name, description, headings, body text): an occurrence's weight. */
  readonly fields: readonly [number, number, number, number]
  /** A term the query word's term begins, and one a typo away, against an exact match's 1. */
  readonly prefix: number
  readonly typo: number
  /** BM25F: frequency saturation, length normalisation, and a floor for any match (BM25+). */
  readonly k: number
  readonly b: number
  readonly d: number
}

export const DEFAULT_WEIGHTS: RankingWeights = {
  fields: [3, 1, 0.5, 0.05],
  prefix: 0.1,
  typo: 0.45,
  k: 1.2,
  b: 0.9,
  d: 0,
}

/** A field's text as indexed: its terms with their counts, and its length in terms. */
const countTerms = (text: string) => {
  const counts = new Map<string, number>()
  let length = 0
  forEachTerm(text, (term) => {
    counts.set(term, (counts.get(term) ?? 0) + 1)
    length++
  })
  return { counts, length }
}

const bitCount = (bits: number) => {
  let count = 0
  for (let rest = bits; rest !== 0; rest &= rest - 1) count++
  return count
}

interface Term {
  /** A posting per (skill, field) holding the term: `document * 4 + field`, and its count there. */
  postings: Uint32Array
  counts: Uint16Array
  used: number
}

/** The terms a query word stands for, with their weights. */
type Expansions = ReadonlyArray<readonly [Term, number]>

/**
 * The documents a ranking is among, 1 for each (a caller's view of the catalog); undefined:
 * every current skill. Counts and lengths are then those of these documents alone, so a
 * ranking in a view is the ranking of an index holding only its skills.
 */
type Within = Uint8Array | undefined

/** How many skills a ranking is among, and per field the average length of those that have it. */
interface Statistics {
  readonly count: number
  readonly averages: ReadonlyArray<number>
}

class Index<S extends Searchable> {
  /** The terms: a radix tree for prefix and typo lookups, a Map for exact ones (halves the build). */
  readonly tree = new SearchableMap<Term>()
  readonly terms = new Map<string, Term>()
  /** Per document number: its skill (undefined once removed), catalog position, body indexed. */
  readonly skills: Array<S | undefined> = []
  readonly positions: Array<number> = []
  readonly withBody: Array<boolean> = []
  /** Per entry (`document * 4 + field`): the field's length in terms. */
  readonly lengths: Array<number> = []
  /** Per field: the summed length over the current skills that have it indexed. */
  readonly totalLengths = [0, 0, 0, 0]
  readonly documentOf = new Map<string, number>()
  /** Current skills whose body is indexed. */
  bodies = 0
  removed = 0
  /** Bumped whenever what is indexed changes: a view's mask and statistics are of one count. */
  private changes = 0
  /** Per view (its `keep`, one function per view of a snapshot): its mask and statistics. */
  private readonly views = new WeakMap<
    (skill: S) => boolean,
    { readonly changes: number; readonly mask: Uint8Array; readonly statistics: Statistics }
  >()

  private addField(document: number, field: number, text: string) {
    const { counts, length } = countTerms(text)
    this.lengths[document * FIELDS + field] = length
    this.totalLengths[field] = (this.totalLengths[field] ?? 0) + length
    for (const [word, occurrences] of counts) {
      let term = this.terms.get(word)
      if (term === undefined) {
        term = { postings: new Uint32Array(2), counts: new Uint16Array(2), used: 0 }
        this.terms.set(word, term)
        this.tree.set(word, term)
      }
      if (term.used === term.postings.length) {
        const postings = new Uint32Array(term.used * 2)
        const counts = new Uint16Array(term.used * 2)
        postings.set(term.postings)
        counts.set(term.counts)
        term.postings = postings
        term.counts = counts
      }
      term.postings[term.used] = document * FIELDS + field
      term.counts[term.used] = Math.min(occurrences, MAX_OCCURRENCES)
      term.used++
    }
  }

  add(skill: S, position: number) {
    this.changes++
    const document = this.skills.length
    this.skills.push(skill)
    this.positions.push(position)
    this.withBody.push(false)
    this.lengths.push(0, 0, 0, 0)
    this.documentOf.set(skill.id, document)
    this.addField(document, ID_AND_NAME, skill.name === skill.id ? skill.id : `${skill.id} ${skill.name}`)
    this.addField(document, DESCRIPTION, skill.description)
  }

  /** Indexes the body of a skill indexed as this very object; answers whether it did. */
  addBody(skill: S, body: string) {
    const document = this.documentOf.get(skill.id)
    if (document === undefined || this.skills[document] !== skill || this.withBody[document]) return false
    const { headings, text } = bodyParts(body.slice(0, MAX_BODY_CHARS))
    this.addField(document, HEADINGS, headings)
    this.addField(document, BODY, text)
    this.withBody[document] = true
    this.bodies++
    this.changes++
    return true
  }

  needsBody(skill: S) {
    const document = this.documentOf.get(skill.id)
    return document !== undefined && this.skills[document] === skill && this.withBody[document] === false
  }

  /** Leaves a document out: its postings stay, skipped, and count for nothing. */
  remove(document: number) {
    const skill = this.skills[document]
    if (skill === undefined) return
    const fields = this.withBody[document] ? FIELDS : HEADINGS
    for (let field = 0; field < fields; field++)
      this.totalLengths[field] =
        (this.totalLengths[field] ?? 0) - (this.lengths[document * FIELDS + field] ?? 0)
    if (this.withBody[document]) this.bodies--
    this.skills[document] = undefined
    this.documentOf.delete(skill.id)
    this.removed++
    this.changes++
  }

  /**
   * Drops what removed skills left: their postings, terms no skill holds any more, and their
   * document numbers (the current skills are numbered afresh, in the same order).
   */
  compact() {
    const renumbered = new Int32Array(this.skills.length).fill(-1)
    let live = 0
    for (let document = 0; document < this.skills.length; document++) {
      const skill = this.skills[document]
      if (skill === undefined) continue
      renumbered[document] = live
      this.skills[live] = skill
      this.positions[live] = this.positions[document] ?? 0
      this.withBody[live] = this.withBody[document] ?? false
      for (let field = 0; field < FIELDS; field++)
        this.lengths[live * FIELDS + field] = this.lengths[document * FIELDS + field] ?? 0
      this.documentOf.set(skill.id, live)
      live++
    }
    this.skills.length = live
    this.positions.length = live
    this.withBody.length = live
    this.lengths.length = live * FIELDS
    for (const [word, term] of this.terms) {
      let kept = 0
      for (let at = 0; at < term.used; at++) {
        const entry = term.postings[at] ?? 0
        const document = renumbered[entry >>> 2] ?? -1
        if (document < 0) continue
        term.postings[kept] = document * FIELDS + (entry & 3)
        term.counts[kept] = term.counts[at] ?? 0
        kept++
      }
      term.used = kept
      if (kept === 0) {
        this.terms.delete(word)
        this.tree.delete(word)
      } else if (kept < term.postings.length / 4) {
        term.postings = term.postings.slice(0, kept)
        term.counts = term.counts.slice(0, kept)
      }
    }
    this.removed = 0
    this.changes++
  }

  /**
   * The documents of the current skills `keep` keeps, and their statistics; made again only
   * once the index changed or for another `keep`.
   */
  within(keep: (skill: S) => boolean): { readonly mask: Uint8Array; readonly statistics: Statistics } {
    const known = this.views.get(keep)
    if (known !== undefined && known.changes === this.changes) return known
    const mask = new Uint8Array(this.skills.length)
    this.skills.forEach((skill, document) => {
      if (skill !== undefined && keep(skill)) mask[document] = 1
    })
    const view = { changes: this.changes, mask, statistics: this.statistics(mask) }
    this.views.set(keep, view)
    return view
  }

  /** The document is a current skill (among `within`, when given). */
  private counts(document: number, within: Within) {
    return this.skills[document] !== undefined && (within === undefined || within[document] === 1)
  }

  /** Some current skill (among `within`) holds the term. */
  held(term: Term, within: Within) {
    for (let at = 0; at < term.used; at++)
      if (this.counts((term.postings[at] ?? 0) >>> 2, within)) return true
    return false
  }

  /** How many skills are ranked among, per field how many have it indexed, and its average length. */
  private statistics(within: Within): Statistics {
    if (within === undefined) {
      const count = this.documentOf.size
      /** Bodies come after the metadata. */
      const indexed = [count, count, this.bodies, this.bodies]
      return {
        count,
        averages: this.totalLengths.map((total, field) => total / Math.max(1, indexed[field] ?? 1)),
      }
    }
    let count = 0
    let bodies = 0
    const totals = [0, 0, 0, 0]
    for (let document = 0; document < this.skills.length; document++) {
      if (!this.counts(document, within)) continue
      count++
      if (this.withBody[document]) bodies++
      for (let field = 0; field < FIELDS; field++)
        totals[field] = (totals[field] ?? 0) + (this.lengths[document * FIELDS + field] ?? 0)
    }
    const indexed = [count, count, bodies, bodies]
    return { count, averages: totals.map((total, field) => total / Math.max(1, indexed[field] ?? 1)) }
  }

  /**
   * The terms a query word stands for, with their weights (MiniSearch's rules): its term, the
   * terms its term begins (`fail` begins `failur`, the stem of `failure`), and, for a term no
   * skill holds, the terms a typo or two away (how many from the word's length as typed).
   */
  expansions({ term: stem, word }: QueryWord, weights: RankingWeights, within: Within): Expansions {
    const found: Array<readonly [Term, number]> = []
    const exact = this.terms.get(stem)
    if (exact !== undefined) found.push([exact, 1])
    const seen = new Set<string>([stem])
    for (const [term, data] of this.tree.atPrefix(stem)) {
      if (seen.has(term)) continue
      seen.add(term)
      found.push([data, (weights.prefix * term.length) / (term.length + 0.3 * (term.length - stem.length))])
    }
    // A word some skill holds is taken as meant; only an unknown word may be a typo.
    const typos =
      exact !== undefined && this.held(exact, within) ? 0 : word.length >= 6 ? 2 : word.length >= 4 ? 1 : 0
    if (typos === 0) return found
    for (const [term, [data, distance]] of this.tree.fuzzyGet(stem, typos)) {
      if (!seen.has(term)) found.push([data, (weights.typo * term.length) / (term.length + distance)])
    }
    return found
  }

  /**
   * Per query word, its expansions; less the most common words while they hold too many postings
   * (counted over every current skill, also outside `within`: near the bound, a caller's view may
   * leave out a word an index of only its skills would keep).
   */
  affordable(words: ReadonlyArray<QueryWord>, weights: RankingWeights, within: Within): Array<Expansions> {
    const costs = words.map((word) => {
      const terms = this.expansions(word, weights, within)
      return { terms, cost: terms.reduce((sum, [{ used }]) => sum + used, 0) }
    })
    costs.sort((a, b) => a.cost - b.cost)
    let total = costs.reduce((sum, { cost }) => sum + cost, 0)
    while (costs.length > 1 && total > MAX_QUERY_POSTINGS) total -= costs.pop()?.cost ?? 0
    return costs.map(({ terms }) => terms)
  }

  /**
   * A ranking's scratch, per document number: scores, the query words matched (a bit each), a
   * term's weighted occurrences; all zero between rankings (each clears what it touched). And
   * lists of document numbers: the skills a ranking found, and those holding one term. Made
   * anew only when the documents (or a term's postings) outgrow them.
   */
  private scratch = {
    scores: new Float64Array(0),
    matched: new Uint16Array(0),
    frequencies: new Float64Array(0),
    hits: new Uint32Array(0),
    holding: new Uint32Array(0),
  }

  private scratchFor(words: ReadonlyArray<Expansions>) {
    const documents = this.skills.length
    let postings = 0
    for (const terms of words) for (const [{ used }] of terms) postings = Math.max(postings, used)
    if (this.scratch.scores.length < documents) {
      this.scratch = {
        scores: new Float64Array(documents),
        matched: new Uint16Array(documents),
        frequencies: new Float64Array(documents),
        hits: new Uint32Array(documents),
        holding: this.scratch.holding,
      }
    }
    // A term's postings name a document once per field.
    if (this.scratch.holding.length < postings) this.scratch.holding = new Uint32Array(postings)
    return this.scratch
  }

  /**
   * Skills by relevance to the words (at most 16) these expansions stand for, best first; `first`
   * before them, and only those `shown` (RankOptions).
   */
  rank(
    words: ReadonlyArray<Expansions>,
    weights: RankingWeights,
    view: { readonly mask: Uint8Array; readonly statistics: Statistics } | undefined,
    first: S | undefined,
    shown: ((skill: S) => boolean) | undefined,
  ): Ranking<S> {
    const { lengths, positions, skills } = this
    const { fields, k, b, d } = weights
    const within = view?.mask
    const { count, averages } = view?.statistics ?? this.statistics(undefined)
    const { scores, matched, frequencies, hits, holding } = this.scratchFor(words)
    let found = 0
    words.forEach((terms, bit) => {
      for (const [term, weight] of terms) {
        const { postings, counts, used } = term
        let held = 0
        for (let at = 0; at < used; at++) {
          const entry = postings[at] ?? 0
          const document = entry >>> 2
          if (!this.counts(document, within)) continue
          const field = entry & 3
          if (frequencies[document] === 0) holding[held++] = document
          frequencies[document] =
            (frequencies[document] ?? 0) +
            ((fields[field] ?? 1) * (counts[at] ?? 1)) /
              (1 - b + (b * (lengths[entry] ?? 0)) / (averages[field] || 1))
        }
        const idf = Math.log(1 + (count - held + 0.5) / (held + 0.5))
        for (let at = 0; at < held; at++) {
          const document = holding[at] ?? 0
          const frequency = frequencies[document] ?? 0
          frequencies[document] = 0
          if (matched[document] === 0) hits[found++] = document
          matched[document] = (matched[document] ?? 0) | (1 << bit)
          scores[document] =
            (scores[document] ?? 0) + weight * idf * (d + (frequency * (k + 1)) / (frequency + k))
        }
      }
    })
    // Skills matching more of the words first; `match` says whether the best matched all.
    let best = hits[0] ?? 0
    for (let at = 0; at < found; at++) {
      const document = hits[at] ?? 0
      const score = (scores[document] ?? 0) * bitCount(matched[document] ?? 0)
      scores[document] = score
      const bestScore = scores[best] ?? 0
      if (score > bestScore || (score === bestScore && (positions[document] ?? 0) < (positions[best] ?? 0)))
        best = document
    }
    const match = found === 0 || matched[best] === (1 << words.length) - 1 ? "all" : "any"
    // What the ranking keeps of each skill listed; the scratch is cleared behind.
    const listed: Array<S> = []
    const listedScores = new Float64Array(found + 1)
    const listedPositions = new Uint32Array(found + 1)
    let firstAt: number | undefined
    for (let at = 0; at < found; at++) {
      const document = hits[at] ?? 0
      const skill = skills[document]
      if (skill !== undefined && (shown === undefined || shown(skill))) {
        if (skill === first) firstAt = listed.length
        listedScores[listed.length] = scores[document] ?? 0
        listedPositions[listed.length] = positions[document] ?? 0
        listed.push(skill)
      }
      scores[document] = 0
      matched[document] = 0
    }
    if (first !== undefined && firstAt === undefined && (shown === undefined || shown(first))) {
      firstAt = listed.length
      listed.push(first)
    }
    return new LazyRanking(listed, listedScores, listedPositions, match, firstAt)
  }
}

export interface SearchIndex<S extends Searchable> {
  /**
   * Makes the index hold exactly `skills` (unique ids), in this order (the catalog's: equal
   * scores rank in it); re-indexes only what changed. Ranks only after a sync. Answers the
   * skills it indexed (new or edited), whose bodies are not indexed yet.
   */
  readonly sync: (skills: ReadonlyArray<S>, byId: ReadonlyMap<string, S>) => ReadonlyArray<S>
  /** Adds a skill unless it is indexed already (the first build, skill by skill in slices). */
  readonly addNew: (skill: S) => void
  /**
   * Indexes a skill's body (the first MAX_BODY_CHARS characters), if this very skill object is
   * indexed and its body is not yet; answers whether it did.
   */
  readonly addBody: (skill: S, body: string) => boolean
  /** Whether this very skill object is indexed, without its body yet. */
  readonly needsBody: (skill: S) => boolean
  /** Ranks the skills of the last sync (RankOptions says how). */
  readonly rank: (query: string, options?: RankOptions<S>) => Ranking<S>
  /** How many skills are indexed, and how many of them with their body. */
  readonly size: () => { readonly skills: number; readonly bodies: number }
}

export const makeSearchIndex = <S extends Searchable>(): SearchIndex<S> => {
  const index = new Index<S>()

  const sync = (skills: ReadonlyArray<S>, byId: ReadonlyMap<string, S>) => {
    const added: Array<S> = []
    skills.forEach((skill, position) => {
      const document = index.documentOf.get(skill.id)
      // Another object for the id is an edit: the catalog keeps unchanged skills as they are.
      if (document !== undefined && index.skills[document] === skill) index.positions[document] = position
      else {
        if (document !== undefined) index.remove(document)
        index.add(skill, position)
        added.push(skill)
      }
    })
    // Every current id is indexed now, so any extra one is a skill that left.
    if (index.documentOf.size !== skills.length) {
      for (const [id, document] of [...index.documentOf])
        if (byId.get(id) === undefined) index.remove(document)
    }
    if (index.removed > Math.max(64, index.documentOf.size / 4)) index.compact()
    return added
  }

  return {
    sync,
    addNew: (skill) => {
      if (!index.documentOf.has(skill.id)) index.add(skill, index.documentOf.size)
    },
    addBody: (skill, body) => index.addBody(skill, body),
    needsBody: (skill) => index.needsBody(skill),
    rank: (query, { weights = DEFAULT_WEIGHTS, within: keep, first, shown } = {}) => {
      const words = queryWords(query).slice(0, MAX_QUERY_WORDS)
      // Without words, no statistics are needed: the ranking holds `first` at most.
      const view = keep === undefined || words.length === 0 ? undefined : index.within(keep)
      return index.rank(index.affordable(words, weights, view?.mask), weights, view, first, shown)
    },
    size: () => ({ skills: index.documentOf.size, bodies: index.bodies }),
  }
}
