/**
 * A search's ranking (src/catalog/Search.ts makes them): its skills with their scores, put in
 * order only as far as a page asks, with a bounded heap, so that a first page of the best 20
 * does not sort the thousands of skills a common word matches.
 */

/**
 * Skills by relevance, best first; `all` when the best one matched every query word. Only as
 * much of it is put in order as is asked for (`slice`): a first page needs the best 20 of
 * what may be thousands of skills, and most searches never ask for a second.
 */
export interface Ranking<S> {
  /** How many skills it holds. */
  readonly total: number
  readonly match: "all" | "any"
  /** Its skills from `start` up to `end` (not included), in order. */
  readonly slice: (start: number, end: number) => ReadonlyArray<S>
}

/**
 * A ranking's skills with their scores and catalog positions (fixed when it is made, so that
 * later changes to the index leave it alone), put in order as far as a slice asks. `order`
 * holds their numbers; its first `sorted` are in their final order, each before all after it.
 */
export class LazyRanking<S> implements Ranking<S> {
  private readonly order: Uint32Array
  private sorted = 0

  constructor(
    private readonly skills: ReadonlyArray<S>,
    private readonly scores: Float64Array,
    private readonly positions: Uint32Array,
    readonly match: "all" | "any",
    /** The number of a skill that comes first whatever its score. */
    first: number | undefined,
  ) {
    this.order = new Uint32Array(skills.length)
    for (let at = 0; at < skills.length; at++) this.order[at] = at
    if (first !== undefined) {
      this.order[0] = first
      this.order[first] = 0
      this.sorted = 1
    }
  }

  get total() {
    return this.skills.length
  }

  /** Below 0 when skill `a` ranks before `b`: a higher score, then an earlier catalog position. */
  private readonly compare = (a: number, b: number) =>
    (this.scores[b] ?? 0) - (this.scores[a] ?? 0) || (this.positions[a] ?? 0) - (this.positions[b] ?? 0)

  slice(start: number, end: number): ReadonlyArray<S> {
    const to = Math.min(end, this.skills.length)
    if (to > this.sorted) this.orderUpTo(to)
    const found: Array<S> = []
    for (let at = start; at < to; at++) {
      const skill = this.skills[this.order[at] ?? 0]
      if (skill !== undefined) found.push(skill)
    }
    return found
  }

  /**
   * Puts the best of the unordered rest in order up to `to`: a heap of the best `to - sorted`
   * seen so far, the worst of them at its root, which each skill that ranks before it replaces;
   * then the heap is sorted. Most skills are compared once, with the root. Up to the end, the
   * rest is simply sorted.
   */
  private orderUpTo(to: number) {
    const rest = this.order.subarray(this.sorted)
    const count = to - this.sorted
    this.sorted = to
    if (count >= rest.length) {
      rest.sort(this.compare)
      return
    }
    const heap = rest.subarray(0, count)
    for (let at = (count >> 1) - 1; at >= 0; at--) this.siftDown(heap, at)
    for (let at = count; at < rest.length; at++) {
      const skill = rest[at] ?? 0
      if (this.compare(skill, heap[0] ?? 0) < 0) {
        rest[at] = heap[0] ?? 0
        heap[0] = skill
        this.siftDown(heap, 0)
      }
    }
    heap.sort(this.compare)
  }

  /** Moves the heap's entry at `at` down until none below it ranks after it. */
  private siftDown(heap: Uint32Array, at: number) {
    const skill = heap[at] ?? 0
    let hole = at
    for (;;) {
      let child = hole * 2 + 1
      if (child >= heap.length) break
      // The child that ranks later.
      if (child + 1 < heap.length && this.compare(heap[child + 1] ?? 0, heap[child] ?? 0) > 0) child++
      if (this.compare(heap[child] ?? 0, skill) <= 0) break
      heap[hole] = heap[child] ?? 0
      hole = child
    }
    heap[hole] = skill
  }
}
