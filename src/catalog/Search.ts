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
 * The terms are kept in MiniSearch's radix tree (`minisearch/SearchableMap`, which gives the
 * prefix and typo lookups), and the scoring is MiniSearch's (BM25+, its prefix and typo
 * weights, a skill's score times the number of query words it matches): a test holds the
 * ranking equal to MiniSearch's own `search`, order included. The rest is ours:
 * - Postings are one typed array per term, an entry per occurrence (`document * 2 + field`).
 *   MiniSearch keeps a Map per term and field with an entry per document: at 10,000 skills
 *   (4,457 terms, 337,555 postings) its index held 16.5 MB of heap, and building it took 34 MB
 *   more (garbage) and raised the process's RSS by 40 MB; this one holds 2.3 MB (with a Map
 *   of the terms for exact lookups) and raised the RSS by 23 MB, built in 140 to 210 ms
 *   against 190 to 320 without that Map and 275 to 400 for MiniSearch's (in process, over
 *   mcpbench's corpus of 10,000 skills).
 * - MiniSearch's `search` builds a result object with match details for every matching skill
 *   and then intersects them: at 10,000 skills, a query whose words thousands of skills hold
 *   took 4 to 15 ms (in-process, warm). Here scores add up in reused typed arrays indexed by
 *   document number, and each number's catalog position and skill are kept: a ranking
 *   allocates only its list, and looks nothing up by id. BM25's length normalisation of each
 *   skill and field is computed once after a change, not for every posting: the bench's 400
 *   queries at 10,000 skills took 76 to 78 ms in process, against 84 to 88 over MiniSearch's
 *   Maps and 97 to 107 before this.
 *
 * The index follows the catalog incrementally: `sync` re-indexes only skills whose metadata
 * object changed (the catalog keeps unchanged skills as the very same objects) and drops the
 * ones that left. A removed skill's entries stay in the postings, skipped (it has no length),
 * until removed ones outnumber a quarter of the current ones (and 64); the postings are then
 * rewritten without them and the documents numbered again. Counts of the skills holding each term are exact at all times
 * (MiniSearch's counted removed skills until its vacuum).
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

/** Which of a double's two 32-bit words holds its low bits, and which its sign and exponent. */
const LOW_WORD = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1 ? 0 : 1
const HIGH_WORD = 1 - LOW_WORD

/** The radix sort's digits: three passes of 11 bits cover a 32-bit word. */
const DIGIT_BITS = 11
const DIGIT_PASSES = 3
const DIGIT_VALUES = 1 << DIGIT_BITS
const DIGIT_MASK = DIGIT_VALUES - 1

/** Most skills a query's words may be held by, summed over the words. */
const MAX_QUERY_POSTINGS = 10_000

/** MiniSearch's defaults, which the rankings were tuned with. */
const PREFIX_WEIGHT = 0.375
const TYPO_WEIGHT = 0.45
const BM25_K = 1.2
const BM25_B = 0.7
const BM25_D = 0.5

/** Indexed fields, in MiniSearch's field order, with their weights. */
const FIELDS = ["names", "description"] as const
const FIELD_BOOSTS = [3, 1] as const

const bitCount = (bits: number) => {
  let count = 0
  for (let rest = bits; rest !== 0; rest &= rest - 1) count++
  return count
}

/**
 * A word's occurrences in one field of one skill counted at most (an entry each): no word
 * occurs more often in a description within the 1,024-character limit, and BM25 hardly tells
 * more apart. A hostile 256 KB frontmatter repeating one word then costs 512 entries, not
 * 80,000.
 */
const MAX_OCCURRENCES = 512

/** `array` with room for `size` entries at least (a copy when it had less, doubling). */
function withRoom(array: Uint32Array, size: number): Uint32Array
function withRoom(array: Float64Array, size: number): Float64Array
function withRoom(array: Uint32Array | Float64Array, size: number): Uint32Array | Float64Array {
  if (array.length >= size) return array
  const larger =
    array instanceof Uint32Array
      ? new Uint32Array(Math.max(16, size, array.length * 2))
      : new Float64Array(Math.max(16, size, array.length * 2))
  larger.set(array)
  return larger
}

/** One field's text of a skill, as indexed (see INDEX_OPTIONS). */
const fieldText = (skill: Searchable, field: number) =>
  INDEX_OPTIONS.extractField(skill, FIELDS[field] ?? "description")

/**
 * The index: each term has a number (MiniSearch's radix tree finds them by prefix or typo, a
 * Map exactly); the postings are typed arrays of our own (see the top of this file).
 */
class SkillIndex<S extends Searchable> {
  /** Each term, to its term number: the tree for prefix and typo lookups... */
  private readonly terms = new SearchableMap<number>()
  /**
   * ...and a Map for exact ones: the tree's lookup walks each node's children in turn, and was
   * a fifth of the index's build at 10,000 skills.
   */
  private readonly numbers = new Map<string, number>()
  /** Per term number: its text (to drop it from `terms` when no document holds it any more). */
  private termText: Array<string> = []
  /**
   * Per term number: one entry per occurrence, `document * 2 + field`, in the order documents
   * were added (a word said twice in a description is two equal entries side by side).
   */
  private postings: Array<Uint32Array> = []
  /** Per term number: the entries of `postings` in use. */
  private used: Uint32Array = new Uint32Array(0)
  /** Per term number and field (at `term * 2 + field`): how many current documents hold it. */
  private holding: Uint32Array = new Uint32Array(0)
  private readonly freeTerms: Array<number> = []
  private nextTerm = 0

  /** Per document number: its skill, until removed. */
  private documents: Array<S | undefined> = []
  private readonly documentOf = new Map<string, number>()
  private nextDocument = 0
  /** Current documents, and removed ones whose entries are still in the postings. */
  private documentCount = 0
  private removed = 0
  /**
   * Per field, then document number: the field's length as MiniSearch measures it (its
   * distinct raw tokens); 0 for a removed document, whose entries are then skipped.
   */
  private lengths: [Uint32Array, Uint32Array] = [new Uint32Array(0), new Uint32Array(0)]
  /** Per field: the average length, kept as MiniSearch keeps it (the same rounding). */
  private readonly averages = [0, 0]

  /**
   * Per document number: the score so far, the current word's share, the words matched (a bit
   * per query word) and the catalog position (ties rank in it). Reused by every ranking, the
   * first three left all zero.
   */
  private total: Float64Array = new Float64Array(0)
  private share: Float64Array = new Float64Array(0)
  private words: Uint32Array = new Uint32Array(0)
  private place: Float64Array = new Float64Array(0)
  /** `total`'s bits, two 32-bit words per document (see `bestFirst`). */
  private scoreBits: Uint32Array = new Uint32Array(0)
  /** Room for the sort of a ranking (see `bestFirst`), reused as `total` is. */
  private order: Uint32Array = new Uint32Array(0)
  private spareOrder: Uint32Array = new Uint32Array(0)
  private sortKeys: Uint32Array = new Uint32Array(0)
  private spareKeys: Uint32Array = new Uint32Array(0)
  private readonly digits = new Uint32Array(DIGIT_PASSES * DIGIT_VALUES)

  get size() {
    return this.documentOf.size
  }

  ids(): Iterable<string> {
    return this.documentOf.keys()
  }

  skillOf(id: string): S | undefined {
    const document = this.documentOf.get(id)
    return document === undefined ? undefined : this.documents[document]
  }

  private termNumber(term: string): number {
    const known = this.numbers.get(term)
    if (known !== undefined) return known
    const number = this.freeTerms.pop() ?? this.nextTerm++
    this.terms.set(term, number)
    this.numbers.set(term, number)
    this.termText[number] = term
    this.postings[number] = new Uint32Array(2)
    this.used = withRoom(this.used, number + 1)
    this.holding = withRoom(this.holding, number * 2 + 2)
    // A reused number starts empty (the purge that freed it emptied it already).
    this.used[number] = 0
    this.holding[number * 2] = 0
    this.holding[number * 2 + 1] = 0
    return number
  }

  /** Per field: the skill's distinct processed terms with their counts, and the raw length. */
  private fields(skill: S) {
    return FIELDS.map((_, field) => {
      const tokens = tokenize(fieldText(skill, field))
      const counts = new Map<string, number>()
      for (const token of tokens) {
        const term = processTerm(token)
        if (term !== null) counts.set(term, (counts.get(term) ?? 0) + 1)
      }
      return { counts, length: new Set(tokens).size }
    })
  }

  /** Indexes a skill whose id is not indexed. */
  add(skill: S) {
    this.normsStale = true
    const document = this.nextDocument++
    this.documentOf.set(skill.id, document)
    this.documents[document] = skill
    const before = this.documentCount++
    this.fields(skill).forEach(({ counts, length }, field) => {
      const lengths = withRoom(this.lengths[field] ?? new Uint32Array(0), document + 1)
      lengths[document] = length
      this.lengths[field] = lengths
      this.averages[field] = ((this.averages[field] ?? 0) * before + length) / (before + 1)
      const entry = document * 2 + field
      for (const [term, occurrences] of counts) {
        const count = Math.min(occurrences, MAX_OCCURRENCES)
        const number = this.termNumber(term)
        const at = this.used[number] ?? 0
        const postings = withRoom(this.postings[number] ?? new Uint32Array(0), at + count)
        postings.fill(entry, at, at + count)
        this.postings[number] = postings
        this.used[number] = at + count
        this.holding[number * 2 + field] = (this.holding[number * 2 + field] ?? 0) + 1
      }
    })
  }

  /** Removes an indexed skill; its entries stay in the postings, skipped, until `compact`. */
  remove(id: string) {
    const document = this.documentOf.get(id)
    const skill = document === undefined ? undefined : this.documents[document]
    if (document === undefined || skill === undefined) return
    this.normsStale = true
    const count = this.documentCount
    this.fields(skill).forEach(({ counts }, field) => {
      const lengths = this.lengths[field] ?? new Uint32Array(0)
      const length = lengths[document] ?? 0
      const average = this.averages[field] ?? 0
      this.averages[field] = count === 1 ? 0 : (average * count - length) / (count - 1)
      lengths[document] = 0
      for (const term of counts.keys()) {
        const number = this.numbers.get(term)
        if (number !== undefined)
          this.holding[number * 2 + field] = (this.holding[number * 2 + field] ?? 1) - 1
      }
    })
    this.documentOf.delete(id)
    this.documents[document] = undefined
    this.documentCount--
    this.removed++
  }

  /**
   * Drops the entries of removed documents once they outnumber a quarter of the current ones
   * (and 64), numbering the documents again from 0, and the terms no document holds any more.
   */
  compact() {
    if (this.removed <= Math.max(64, this.documentCount / 4)) return
    this.normsStale = true
    const renumbered = new Int32Array(this.nextDocument).fill(-1)
    const documents: Array<S | undefined> = []
    const lengths: [Uint32Array, Uint32Array] = [
      new Uint32Array(this.documentCount),
      new Uint32Array(this.documentCount),
    ]
    this.documents.forEach((skill, document) => {
      if (skill === undefined) return
      const number = documents.length
      renumbered[document] = number
      documents.push(skill)
      this.documentOf.set(skill.id, number)
      lengths.forEach((kept, field) => {
        kept[number] = this.lengths[field]?.[document] ?? 0
      })
    })
    for (let number = 0; number < this.nextTerm; number++) {
      const postings = this.postings[number]
      const used = this.used[number] ?? 0
      if (postings === undefined || used === 0) continue
      const kept = new Uint32Array(used)
      let length = 0
      for (let at = 0; at < used; at++) {
        const entry = postings[at] ?? 0
        const document = renumbered[entry >>> 1] ?? -1
        if (document >= 0) kept[length++] = document * 2 + (entry & 1)
      }
      if (length > 0) {
        this.postings[number] = kept.slice(0, length)
        this.used[number] = length
      } else {
        this.terms.delete(this.termText[number] ?? "")
        this.numbers.delete(this.termText[number] ?? "")
        this.termText[number] = ""
        this.postings[number] = new Uint32Array(0)
        this.used[number] = 0
        this.freeTerms.push(number)
      }
    }
    this.documents = documents
    this.lengths = lengths
    this.nextDocument = documents.length
    this.removed = 0
    // The ranking's arrays were sized for the old numbers.
    this.roomForRanking(0)
    this.place = new Float64Array(0)
  }

  /** The arrays a ranking uses, for `size` document numbers (all zero). */
  private roomForRanking(size: number) {
    this.total = new Float64Array(size)
    this.share = new Float64Array(size)
    this.words = new Uint32Array(size)
    this.scoreBits = new Uint32Array(this.total.buffer)
    this.order = new Uint32Array(size)
    this.spareOrder = new Uint32Array(size)
    this.sortKeys = new Uint32Array(size)
    this.spareKeys = new Uint32Array(size)
  }

  /** Records the catalog order of the indexed skills (every one of them, in that order). */
  setOrder(skills: ReadonlyArray<S>) {
    this.place = withRoom(this.place, this.nextDocument)
    skills.forEach((skill, position) => {
      const document = this.documentOf.get(skill.id)
      if (document !== undefined) this.place[document] = position
    })
  }

  /** How many skills hold `word` in one field or more. */
  holders(word: string): number {
    const number = this.numbers.get(word)
    if (number === undefined) return 0
    return Math.max(this.holding[number * 2] ?? 0, this.holding[number * 2 + 1] ?? 0)
  }

  /** The term numbers a query word stands for, with their weights (MiniSearch's rules). */
  private expansions(word: string): Array<readonly [number, number]> {
    const found: Array<readonly [number, number]> = []
    const exact = this.numbers.get(word)
    if (exact !== undefined) found.push([exact, 1])
    const prefixed = new Set<string>()
    for (const [term, number] of this.terms.atPrefix(word)) {
      const distance = term.length - word.length
      if (distance === 0) continue
      prefixed.add(term)
      found.push([number, (PREFIX_WEIGHT * term.length) / (term.length + 0.3 * distance)])
    }
    // A word some skill holds is taken as meant; only an unknown word may be a typo.
    const typos = this.holders(word) === 0 ? typosFor(word) : false
    if (typos !== false) {
      for (const [term, [number, distance]] of this.terms.fuzzyGet(word, typos)) {
        if (distance === 0 || prefixed.has(term)) continue
        found.push([number, (TYPO_WEIGHT * term.length) / (term.length + distance)])
      }
    }
    return found
  }

  /**
   * Per field, then document number: BM25's length normalisation, `k * (1 - b + b * length /
   * average)` (as MiniSearch computes it, to the same bit), or 0 for a removed document. Made
   * again for the first ranking after a change (the average moves with every skill).
   */
  private norms: [Float64Array, Float64Array] = [new Float64Array(0), new Float64Array(0)]
  private normsStale = true

  private normsOf(field: number): Float64Array {
    const lengths = this.lengths[field] ?? new Uint32Array(0)
    const average = this.averages[field] ?? 1
    const norms = new Float64Array(this.nextDocument)
    for (let document = 0; document < this.nextDocument; document++) {
      const length = lengths[document] ?? 0
      // A removed document has no length (one holding a word has a length of one or more).
      norms[document] = length === 0 ? 0 : BM25_K * (1 - BM25_B + (BM25_B * length) / average)
    }
    return norms
  }

  /** Adds one term's BM25+ scores to the current word's share; `touched` gets the new documents. */
  private score(number: number, weight: number, touched: Array<number>) {
    const postings = this.postings[number]
    const used = this.used[number] ?? 0
    if (postings === undefined) return
    const holdingNames = this.holding[number * 2] ?? 0
    const holdingDescription = this.holding[number * 2 + 1] ?? 0
    const count = this.documentCount
    const idfNames = Math.log(1 + (count - holdingNames + 0.5) / (holdingNames + 0.5))
    const idfDescription = Math.log(1 + (count - holdingDescription + 0.5) / (holdingDescription + 0.5))
    const boostNames = weight * FIELD_BOOSTS[0]
    const boostDescription = weight * FIELD_BOOSTS[1]
    const normsNames = this.norms[0]
    const normsDescription = this.norms[1]
    const share = this.share
    let at = 0
    while (at < used) {
      const entry = postings[at] ?? 0
      let frequency = 1
      while (++at < used && postings[at] === entry) frequency++
      const document = entry >>> 1
      const names = (entry & 1) === 0
      const norm = (names ? normsNames[document] : normsDescription[document]) ?? 0
      if (norm === 0) continue
      const bm25 =
        (names ? idfNames : idfDescription) * (BM25_D + (frequency * (BM25_K + 1)) / (frequency + norm))
      if (share[document] === 0) touched.push(document)
      share[document] = (share[document] ?? 0) + (names ? boostNames : boostDescription) * bm25
    }
  }

  /**
   * The skills of `ranked` (document numbers), best first: by score, then catalog position.
   * A radix sort (stable, least significant digit first: the position, then the score's bits,
   * inverted for best first), not the engine's sort with a comparator: a ranking of 7,000
   * skills makes about 90,000 comparisons, and calling a function for each was a third of the
   * query's time. Over mcpbench's 10,000 skills (in process, warm), the bench's 200 queries
   * took 0.23 to 0.24 ms each on average instead of 0.29 to 0.37, and the slowest (6,764
   * skills ranked) 1.2 to 1.6 ms instead of 1.9 to 2.1. Digits of 11 bits: 8 bits took 0.24 to
   * 0.30 ms, 16 bits 0.65. The bits of a positive, finite double order as the number does, and
   * a score is one: a sum of positive weights times BM25+ terms, each at least BM25_D (norms
   * of 0 are skipped).
   */
  private bestFirst(ranked: ReadonlyArray<number>): Array<S> {
    const count = ranked.length
    const { place, scoreBits, digits } = this
    let order = this.order.subarray(0, count)
    let spare = this.spareOrder.subarray(0, count)
    let keys = this.sortKeys.subarray(0, count)
    let spareKeys = this.spareKeys.subarray(0, count)
    for (let at = 0; at < count; at++) order[at] = ranked[at] ?? 0
    // Three 32-bit words, least significant first: the position, the score's low and high bits.
    for (let word = 0; word < 3; word++) {
      for (let at = 0; at < count; at++) {
        const document = order[at] ?? 0
        keys[at] =
          word === 0
            ? (place[document] ?? 0)
            : ~(scoreBits[document * 2 + (word === 1 ? LOW_WORD : HIGH_WORD)] ?? 0) >>> 0
      }
      // The counts of every digit of the word, in one pass over the keys.
      digits.fill(0)
      for (let at = 0; at < count; at++) {
        const key = keys[at] ?? 0
        for (let pass = 0; pass < DIGIT_PASSES; pass++) {
          const digit = pass * DIGIT_VALUES + ((key >>> (pass * DIGIT_BITS)) & DIGIT_MASK)
          digits[digit] = (digits[digit] ?? 0) + 1
        }
      }
      for (let pass = 0; pass < DIGIT_PASSES; pass++) {
        const shift = pass * DIGIT_BITS
        const base = pass * DIGIT_VALUES
        // One digit for all: this pass would leave the order as it is.
        if (digits[base + (((keys[0] ?? 0) >>> shift) & DIGIT_MASK)] === count) continue
        let sum = 0
        for (let digit = base; digit < base + DIGIT_VALUES; digit++) {
          const many = digits[digit] ?? 0
          digits[digit] = sum
          sum += many
        }
        for (let at = 0; at < count; at++) {
          const key = keys[at] ?? 0
          const digit = base + ((key >>> shift) & DIGIT_MASK)
          const slot = digits[digit] ?? 0
          digits[digit] = slot + 1
          spare[slot] = order[at] ?? 0
          spareKeys[slot] = key
        }
        const sorted = spare
        spare = order
        order = sorted
        const sortedKeys = spareKeys
        spareKeys = keys
        keys = sortedKeys
      }
    }
    const skills: Array<S> = []
    for (let at = 0; at < count; at++) {
      const skill = this.documents[order[at] ?? 0]
      if (skill !== undefined) skills.push(skill)
    }
    return skills
  }

  /** Skills by relevance to `words` (at most 16), best first; see `rank`. */
  rankWords(words: ReadonlyArray<string>): Ranking<S> {
    if (this.normsStale) {
      this.norms = [this.normsOf(0), this.normsOf(1)]
      this.normsStale = false
    }
    if (this.total.length < this.nextDocument) this.roomForRanking(Math.max(1024, this.nextDocument * 2))
    const { total, share, words: matched } = this
    const hits: Array<number> = []
    // Indexed loops: for-of loops here allocated an iterator result per skill whenever V8 did
    // not optimise them (21 MB over the bench's 200 queries at 10,000 skills, in process).
    words.forEach((word, index) => {
      const touched: Array<number> = []
      const expansions = this.expansions(word)
      for (let at = 0; at < expansions.length; at++) {
        const expansion = expansions[at]
        if (expansion !== undefined) this.score(expansion[0], expansion[1], touched)
      }
      for (let at = 0; at < touched.length; at++) {
        const document = touched[at] ?? 0
        if (matched[document] === 0) hits.push(document)
        total[document] = (total[document] ?? 0) + (share[document] ?? 0)
        share[document] = 0
        matched[document] = (matched[document] ?? 0) | (1 << index)
      }
    })
    const every = (1 << words.length) - 1
    const all = hits.filter((document) => matched[document] === every)
    const ranked = all.length > 0 ? all : hits
    for (let at = 0; at < ranked.length; at++) {
      const document = ranked[at] ?? 0
      total[document] = (total[document] ?? 0) * bitCount(matched[document] ?? 0)
    }
    const skills = this.bestFirst(ranked)
    for (let at = 0; at < hits.length; at++) {
      const document = hits[at] ?? 0
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
  const index = new SkillIndex<S>()

  /** Indexes a skill, again when its object changed (an edit: the catalog keeps the others). */
  const put = (skill: S) => {
    const previous = index.skillOf(skill.id)
    if (previous === skill) return
    if (previous !== undefined) index.remove(skill.id)
    index.add(skill)
  }

  const sync = (skills: ReadonlyArray<S>, byId: ReadonlyMap<string, S>) => {
    for (const skill of skills) put(skill)
    // Every current id is indexed now, so any extra one is a skill that left.
    if (index.size !== skills.length) {
      for (const id of [...index.ids()]) if (byId.get(id) === undefined) index.remove(id)
    }
    index.compact()
    index.setOrder(skills)
  }

  const rank = (query: string): Ranking<S> => {
    const words = [...new Set(searchWords(query))].slice(0, MAX_QUERY_WORDS)
    if (words.length === 0) return { skills: [], match: "all" }
    return index.rankWords(usefulWords(index, words))
  }

  return {
    sync,
    addNew: (skill) => {
      if (index.skillOf(skill.id) === undefined) index.add(skill)
    },
    rank,
    size: () => index.size,
  }
}
