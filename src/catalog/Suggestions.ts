/**
 * Suggestions: the ids closest to an unknown one, for `SkillNotFound`'s message ("Closest ids:
 * ..."). A typo or two is a hint; anything further off is left out.
 */
import type { Skill } from "./Snapshot.js"

/**
 * Levenshtein distance, two rows. With a `limit`, any distance over it is answered as
 * `limit + 1`, and the rows stop as soon as every entry of one is over it (the distance can
 * only grow from there): an unrelated id is given up after a few characters.
 */
export const editDistance = (a: string, b: string, limit = Number.POSITIVE_INFINITY): number => {
  let previous = new Uint32Array(b.length + 1)
  let current = new Uint32Array(b.length + 1)
  for (let j = 0; j <= b.length; j++) previous[j] = j
  for (let i = 1; i <= a.length; i++) {
    current[0] = i
    let least = i
    for (let j = 1; j <= b.length; j++) {
      const cost = a.charCodeAt(i - 1) === b.charCodeAt(j - 1) ? 0 : 1
      const value = Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + cost)
      current[j] = value
      if (value < least) least = value
    }
    if (least > limit) return limit + 1
    const swap = previous
    previous = current
    current = swap
  }
  const distance = previous[b.length] ?? 0
  return distance > limit ? limit + 1 : distance
}

/** Longest query suggestions are looked for: longer ones are not a mistyped id. */
const MAX_SUGGESTION_QUERY = 200

/** Character buckets of `bagDistance` (code unit modulo this). */
const BAGS = 64

/** How many characters of `text` fall in each bucket. */
const bagOf = (text: string): Int32Array => {
  const bag = new Int32Array(BAGS)
  for (let i = 0; i < text.length; i++) {
    const bucket = text.charCodeAt(i) % BAGS
    bag[bucket] = (bag[bucket] ?? 0) + 1
  }
  return bag
}

/**
 * A lower bound of the edit distance between the text `bag` counts and `text`: each edit adds,
 * removes or changes one character, so it changes by at most one how many more characters of
 * a bucket one side has than the other (characters sharing a bucket only lower the bound).
 * `scratch` is overwritten.
 */
const bagDistance = (bag: Int32Array, text: string, scratch: Int32Array): number => {
  scratch.set(bag)
  for (let i = 0; i < text.length; i++) {
    const bucket = text.charCodeAt(i) % BAGS
    scratch[bucket] = (scratch[bucket] ?? 0) - 1
  }
  let more = 0
  let fewer = 0
  for (let k = 0; k < BAGS; k++) {
    const difference = scratch[k] ?? 0
    if (difference > 0) more += difference
    else fewer -= difference
  }
  return Math.max(more, fewer)
}

/** Up to `count` ids closest to `query` (ignoring case), nearest first; unrelated ids are left out. */
export const closestIds = (skills: ReadonlyArray<Skill>, query: string, count = 3): Array<string> => {
  if (query.length > MAX_SUGGESTION_QUERY) return []
  const needle = query.toLowerCase()
  const bag = bagOf(needle)
  const scratch = new Int32Array(BAGS)
  const close: Array<{ readonly id: string; readonly distance: number }> = []
  for (const skill of skills) {
    const id = skill.id.toLowerCase()
    // A typo or two (a third of the longer word): further off, an id is a guess, not a hint.
    const limit = Math.max(2, Math.max(needle.length, id.length) / 3)
    if (id.includes(needle) || needle.includes(id)) close.push({ id: skill.id, distance: 0.5 })
    // The distance is at least the difference in length, and at least the difference in the
    // characters used: most ids need no computing (an unknown id must not hold other requests
    // back), and the rest are given up once over the limit.
    else if (Math.abs(needle.length - id.length) <= limit && bagDistance(bag, id, scratch) <= limit) {
      const distance = editDistance(needle, id, limit)
      if (distance <= limit) close.push({ id: skill.id, distance })
    }
  }
  return close
    .sort((a, b) => a.distance - b.distance || (a.id < b.id ? -1 : 1))
    .slice(0, count)
    .map((entry) => entry.id)
}
