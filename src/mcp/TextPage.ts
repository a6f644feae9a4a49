/**
 * A page of a text file, by lines: read_skill_file answers a long file in parts an agent asks for
 * one after the other (as agents' own file tools do). Lines keep their line ends: the pages of a
 * file, put together, are the file.
 */
import { lineCount } from "../skills/Validation.js"

/** Lines a page holds when the call does not say. */
export const DEFAULT_PAGE_LINES = 2_000

/** Characters a page holds at most: whole lines, or the start of a single longer line. */
export const MAX_PAGE_CHARS = 100_000

export interface TextPage {
  /** Lines `startLine` to `endLine` as in the file, line ends included. */
  readonly text: string
  /** 1-based. */
  readonly startLine: number
  /** The last line in `text`; `startLine - 1` when there is none (an empty file). */
  readonly endLine: number
  readonly totalLines: number
  /** The length of line `endLine` when it is longer than the page and `text` holds only its start. */
  readonly cutLineLength?: number
}

/**
 * Lines `offset` to `offset + limit - 1` of `text` (1-based), as many of them as fit in `maxChars`
 * (at least the start of the first). Undefined when `offset` is past the last line (line 1 of an
 * empty text is not: its page is empty).
 */
export const pageOf = (
  text: string,
  offset: number,
  limit: number,
  maxChars: number = MAX_PAGE_CHARS,
): TextPage | undefined => {
  const totalLines = lineCount(text)
  if (offset > Math.max(totalLines, 1)) return undefined
  let start = 0
  for (let line = 1; line < offset; line++) start = text.indexOf("\n", start) + 1
  let end = start
  let endLine = offset - 1
  while (endLine - offset + 1 < limit && endLine < totalLines) {
    const newline = text.indexOf("\n", end)
    const lineEnd = newline === -1 ? text.length : newline + 1
    if (lineEnd - start > maxChars) {
      if (endLine >= offset) break
      // A single line longer than the page: its start, not splitting a surrogate pair.
      let cut = start + maxChars
      const last = text.charCodeAt(cut - 1)
      if (last >= 0xd800 && last <= 0xdbff) cut--
      return {
        text: text.slice(start, cut),
        startLine: offset,
        endLine: offset,
        totalLines,
        cutLineLength: lineEnd - start - (text.endsWith("\n", lineEnd) ? 1 : 0),
      }
    }
    end = lineEnd
    endLine++
  }
  return { text: text.slice(start, end), startLine: offset, endLine, totalLines }
}
