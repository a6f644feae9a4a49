/**
 * SimpleYaml: a fast reader in front of the `yaml` package for the frontmatter most skills have
 * (the first scan reads every SKILL.md; this is many times faster on what it accepts).
 */

/** Plain scalars that are not strings in the YAML 1.2 core schema (null, booleans, numbers). */
const NON_STRING_PLAIN = /^(?:~|null|Null|NULL|true|True|TRUE|false|False|FALSE|[-+.0-9].*)$/
/** Characters a plain scalar may not start with. */
const INDICATOR = /^[-?:,[\]{}#&*!|>'"%@`]/
const KEY = /^[A-Za-z_][A-Za-z0-9_.-]*$/
/** Characters YAML treats specially or refuses (controls, BOM, Unicode line separators). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const AWKWARD = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\ufeff\u2028\u2029\t]/

/** A simple scalar value (plain, single- or double-quoted without escapes), or undefined if not simple. */
const simpleScalar = (raw: string): string | undefined => {
  const value = raw.trimEnd()
  if (value.startsWith("'")) {
    const inner = value.slice(1, -1)
    return value.length >= 2 && value.endsWith("'") && !inner.replaceAll("''", "").includes("'")
      ? inner.replaceAll("''", "'")
      : undefined
  }
  if (value.startsWith('"')) {
    const inner = value.slice(1, -1)
    return value.length >= 2 && value.endsWith('"') && !/["\\]/.test(inner) ? inner : undefined
  }
  if (value === "" || INDICATOR.test(value) || NON_STRING_PLAIN.test(value)) return undefined
  if (value.includes(": ") || value.includes(" #") || value.endsWith(":")) return undefined
  return value
}

/** `key: >`, `key: >-`, `key: |`, `key: |-` (no keep chomping, indentation indicator or comment). */
const BLOCK_HEADER = /^ ([>|])(-?)$/

/**
 * A top-level block scalar whose content starts at `lines[from]`, in its plainest form: every
 * content line indented by the same number of spaces (no deeper lines, no blank lines between
 * them), ended by a line at column 0 or by blank lines then the end. Folded (`>`) joins the
 * lines with spaces, literal (`|`) with newlines; clip chomping adds one newline, strip none.
 * Undefined for any other shape (the caller then uses the `yaml` package).
 */
const blockScalar = (
  lines: ReadonlyArray<string>,
  from: number,
  folded: boolean,
  strip: boolean,
): { readonly value: string; readonly next: number } | undefined => {
  const first = lines[from]
  if (first === undefined) return undefined
  const indent = first.length - first.trimStart().length
  if (indent === 0 || first.trim() === "") return undefined
  const content: Array<string> = []
  let next = from
  for (; next < lines.length; next++) {
    const line = lines[next] ?? ""
    if (line === "") break
    const lineIndent = line.length - line.trimStart().length
    if (lineIndent === 0) break
    if (lineIndent !== indent || line.trim() === "" || line.trimEnd() !== line) return undefined
    content.push(line.slice(indent))
  }
  // Blank lines after the content: only before the end of the text or another top-level key.
  let after = next
  while (after < lines.length && lines[after] === "") after++
  if (after < lines.length && after > next) {
    const line = lines[after] ?? ""
    if (line.length !== line.trimStart().length) return undefined
  }
  const joined = content.join(folded ? " " : "\n")
  return { value: strip ? joined : `${joined}\n`, next }
}

/**
 * The frontmatter most skills have (`key: value` lines, and one level of `key:` followed by
 * indented `sub: value` lines), read without the full YAML parser. Returns undefined for
 * anything else (and for every case where YAML would give a non-string, an error or a
 * warning), so the caller falls back to the `yaml` package; on what it accepts, it gives
 * exactly what `yaml` gives (a property test checks this).
 */
export const parseSimpleYaml = (text: string): Record<string, unknown> | undefined => {
  if (AWKWARD.test(text) || /\r(?!\n)/.test(text)) return undefined
  const result: Record<string, unknown> = {}
  let nested: { key: string; indent: number; map: Record<string, string> } | undefined
  const lines = text.split("\n").map((raw) => (raw.endsWith("\r") ? raw.slice(0, -1) : raw))
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index] ?? ""
    if (line.trim() === "") {
      if (line !== "") return undefined
      continue
    }
    if (line.startsWith("#")) continue
    const indent = line.length - line.trimStart().length
    const body = line.slice(indent)
    const colon = body.indexOf(":")
    if (colon <= 0) return undefined
    const key = body.slice(0, colon)
    const rest = body.slice(colon + 1)
    if (!KEY.test(key) || NON_STRING_PLAIN.test(key) || key === "__proto__") return undefined
    if (rest !== "" && !rest.startsWith(" ")) return undefined
    if (indent > 0) {
      if (nested === undefined || (nested.indent !== 0 && nested.indent !== indent)) return undefined
      nested.indent = indent
      const value = simpleScalar(rest.trimStart())
      if (value === undefined || Object.hasOwn(nested.map, key)) return undefined
      nested.map[key] = value
      continue
    }
    if (nested !== undefined && nested.indent === 0) return undefined
    nested = undefined
    if (Object.hasOwn(result, key)) return undefined
    if (rest.trim() === "") {
      if (rest !== "") return undefined
      nested = { key, indent: 0, map: {} }
      result[key] = nested.map
      continue
    }
    const header = BLOCK_HEADER.exec(rest)
    if (header !== null) {
      const block = blockScalar(lines, index + 1, header[1] === ">", header[2] === "-")
      if (block === undefined) return undefined
      result[key] = block.value
      index = block.next - 1
      continue
    }
    const value = simpleScalar(rest.trimStart())
    if (value === undefined) return undefined
    result[key] = value
  }
  if ((nested !== undefined && nested.indent === 0) || Object.keys(result).length === 0) return undefined
  return result
}
