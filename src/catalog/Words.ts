/**
 * Words: how a text becomes search terms, the same for what is indexed and what is asked.
 *
 * A text is split into words at anything that is not a letter or a digit (`pdf-tools`: `pdf`,
 * `tools`). A word whose case or kind changes inside is also split there, and kept whole too
 * (`useEffect`: `useeffect`, `use`, `effect`; `PDFParser`: `pdfparser`, `pdf`, `parser`;
 * `pdf2docx`: `pdf2docx`, `pdf`, `2`, `docx`). Words are compared without case, English stop
 * words are left out, and English words are stemmed with the Porter stemmer (`stemmer`
 * package: `failing`, `failed`, `fails` are all `fail`), so a task phrased in other forms of a
 * skill's words still finds it.
 */
import { stemmer } from "stemmer"

const WORD = /[\p{L}\p{N}]+/gu
/** The parts of a word: a run of capitals not followed by lowercase, a capitalised run, digits. */
const PARTS = /\p{Lu}+(?!\p{Ll})|\p{Lu}?\p{Ll}+|\p{N}+|\p{L}+/gu
/** A word that splits: a capital after its first letter, or letters beside digits. */
const SPLITS = /.\p{Lu}|\p{N}\p{L}|\p{L}\p{N}/u
/** Longer runs are not words (hashes, base64, minified code): they are not indexed. */
const MAX_WORD_LENGTH = 64
const ENGLISH = /^[a-z]+$/

/**
 * English stop words: the Snowball project's list, with `can`, `will`, `just`, `should`, `now`,
 * `would`, `could`, `ought`, `let`, and the pieces the split at apostrophes leaves (`don't`:
 * `don`, `t`). They say nothing about a task, and in a body
 * they are most of the words.
 */
const STOP_WORDS: ReadonlySet<string> = new Set(
  (
    "i me my myself we our ours ourselves you your yours yourself yourselves he him his himself " +
    "she her hers herself it its itself they them their theirs themselves what which who whom " +
    "this that these those am is are was were be been being have has had having do does did " +
    "doing a an the and but if or because as until while of at by for with about against " +
    "between into through during before after above below to from up down in out on off over " +
    "under again further then once here there when where why how all any both each few more " +
    "most other some such no nor not only own same so than too very can will just should now " +
    "would could ought let s t d ll m o re ve y don doesn didn isn aren wasn weren hasn haven " +
    "hadn won wouldn shouldn couldn mustn needn shan ain ma mightn"
  ).split(" "),
)

/**
 * Stems already worked out: a few thousand words make most of any text, and stemming is the
 * dearest step of indexing a body. Bounded; past the bound, words are stemmed each time.
 */
const stems = new Map<string, string>()
const MAX_STEMS = 50_000

/** A lowercase word as a term: stemmed when English, null for a stop word. */
const termOf = (word: string): string | null => {
  if (STOP_WORDS.has(word)) return null
  if (!ENGLISH.test(word)) return word
  let stem = stems.get(word)
  if (stem === undefined) {
    stem = stemmer(word)
    if (stems.size < MAX_STEMS) stems.set(word, stem)
  }
  return stem
}

/**
 * Calls `found` with every term of `text` and the lowercase word it stems from, in order (a term
 * may come more than once).
 */
export const forEachTerm = (text: string, found: (term: string, word: string) => void): void => {
  for (const [raw] of text.matchAll(WORD)) {
    if (raw.length > MAX_WORD_LENGTH) continue
    const word = raw.toLowerCase()
    const whole = termOf(word)
    if (whole !== null) found(whole, word)
    if (!SPLITS.test(raw)) continue
    const parts = raw.match(PARTS)
    if (parts === null || parts.length < 2) continue
    for (const part of parts) {
      const lower = part.toLowerCase()
      const term = termOf(lower)
      if (term !== null && term !== whole) found(term, lower)
    }
  }
}

/** A word of a query: its term, and the word as typed (lowercase), whose length sets the typos allowed. */
export interface QueryWord {
  readonly term: string
  readonly word: string
}

/** The words of a query, in order, each term once. */
export const queryWords = (query: string): Array<QueryWord> => {
  const words = new Map<string, QueryWord>()
  forEachTerm(query, (term, word) => {
    if (!words.has(term)) words.set(term, { term, word })
  })
  return [...words.values()]
}

/** A markdown heading line: up to three spaces, one to six `#`, a space or the line's end. */
const HEADING = /^ {0,3}#{1,6}(?:[ \t]|$)/
const FENCE = /^ {0,3}(?:\x60{3}|~{3})/ // three backticks or tildes

/**
 * A SKILL.md body as searched: its headings' text and the rest, apart. A `#` line inside a
 * fenced code block is code (a shell comment), not a heading.
 */
export const bodyParts = (body: string): { readonly headings: string; readonly text: string } => {
  const headings: Array<string> = []
  const text: Array<string> = []
  let fenced = false
  for (const line of body.split("\n")) {
    if (FENCE.test(line)) fenced = !fenced
    if (!fenced && HEADING.test(line)) headings.push(line)
    else text.push(line)
  }
  return { headings: headings.join("\n"), text: text.join("\n") }
}
