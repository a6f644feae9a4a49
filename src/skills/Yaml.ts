/**
 * Yaml: the `yaml` package in a safe configuration for frontmatter (YAML 1.2 core schema, no
 * custom tags, unique string keys, at most 100 aliases, lists and maps nested at most 64
 * levels), with errors placed on the line where the problem starts.
 */
import type { CST, Document, DocumentOptions, ParseOptions, SchemaOptions, YAMLError } from "yaml"
import { Composer, isCollection, isScalar, Lexer, LineCounter, Parser, visit, YAMLParseError } from "yaml"

/** Why a YAML text cannot be read, and the 1-based line (of the text) where the problem is. */
export interface YamlProblem {
  readonly reason: string
  readonly line?: number
}

/** Explicit tags of the YAML 1.2 core schema; any other tag (`!!binary`, `!!js/function`, `!x`) is refused. */
const CORE_TAGS = new Set(
  ["str", "int", "float", "bool", "null", "map", "seq"].map((name) => `tag:yaml.org,2002:${name}`),
)

/** Lists and maps nested deeper than this are refused (frontmatter needs two or three levels). */
export const MAX_YAML_DEPTH = 64

/** Thrown out of `parseYaml` where the nesting passes MAX_YAML_DEPTH, at `offset` of the text. */
class TooDeep {
  constructor(readonly offset: number) {}
}

/** The `yaml` package's safe reading: core schema, no custom tags, unique string keys. */
export const YAML_OPTIONS: ParseOptions & DocumentOptions & SchemaOptions = {
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
 * rest is read or any document is built (deep nesting costs the parser time and memory).
 * Watching the parser, rather than scanning the text first, costs no second pass and agrees
 * with YAML's own reading of quotes, comments and block scalars.
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

/** The data of a YAML text read safely (see the module's comment), or why it cannot be read. */
export const readYaml = (yaml: string): { readonly data: unknown } | YamlProblem => {
  const lineCounter = new LineCounter()
  const lineOf = (offset: number | undefined) =>
    offset === undefined ? undefined : lineCounter.linePos(offset).line
  const problem = (reason: string, offset?: number): YamlProblem => {
    const line = lineOf(offset)
    return line === undefined ? { reason } : { reason, line }
  }
  try {
    const doc = parseYaml(yaml, lineCounter)
    const error = doc.errors[0]
    if (error !== undefined) {
      const where = problemOf(doc, error, yaml)
      const message = error.message.split("\n")[0]
      return problem(
        `YAML error: ${message}${where.hint === undefined ? "" : ` (${where.hint})`}`,
        where.offset,
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
      return problem(
        `YAML tags are not allowed (found '${tagged.tag.replace("tag:yaml.org,2002:", "!!")}'); write plain values`,
        tagged.offset,
      )
    }
    return { data: doc.toJS({ maxAliasCount: 100 }) }
  } catch (error) {
    if (error instanceof TooDeep) {
      return problem(
        `YAML error: lists and maps are nested more than ${MAX_YAML_DEPTH} levels deep here; frontmatter needs only a few levels`,
        error.offset,
      )
    }
    return problem(`YAML could not be read: ${error instanceof Error ? error.message : String(error)}`)
  }
}
