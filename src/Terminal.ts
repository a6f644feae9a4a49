/**
 * Text for a terminal. Folder names and frontmatter values come from skills people download:
 * printed raw, a newline forges a row, `ESC[2J` clears the screen, `ESC]8;;url` makes a link,
 * `ESC[8m` hides what follows, and a bidi override (U+202E) reorders a row. Every text a person
 * reads (`list`, `validate`, usage errors, the one-shot commands' log lines) goes through
 * `forTerminal` before it is written; JSON output does not (JSON.stringify escapes its own).
 */

/** Shown by name; other controls as `\xNN`, the bidi controls as `\uNNNN`. */
const NAMED: Readonly<Record<number, string>> = { 9: "\\t", 10: "\\n", 13: "\\r", 27: "\\x1b" }

const hex = (code: number, digits: number) => code.toString(16).padStart(digits, "0")

/**
 * Whether a UTF-16 code unit is a control a terminal acts on or that reorders text: C0
 * (U+0000-U+001F), DEL and C1 (U+007F-U+009F), the line and paragraph separators
 * (U+2028, U+2029) and the bidi embeddings, overrides and isolates (U+202A-U+202E,
 * U+2066-U+2069).
 */
const isControl = (code: number): boolean =>
  code < 0x20 ||
  (code >= 0x7f && code <= 0x9f) ||
  code === 0x2028 ||
  code === 0x2029 ||
  (code >= 0x202a && code <= 0x202e) ||
  (code >= 0x2066 && code <= 0x2069)

/** `text` with every control character shown as a visible escape (`\n`, `\x1b`, `\u202e`). */
export const forTerminal = (text: string): string => {
  let out = ""
  let from = 0
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index)
    if (!isControl(code)) continue
    out +=
      text.slice(from, index) + (NAMED[code] ?? (code <= 0xff ? `\\x${hex(code, 2)}` : `\\u${hex(code, 4)}`))
    from = index + 1
  }
  return from === 0 ? text : out + text.slice(from)
}

/** Each line of `text` made safe, its line breaks kept (for text whose lines are ours, e.g. a stack trace). */
export const linesForTerminal = (text: string): string => text.split("\n").map(forTerminal).join("\n")
