/**
 * Frontmatter: split a SKILL.md into YAML frontmatter and markdown body, parse the YAML in a
 * safe configuration and decode the fields with Schema. Reads only the head of a file when
 * only the metadata is wanted.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import type { CST, Document, DocumentOptions, ParseOptions, SchemaOptions, YAMLError } from "yaml"
import { Composer, isCollection, isScalar, Lexer, LineCounter, Parser, visit, YAMLParseError } from "yaml"
import type { FrontmatterRule } from "../Errors.js"
import { MalformedFrontmatter } from "../Errors.js"
import type { FsPort, SyncFsPort } from "../platform/Fs.js"
import { asyncFs, errorCode } from "../platform/Fs.js"
import { Settings } from "../Settings.js"
import { symlinkArtefactReason, symlinkTargetIn } from "./Validation.js"

/** Decoded frontmatter. Known fields of the wrong type are left out here (Validation reports them). */
export interface SkillFrontmatter {
  readonly name: string
  readonly description: string
  readonly license?: string
  readonly compatibility?: string
  readonly metadata?: Readonly<Record<string, string>>
  readonly allowedTools?: string
  /** Top-level fields outside the Agent Skills specification, verbatim. */
  readonly extra: Readonly<Record<string, unknown>>
}

export interface ParsedFrontmatter {
  /** Every field the author wrote, as JSON-compatible data. */
  readonly raw: Readonly<Record<string, unknown>>
  readonly fields: SkillFrontmatter
  /** 1-based line of the closing `---`; the body starts on the next line. */
  readonly endLine: number
}

export interface SplitFrontmatter {
  readonly yaml: string
  /** 1-based line of the opening `---`. */
  readonly startLine: number
  readonly endLine: number
  /** The markdown after the closing `---` line. */
  readonly body: string
}

export type SplitResult =
  | { readonly _tag: "Split"; readonly value: SplitFrontmatter }
  | { readonly _tag: "NoFrontmatter" }
  | { readonly _tag: "NotClosed"; readonly startLine: number }

const DELIMITER = /^---[ \t]*$/

/**
 * Splits a SKILL.md: a UTF-8 BOM, CRLF line ends and blank lines before the opening `---`
 * are tolerated; the frontmatter ends at the first line that is exactly `---` (a `---`
 * inside a value is not a delimiter).
 */
export const splitFrontmatter = (input: string): SplitResult => {
  const text = input.charCodeAt(0) === 0xfeff ? input.slice(1) : input
  let offset = 0
  let line = 1
  const nextLine = (): string | undefined => {
    if (offset >= text.length) return undefined
    const end = text.indexOf("\n", offset)
    const raw = end === -1 ? text.slice(offset) : text.slice(offset, end)
    offset = end === -1 ? text.length : end + 1
    return raw.endsWith("\r") ? raw.slice(0, -1) : raw
  }
  let first = nextLine()
  while (first !== undefined && first.trim() === "") {
    line++
    first = nextLine()
  }
  if (first === undefined || !DELIMITER.test(first)) return { _tag: "NoFrontmatter" }
  const startLine = line
  const yamlStart = offset
  for (;;) {
    const lineStart = offset
    const current = nextLine()
    if (current === undefined) return { _tag: "NotClosed", startLine }
    line++
    if (DELIMITER.test(current)) {
      return {
        _tag: "Split",
        value: { yaml: text.slice(yamlStart, lineStart), startLine, endLine: line, body: text.slice(offset) },
      }
    }
  }
}

/** How to write each required field, for the messages that ask for it. */
const REQUIRED_HINTS: Record<string, string> = {
  name: "add 'name:' with the skill's folder name (lowercase letters, digits, hyphens)",
  description: "add 'description:' saying what the skill does and when to use it",
}

const requiredText = (field: string) => {
  const hint = REQUIRED_HINTS[field] ?? `add '${field}:'`
  return Schema.propertySignature(
    Schema.String.annotations({ message: () => `'${field}' must be a string (quote it): ${hint}` }).pipe(
      Schema.filter((value) => value.trim().length > 0 || `'${field}' is empty: ${hint}`),
    ),
  ).annotations({ missingMessage: () => `missing required field '${field}': ${hint}` })
}

/** Explicit tags of the YAML 1.2 core schema; any other tag (`!!binary`, `!!js/function`, `!x`) is refused. */
const CORE_TAGS = new Set(
  ["str", "int", "float", "bool", "null", "map", "seq"].map((name) => `tag:yaml.org,2002:${name}`),
)

/** The fields a skill cannot be served without. */
const RequiredFields = Schema.Struct({ name: requiredText("name"), description: requiredText("description") })

const optionalFields = {
  license: Schema.String,
  compatibility: Schema.String,
  metadata: Schema.Record({ key: Schema.String, value: Schema.String }),
  "allowed-tools": Schema.String,
} as const

export const specFields: ReadonlySet<string> = new Set([
  "name",
  "description",
  ...Object.keys(optionalFields),
])

// Decoders are built once: building one per call costs more than the decoding.
const decodeRequired = Schema.decodeUnknownEither(RequiredFields, { errors: "first" })
const decodeString = Schema.decodeUnknownEither(Schema.String)
const decodeMetadata = Schema.decodeUnknownEither(optionalFields.metadata)

const optional = <A>(decode: (value: unknown) => Either.Either<A, unknown>, value: unknown): A | undefined =>
  value === undefined ? undefined : Either.getOrUndefined(decode(value))

/*
 * Fast paths for the start-up scan (every SKILL.md of the catalog): the values almost every
 * skill has, accepted exactly as the schemas above accept them, without running a decoder.
 * Anything else goes through the schemas, which also word the errors.
 */
const isFilledString = (value: unknown): value is string =>
  typeof value === "string" && value.trim().length > 0
const decodeRequiredFast = (data: Record<string, unknown>): ReturnType<typeof decodeRequired> => {
  const { name, description } = data
  return isFilledString(name) && isFilledString(description)
    ? Either.right({ name, description })
    : decodeRequired(data)
}
const optionalString = (value: unknown): string | undefined =>
  typeof value === "string" ? value : optional(decodeString, value)
const optionalMetadata = (value: unknown): Readonly<Record<string, string>> | undefined => {
  if (!isRecord(value)) return optional(decodeMetadata, value)
  const metadata: Record<string, string> = {}
  for (const [key, entry] of Object.entries(value)) {
    if (typeof entry !== "string") return optional(decodeMetadata, value)
    metadata[key] = entry
  }
  return metadata
}

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

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** Lists and maps nested deeper than this are refused (frontmatter needs two or three levels). */
export const MAX_YAML_DEPTH = 64

/** Thrown out of `parseYaml` where the nesting passes MAX_YAML_DEPTH, at `offset` of the text. */
class TooDeep {
  constructor(readonly offset: number) {}
}

/** The `yaml` package's safe reading: core schema, no custom tags, unique string keys. */
const YAML_OPTIONS: ParseOptions & DocumentOptions & SchemaOptions = {
  schema: "core",
  customTags: [],
  uniqueKeys: true,
  strict: true,
  prettyErrors: false,
  stringKeys: true,
}

/** Open lists and maps among the parser's open tokens. */
const nestingOf = (stack: ReadonlyArray<CST.Token>): number => {
  let depth = 0
  for (const token of stack)
    if (token.type === "block-map" || token.type === "block-seq" || token.type === "flow-collection") depth++
  return depth
}

/**
 * The parser's tokens for `source`, lexed and parsed one by one (as the `yaml` package documents
 * for its Parser) so that the nesting is watched as it opens: the parser's stack holds each open
 * list and map, and a text nested deeper than MAX_YAML_DEPTH throws `TooDeep` there, before the
 * rest is read or any document is built. (20 skills of 100,000 nested `[` took `initialize` from
 * 0.2 s to 16 s and 300 MB.) Watching the parser, rather than scanning the text first, costs no
 * second pass and agrees with YAML's own reading of quotes, comments and block scalars.
 */
function* watchedTokens(source: string, parser: Parser): Generator<CST.Token> {
  for (const lexeme of new Lexer().lex(source)) {
    yield* parser.next(lexeme)
    if (parser.stack.length > MAX_YAML_DEPTH && nestingOf(parser.stack) > MAX_YAML_DEPTH) {
      throw new TooDeep(parser.offset)
    }
  }
  yield* parser.end()
}

/** `parseDocument(source, YAML_OPTIONS)`, the nesting watched (see `watchedTokens`). */
const parseYaml = (source: string, lineCounter: LineCounter): Document.Parsed => {
  lineCounter.addNewLine(0)
  const parser = new Parser(lineCounter.addNewLine)
  const documents = new Composer(YAML_OPTIONS).compose(watchedTokens(source, parser), true, source.length)
  const first = documents.next()
  // `forceDoc` makes the composer give a document for any text, even an empty one.
  if (first.done === true) throw new Error("the YAML composer gave no document")
  const doc = first.value
  const second = documents.next()
  if (second.done !== true) {
    const [start, end] = second.value.range
    doc.errors.push(new YAMLParseError([start, end], "MULTIPLE_DOCS", "Source contains multiple documents"))
  }
  return doc
}

/** A quoted scalar or flow collection whose closing character is missing. */
const unclosedAt = (node: unknown, yaml: string): { start: number; hint: string } | undefined => {
  if (isScalar(node) && (node.type === "QUOTE_DOUBLE" || node.type === "QUOTE_SINGLE") && node.range) {
    const [start, end] = node.range
    const quote = yaml.charAt(start)
    return end - start >= 2 && yaml.charAt(end - 1) === quote
      ? undefined
      : { start, hint: `the quoted value that starts on this line has no closing ${quote}` }
  }
  if (isCollection(node) && node.flow === true && node.range) {
    const [start, end] = node.range
    const open = yaml.charAt(start)
    const close = open === "[" ? "]" : "}"
    return yaml.charAt(end - 1) === close
      ? undefined
      : { start, hint: `the '${open}' on this line has no '${close}' (or a line inside it is not indented)` }
  }
  return undefined
}

/** The indentation (spaces) of the line holding `offset`. */
const indentOf = (text: string, offset: number): number => {
  const start = text.lastIndexOf("\n", offset - 1) + 1
  let end = start
  while (text.charCodeAt(end) === 0x20) end++
  return end - start
}

/**
 * Where a YAML error's problem starts, and a hint to add to its message. The `yaml` package
 * reports some errors where it gave up rather than where the mistake is: an unclosed quote or
 * flow collection at the end of the text (the closing `---`) or on the next key, a line
 * indented under a value on the line above it. Those point at the opening quote or bracket,
 * and at the over-indented line.
 */
const problemOf = (
  doc: Document.Parsed,
  error: YAMLError,
  yaml: string,
): { offset: number; hint?: string } => {
  const [at] = error.pos
  let unclosed: { start: number; hint: string } | undefined
  visit(doc, {
    Node: (_key, node) => {
      const found =
        node.range && node.range[0] < at && at <= node.range[2] ? unclosedAt(node, yaml) : undefined
      if (found !== undefined && (unclosed === undefined || found.start > unclosed.start)) unclosed = found
    },
  })
  if (unclosed !== undefined) return { offset: unclosed.start, hint: unclosed.hint }
  const multiline = doc.errors.find(
    (other) => other.code === "MULTILINE_IMPLICIT_KEY" && other.pos[0] <= at && at <= other.pos[1],
  )
  if (multiline !== undefined && indentOf(yaml, multiline.pos[1]) > indentOf(yaml, at)) {
    return {
      offset: multiline.pos[1],
      hint: "this line is indented more than the key above it, so YAML reads it as part of that value; align it with the other keys (or quote a value that holds ': ')",
    }
  }
  return { offset: at }
}

/** Parses the YAML of a split frontmatter: core schema, no custom tags, unique keys, bounded aliases. */
export const parseFrontmatterYaml = (
  file: string,
  split: SplitFrontmatter,
): Either.Either<ParsedFrontmatter, MalformedFrontmatter> => {
  const fail = (reason: string, yamlLine?: number, rule: FrontmatterRule = "yaml-invalid") =>
    Either.left(
      new MalformedFrontmatter(
        yamlLine === undefined
          ? { path: file, reason, rule }
          : { path: file, reason, rule, line: split.startLine + yamlLine },
      ),
    )
  let data: unknown = parseSimpleYaml(split.yaml)
  if (data === undefined) {
    const lineCounter = new LineCounter()
    const lineOf = (offset: number | undefined) =>
      offset === undefined ? undefined : lineCounter.linePos(offset).line
    try {
      const doc = parseYaml(split.yaml, lineCounter)
      const error = doc.errors[0]
      if (error !== undefined) {
        const problem = problemOf(doc, error, split.yaml)
        const message = error.message.split("\n")[0]
        return fail(
          `YAML error: ${message}${problem.hint === undefined ? "" : ` (${problem.hint})`}`,
          lineOf(problem.offset),
        )
      }
      let tagged: { tag: string; offset: number | undefined } | undefined
      visit(doc, {
        Node: (_key, node) => {
          if (node.tag !== undefined && !CORE_TAGS.has(node.tag)) {
            tagged = { tag: node.tag, offset: node.range?.[0] }
            return visit.BREAK
          }
          return undefined
        },
      })
      if (tagged !== undefined) {
        return fail(
          `YAML tags are not allowed (found '${tagged.tag.replace("tag:yaml.org,2002:", "!!")}'); write plain values`,
          lineOf(tagged.offset),
        )
      }
      data = doc.toJS({ maxAliasCount: 100 })
    } catch (error) {
      if (error instanceof TooDeep) {
        return fail(
          `YAML error: lists and maps are nested more than ${MAX_YAML_DEPTH} levels deep here; frontmatter needs only a few levels`,
          lineOf(error.offset),
        )
      }
      return fail(`YAML could not be read: ${error instanceof Error ? error.message : String(error)}`)
    }
  }
  if (data === null || data === undefined)
    return fail("the frontmatter is empty; 'name' and 'description' are required")
  if (!isRecord(data))
    return fail("the frontmatter must be a YAML mapping of fields (name: ..., description: ...)")
  const required = decodeRequiredFast(data)
  if (Either.isLeft(required)) {
    const issue = ParseResult.ArrayFormatter.formatErrorSync(required.left)[0]
    return fail(
      issue?.message ?? "invalid name or description",
      undefined,
      issue?.path[0] === "description" ? "description-required" : "name-required",
    )
  }
  const extra: Record<string, unknown> = {}
  for (const key in data) if (Object.hasOwn(data, key) && !specFields.has(key)) extra[key] = data[key]
  const license = optionalString(data.license)
  const compatibility = optionalString(data.compatibility)
  const metadata = optionalMetadata(data.metadata)
  const allowedTools = optionalString(data["allowed-tools"])
  const fields: SkillFrontmatter = {
    name: required.right.name,
    description: required.right.description,
    ...(license === undefined ? {} : { license }),
    ...(compatibility === undefined ? {} : { compatibility }),
    ...(metadata === undefined ? {} : { metadata }),
    ...(allowedTools === undefined ? {} : { allowedTools }),
    extra,
  }
  return Either.right({ raw: data, fields, endLine: split.endLine })
}

/** Splits and parses a whole (or head of a) SKILL.md text. */
export const parseSkillText = (
  file: string,
  text: string,
): Either.Either<ParsedFrontmatter & { readonly body: string }, MalformedFrontmatter> =>
  parseSplit(file, text, splitFrontmatter(text))

/** Parses a SKILL.md text already split. */
const parseSplit = (
  file: string,
  text: string,
  split: SplitResult,
): Either.Either<ParsedFrontmatter & { readonly body: string }, MalformedFrontmatter> => {
  switch (split._tag) {
    case "NoFrontmatter": {
      const target = symlinkTargetIn(text)
      return Either.left(
        target === undefined
          ? new MalformedFrontmatter({
              path: file,
              line: 1,
              rule: "frontmatter-missing",
              reason:
                "no frontmatter: SKILL.md must start with a '---' line, then 'name:' and 'description:', then '---'",
            })
          : new MalformedFrontmatter({
              path: file,
              line: 1,
              rule: "symlink-artefact",
              reason: symlinkArtefactReason(target),
            }),
      )
    }
    case "NotClosed":
      return Either.left(
        new MalformedFrontmatter({
          path: file,
          line: split.startLine,
          rule: "frontmatter-unclosed",
          reason: "the frontmatter is not closed: add a line with only '---' after the last field",
        }),
      )
    case "Split":
      return Either.map(parseFrontmatterYaml(file, split.value), (parsed) => ({
        ...parsed,
        body: split.value.body,
      }))
  }
}

/** The first bytes of a file are read in chunks of this size until the frontmatter closes. */
const HEAD_CHUNK = 4 * 1024

/** First-chunk buffers, reused between reads (a scan reads thousands of heads). */
const headBuffers: Array<Buffer> = []
/** At most this many are kept for reuse. */
const HEAD_BUFFERS_KEPT = 64

/** A first-chunk buffer from the pool (or a new one); give it back with `returnHeadBuffer`. */
const borrowHeadBuffer = (): Buffer => headBuffers.pop() ?? Buffer.allocUnsafe(HEAD_CHUNK)
const returnHeadBuffer = (buffer: Buffer): void => {
  if (headBuffers.length < HEAD_BUFFERS_KEPT) headBuffers.push(buffer)
}
/** The part of a first-chunk buffer a read may fill: no more than `cap` bytes. */
const firstChunk = (buffer: Buffer, cap: number): Buffer =>
  buffer.length > cap ? buffer.subarray(0, cap) : buffer
const FRONTMATTER_START = Buffer.from("---")

/**
 * True when a SKILL.md's bytes begin with its frontmatter's `---`. The specification: SKILL.md
 * "MUST begin with YAML frontmatter", and hosts of the MCP Skills extension parse it from the
 * first byte; the server's own parsing also accepts blank lines or a byte order mark first.
 */
export const beginsWithFrontmatter = (bytes: Uint8Array): boolean =>
  Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(3, bytes.length)).equals(FRONTMATTER_START)

/** Frontmatter larger than this is refused (the description alone is at most 1,024 characters). */
export const MAX_FRONTMATTER_BYTES = 256 * 1024

const DELIMITER_LINE = Buffer.from("\n---")

/** A head read: the text, and how it splits when that is known already. */
interface Head {
  readonly text: string
  readonly split?: SplitResult
}

/**
 * The text up to and including the frontmatter's closing `---` line, when the first `length`
 * bytes hold it; decoded alone, so neither the rest of the chunk nor a copy is made. Only
 * lines that are a delimiter are tried (at most the opening one and the closing one).
 */
const frontmatterHead = (buffer: Buffer, length: number): Head | undefined => {
  for (let from = 0; ; ) {
    const at = buffer.indexOf(DELIMITER_LINE, from)
    if (at === -1 || at + DELIMITER_LINE.length > length) return undefined
    let end = at + DELIMITER_LINE.length
    while (end < length && (buffer[end] === 0x20 || buffer[end] === 0x09)) end++
    if (end < length && buffer[end] === 0x0d) end++
    if (end < length && buffer[end] === 0x0a) {
      const text = buffer.toString("utf8", 0, end + 1)
      const split = splitFrontmatter(text)
      if (split._tag === "Split") return { text, split }
      if (split._tag === "NoFrontmatter") return undefined
    }
    from = at + 1
  }
}

/** The head of a SKILL.md (see `readHeadSplit`), its text only. */
export const readHead = async (
  port: FsPort,
  file: string,
  cap: number,
): Promise<Either.Either<string, MalformedFrontmatter>> =>
  Either.map(await readHeadSplit(port, file, cap), (head) => head.text)

/** A SKILL.md that could not be opened or read. */
const unreadable = (file: string, error: unknown) =>
  Either.left(
    new MalformedFrontmatter({
      path: file,
      rule: "skill-unreadable",
      reason: `cannot read the file (${describeIoError(error)})`,
    }),
  )

/**
 * Reads only as much of a SKILL.md as the frontmatter needs: the first chunk, and more only
 * while the closing `---` has not shown up, up to `cap` bytes. Answers the text up to and
 * including the closing `---` line when there is one (the body is not part of it), and its
 * split when that was made.
 */
const readHeadSplit = async (
  port: FsPort,
  file: string,
  cap: number,
): Promise<Either.Either<Head, MalformedFrontmatter>> => {
  let fd: number
  try {
    fd = await port.open(file)
  } catch (error) {
    return unreadable(file, error)
  }
  const first = borrowHeadBuffer()
  try {
    let buffer = firstChunk(first, cap)
    let length = 0
    for (;;) {
      const bytesRead = await port.read(fd, buffer, length, buffer.length - length, length)
      length += bytesRead
      const next = headAfterRead(buffer, length, bytesRead, file, cap)
      if (!Buffer.isBuffer(next)) return next
      buffer = next
    }
  } catch (error) {
    return unreadable(file, error)
  } finally {
    returnHeadBuffer(first)
    try {
      await port.close(fd)
    } catch {
      // already closed or gone: nothing to release
    }
  }
}

/**
 * `readHeadSplit` from a descriptor open on `file` (which the caller closes, having checked that
 * it is a regular file), through a port that answers at once: no promise made, no turn waited.
 */
const readHeadFromNow = (
  port: SyncFsPort,
  fd: number,
  file: string,
  cap: number,
): Either.Either<Head, MalformedFrontmatter> => {
  const first = borrowHeadBuffer()
  try {
    let buffer = firstChunk(first, cap)
    let length = 0
    for (;;) {
      const bytesRead = port.read(fd, buffer, length, buffer.length - length, length)
      length += bytesRead
      const next = headAfterRead(buffer, length, bytesRead, file, cap)
      if (!Buffer.isBuffer(next)) return next
      buffer = next
    }
  } catch (error) {
    return unreadable(file, error)
  } finally {
    returnHeadBuffer(first)
  }
}

/**
 * After a read of `bytesRead` more bytes (`length` in all) into `buffer`: the head, why there
 * is none, or a larger buffer holding the bytes so far, to read on into.
 */
const headAfterRead = (
  buffer: Buffer,
  length: number,
  bytesRead: number,
  file: string,
  cap: number,
): Either.Either<Head, MalformedFrontmatter> | Buffer => {
  // Only the frontmatter, as a string of its own: values sliced out of the chunk's text
  // would keep the whole chunk alive, and the catalog keeps them for every skill.
  const head = frontmatterHead(buffer, length)
  if (head !== undefined) return Either.right(head)
  const text = buffer.toString("utf8", 0, length)
  const complete = bytesRead === 0 || length < buffer.length
  const split = splitFrontmatter(text)
  if (split._tag === "Split") {
    const frontmatter = text.slice(0, text.length - split.value.body.length)
    return Either.right({ text: Buffer.from(frontmatter, "utf8").toString("utf8") })
  }
  if (complete || split._tag === "NoFrontmatter") return Either.right({ text, split })
  if (buffer.length >= cap) {
    return Either.left(
      new MalformedFrontmatter({
        path: file,
        rule: "frontmatter-unclosed",
        reason: `the frontmatter is not closed within the first ${cap} bytes`,
      }),
    )
  }
  const bigger = Buffer.allocUnsafe(Math.min(buffer.length * 4, cap))
  buffer.copy(bigger, 0, 0, length)
  return bigger
}

/** What reading a SKILL.md's frontmatter gives: the fields (and what follows them), or why not. */
export type FrontmatterRead = Either.Either<
  ParsedFrontmatter & { readonly body: string },
  MalformedFrontmatter
>

/** Reads a SKILL.md's head through `port` and parses its frontmatter. */
export const readFrontmatter = async (port: FsPort, file: string, cap: number): Promise<FrontmatterRead> =>
  Either.flatMap(await readHeadSplit(port, file, cap), parseHead(file))

/**
 * `readFrontmatter` from a descriptor open on a regular file (which the caller closes), through
 * a port that answers at once.
 */
export const readFrontmatterFromNow = (
  port: SyncFsPort,
  fd: number,
  file: string,
  cap: number,
): FrontmatterRead => Either.flatMap(readHeadFromNow(port, fd, file, cap), parseHead(file))

const parseHead =
  (file: string) =>
  ({ text, split }: Head) =>
    parseSplit(file, text, split ?? splitFrontmatter(text))

/** A short, path-free description of a Node I/O error. */
export const describeIoError = (error: unknown): string => {
  const code = errorCode(error)
  if (typeof code === "string") {
    switch (code) {
      case "ENOENT":
        return "no such file"
      case "EACCES":
      case "EPERM":
        return "permission denied"
      case "EISDIR":
        return "is a folder"
      case "ELOOP":
        return "too many symbolic links"
      default:
        return code
    }
  }
  return "unknown error"
}

export class Frontmatter extends Effect.Service<Frontmatter>()("skills-mcp/Frontmatter", {
  effect: Effect.gen(function* () {
    const { maxFileBytes } = yield* Settings
    const headCap = Math.min(maxFileBytes, MAX_FRONTMATTER_BYTES)
    /** Metadata only: reads the head of the file. */
    const read = (file: string) =>
      Effect.flatMap(
        Effect.promise(() => readFrontmatter(asyncFs, file, headCap)),
        (result) => result,
      )
    /** Parses a whole SKILL.md text (metadata and body). */
    const parse = (file: string, text: string) => parseSkillText(file, text)
    return { read, parse } as const
  }),
}) {}
