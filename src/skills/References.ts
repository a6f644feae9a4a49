/**
 * References: the files a SKILL.md body refers to by relative path, for `validate`'s
 * `reference-missing` and `reference-outside` rules. Links, images, link definitions and HTML
 * `src`/`href` count; so do `scripts/...`, `references/...` and `assets/...` paths written
 * anywhere, unless the text gives them as examples.
 */

export interface FileReference {
  /** The path as written (without `#fragment` or `?query`), relative to the skill folder. */
  readonly path: string
  readonly line: number
}

/** Folders the specification names; bare paths into them count as references, even in code. */
const CONVENTIONAL = /(?:^|[\s`'"(=:,[])((?:\.\/)?(?:scripts|references|assets)\/[^\s`'"()<>[\]{}*?$|,;]*)/g
const INLINE_LINK = /!?\[(?:[^\]\\]|\\.)*\]\(\s*(<[^>]*>|[^\s)]+)(?:\s+(?:"[^"]*"|'[^']*'|\([^)]*\)))?\s*\)/g
const LINK_DEFINITION = /^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)/
const HTML_SOURCE = /\b(?:src|href)\s*=\s*["']([^"']+)["']/g
const FENCE = /^ {0,3}(`{3,}|~{3,})/
/** A code span holding just a path into a conventional folder, ending in a file extension. */
const PATH_SPAN = /^(?:\.\/)?(?:scripts|references|assets)\/[^`<>{}*?$|]*\.[A-Za-z0-9]{1,8}$/
const isPathSpan = (content: string) => PATH_SPAN.test(content) && !/\s-/.test(content)

/** A link target as a path inside the skill, or undefined for URLs, anchors and templates. */
const asRelativePath = (target: string): string | undefined => {
  const unwrapped = target.startsWith("<") && target.endsWith(">") ? target.slice(1, -1) : target
  if (unwrapped === "" || /^[a-z][a-z0-9+.-]*:/i.test(unwrapped) || /^[#/\\~]/.test(unwrapped))
    return undefined
  if (/[<>{}$*?|]/.test(unwrapped) || unwrapped.startsWith("//")) return undefined
  const bare = unwrapped.replace(/[#?].*$/, "")
  if (bare === "" || bare === "." || bare === "./") return undefined
  try {
    return decodeURI(bare)
  } catch {
    return bare
  }
}

/**
 * Words that make a mention an example of a path, not a reference to a file of this skill:
 * "e.g.", "for example", "Example:", "**Examples**:", "example files". ("Example patterns" is
 * not one: a real reference may sit beside it.)
 */
const EXAMPLE_WORDS =
  /\b(?:e\.g\.|for (?:example|instance)\b|examples?(?:\*\*|__)?\s*:|examples? (?:files?|paths?|names?)\b)/i
const LIST_ITEM = /^\s*(?:[-*+]|\d{1,9}[.)])\s/
const HEADING = /^ {0,3}#{1,6}(?:\s|$)/

interface LineKind {
  /** A fence line or inside a fenced code block. */
  readonly code: boolean
  /** What the line mentions is given as an example ("e.g. `references/x.md`"). */
  readonly example: boolean
}

/**
 * What each line of a body is. Blocks are paragraphs, list items (with their continuation
 * lines) and fenced code blocks; a block is an example when it says so ("e.g.", "example",
 * "for instance"), or when it is a list or code block after a paragraph that says so and ends
 * with a colon ("Example: when building ... the analysis shows:").
 */
const lineKinds = (lines: ReadonlyArray<string>): Array<LineKind> => {
  const kinds = lines.map((): LineKind => ({ code: false, example: false }))
  let start = 0
  let block: "paragraph" | "item" | "code" = "paragraph"
  /** The last paragraph gave an example and ended with a colon: lists and code after it do too. */
  let introduced = false
  let fence: string | undefined
  const close = (end: number) => {
    if (end <= start) return
    const text = lines.slice(start, end).join("\n")
    const example = EXAMPLE_WORDS.test(text) || (block !== "paragraph" && introduced)
    for (let index = start; index < end; index++) kinds[index] = { code: block === "code", example }
    if (block === "paragraph") introduced = EXAMPLE_WORDS.test(text) && /:\s*$/.test(text)
  }
  const open = (at: number, next: typeof block) => {
    start = at
    block = next
  }
  lines.forEach((text, index) => {
    const marker = FENCE.exec(text)?.[1]
    if (fence !== undefined) {
      if (
        marker !== undefined &&
        marker[0] === fence[0] &&
        marker.length >= fence.length &&
        text.trim() === marker
      ) {
        close(index + 1)
        fence = undefined
        open(index + 1, "paragraph")
      }
    } else if (marker !== undefined) {
      close(index)
      fence = marker
      open(index, "code")
    } else if (text.trim() === "" || HEADING.test(text)) {
      close(index)
      if (HEADING.test(text)) introduced = false
      open(index + 1, "paragraph")
    } else if (LIST_ITEM.test(text)) {
      close(index)
      open(index, "item")
    }
  })
  close(lines.length)
  return kinds
}

/** The text with HTML comments blanked out (their lines kept, so line numbers hold). */
const withoutComments = (text: string) =>
  text.replace(/<!--[\s\S]*?(?:-->|$)/g, (comment) => comment.replace(/[^\n]/g, " "))

/**
 * Files a SKILL.md body refers to by relative path: targets of markdown links, images,
 * link definitions and HTML `src`/`href` (outside code blocks), and `scripts/...`,
 * `references/...` and `assets/...` paths anywhere, code blocks included, unless given as
 * examples (see `lineKinds`). Nothing in HTML comments is a reference. `firstLine` is the body's
 * first line in the file. Each path is reported once, at its first line.
 */
export const fileReferences = (body: string, firstLine: number): Array<FileReference> => {
  const found = new Map<string, number>()
  const add = (candidate: string | undefined, line: number) => {
    if (candidate !== undefined && !found.has(candidate)) found.set(candidate, line)
  }
  const lines = withoutComments(body)
    .split("\n")
    .map((raw) => (raw.endsWith("\r") ? raw.slice(0, -1) : raw))
  const kinds = lineKinds(lines)
  lines.forEach((text, index) => {
    const line = firstLine + index
    const kind = kinds[index]
    if (kind === undefined) return
    let scanned = text
    if (!kind.code) {
      // Links are deliberate, examples or not.
      const prose = text.replace(/``[^`]*``|`[^`]*`/g, " ")
      for (const match of prose.matchAll(INLINE_LINK)) add(asRelativePath(match[1] ?? ""), line)
      for (const match of prose.matchAll(HTML_SOURCE)) add(asRelativePath(match[1] ?? ""), line)
      const definition = LINK_DEFINITION.exec(text)?.[1]
      if (definition !== undefined) add(asRelativePath(definition), line)
    }
    if (kind.example) return
    if (!kind.code) {
      // A code span that is one path (`references/naïve guide.md`) is that path, spaces included.
      for (const match of text.matchAll(/`([^`]+)`/g)) {
        const content = (match[1] ?? "").trim()
        if (isPathSpan(content)) add(content.replace(/^\.\//, ""), line)
      }
      scanned = text
        .replace(INLINE_LINK, " ")
        .replace(HTML_SOURCE, " ")
        .replace(/`([^`]+)`/g, (span, content: string) => (isPathSpan(content.trim()) ? " " : span))
    }
    for (const match of scanned.matchAll(CONVENTIONAL)) {
      // A bare folder (`scripts/`) is a mention of the layout, and a bare word without an
      // extension ("project scripts/manifests") is prose: neither is a reference to a file.
      const target = (match[1] ?? "").replace(/[.:!]+$/, "").replace(/^\.\//, "")
      const named = /\.[A-Za-z0-9]{1,8}$/.test(target) || /\/[^/]+\/$/.test(target)
      if (named && !/^(?:scripts|references|assets)\/$/.test(target)) add(target, line)
    }
  })
  return [...found].map(([path, line]) => ({ path, line }))
}
