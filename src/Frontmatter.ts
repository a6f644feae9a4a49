/**
 * Frontmatter: split a SKILL.md into YAML frontmatter and markdown body, parse the YAML in a
 * safe configuration and decode the fields with Schema. Reads only the head of a file when
 * only the metadata is wanted.
 */
import * as fs from "node:fs/promises"
import { Effect, Either, ParseResult, Schema } from "effect"
import { LineCounter, parseDocument, visit } from "yaml"
import { MalformedFrontmatter } from "./Errors.js"
import { Settings } from "./Settings.js"

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

const requiredText = (field: string) =>
  Schema.propertySignature(
    Schema.String.annotations({ message: () => `'${field}' must be a string` }).pipe(
      Schema.filter((value) => value.trim().length > 0 || `'${field}' is empty`),
    ),
  ).annotations({ missingMessage: () => `missing required field '${field}'` })

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

const decodeOptional = <A>(schema: Schema.Schema<A>, value: unknown): A | undefined =>
  value === undefined ? undefined : Either.getOrUndefined(Schema.decodeUnknownEither(schema)(value))

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** Parses the YAML of a split frontmatter: core schema, no custom tags, unique keys, bounded aliases. */
export const parseFrontmatterYaml = (
  file: string,
  split: SplitFrontmatter,
): Either.Either<ParsedFrontmatter, MalformedFrontmatter> => {
  const fail = (reason: string, yamlLine?: number) =>
    Either.left(
      new MalformedFrontmatter(
        yamlLine === undefined
          ? { path: file, reason }
          : { path: file, reason, line: split.startLine + yamlLine },
      ),
    )
  let data: unknown
  try {
    const lineCounter = new LineCounter()
    const doc = parseDocument(split.yaml, {
      schema: "core",
      customTags: [],
      uniqueKeys: true,
      strict: true,
      prettyErrors: false,
      stringKeys: true,
      lineCounter,
    })
    const lineOf = (offset: number | undefined) =>
      offset === undefined ? undefined : lineCounter.linePos(offset).line
    const error = doc.errors[0]
    if (error !== undefined) return fail(`YAML error: ${error.message.split("\n")[0]}`, lineOf(error.pos[0]))
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
    return fail(`YAML could not be read: ${error instanceof Error ? error.message : String(error)}`)
  }
  if (data === null || data === undefined)
    return fail("the frontmatter is empty; 'name' and 'description' are required")
  if (!isRecord(data))
    return fail("the frontmatter must be a YAML mapping of fields (name: ..., description: ...)")
  const required = Schema.decodeUnknownEither(RequiredFields, { errors: "first" })(data)
  if (Either.isLeft(required)) {
    return fail(
      ParseResult.ArrayFormatter.formatErrorSync(required.left)[0]?.message ?? "invalid name or description",
    )
  }
  const extra: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(data)) if (!specFields.has(key)) extra[key] = value
  const license = decodeOptional(optionalFields.license, data.license)
  const compatibility = decodeOptional(optionalFields.compatibility, data.compatibility)
  const metadata = decodeOptional(optionalFields.metadata, data.metadata)
  const allowedTools = decodeOptional(optionalFields["allowed-tools"], data["allowed-tools"])
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
): Either.Either<ParsedFrontmatter & { readonly body: string }, MalformedFrontmatter> => {
  const split = splitFrontmatter(text)
  switch (split._tag) {
    case "NoFrontmatter":
      return Either.left(
        new MalformedFrontmatter({
          path: file,
          line: 1,
          reason:
            "no frontmatter: SKILL.md must start with a '---' line, then 'name:' and 'description:', then '---'",
        }),
      )
    case "NotClosed":
      return Either.left(
        new MalformedFrontmatter({
          path: file,
          line: split.startLine,
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
const HEAD_CHUNK = 16 * 1024
/** Frontmatter larger than this is refused (the description alone is at most 1,024 characters). */
export const MAX_FRONTMATTER_BYTES = 256 * 1024

/**
 * Reads only as much of a SKILL.md as the frontmatter needs: chunk by chunk until the closing
 * `---` shows up, the file ends, or the cap is reached.
 */
export const readHead = (file: string, cap: number): Effect.Effect<string, MalformedFrontmatter> =>
  Effect.tryPromise({
    try: async () => {
      const handle = await fs.open(file, "r")
      try {
        const chunks: Array<Buffer> = []
        let total = 0
        for (;;) {
          const want = Math.min(HEAD_CHUNK, cap - total)
          if (want <= 0) return { text: Buffer.concat(chunks).toString("utf8"), complete: false }
          const buffer = Buffer.alloc(want)
          const { bytesRead } = await handle.read(buffer, 0, want, total)
          if (bytesRead === 0) return { text: Buffer.concat(chunks).toString("utf8"), complete: true }
          chunks.push(bytesRead === want ? buffer : buffer.subarray(0, bytesRead))
          total += bytesRead
          const text = Buffer.concat(chunks).toString("utf8")
          if (splitFrontmatter(text)._tag !== "NotClosed") return { text, complete: bytesRead < want }
        }
      } finally {
        await handle.close()
      }
    },
    catch: (error) =>
      new MalformedFrontmatter({ path: file, reason: `cannot read the file (${describeIoError(error)})` }),
  }).pipe(
    Effect.flatMap(({ text, complete }) =>
      !complete && splitFrontmatter(text)._tag === "NotClosed"
        ? Effect.fail(
            new MalformedFrontmatter({
              path: file,
              reason: `the frontmatter is not closed within the first ${cap} bytes`,
            }),
          )
        : Effect.succeed(text),
    ),
  )

/** A short, path-free description of a Node I/O error. */
export const describeIoError = (error: unknown): string => {
  if (typeof error === "object" && error !== null && "code" in error && typeof error.code === "string") {
    switch (error.code) {
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
        return error.code
    }
  }
  return "unknown error"
}

export class Frontmatter extends Effect.Service<Frontmatter>()("skills-mcp/Frontmatter", {
  effect: Effect.gen(function* () {
    const { maxFileBytes } = yield* Settings
    const headCap = Math.min(maxFileBytes, MAX_FRONTMATTER_BYTES)
    /** Metadata only: reads the head of the file. */
    const read = Effect.fn("Frontmatter.read")(function* (file: string) {
      const text = yield* readHead(file, headCap)
      return yield* parseSkillText(file, text)
    })
    /** Parses a whole SKILL.md text (metadata and body). */
    const parse = (file: string, text: string) => parseSkillText(file, text)
    return { read, parse } as const
  }),
}) {}
