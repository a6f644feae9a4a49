/**
 * Frontmatter: splits a SKILL.md into YAML frontmatter and markdown body, reads the YAML
 * safely (src/skills/SimpleYaml.ts for the common shape, else src/skills/Yaml.ts) and decodes
 * the fields with one Schema, `SkillFrontmatter`. Reads only the head of a file when only the
 * metadata is wanted. The service (`Frontmatter`) reads through the Fs service.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import type { FrontmatterRule } from "../Errors.js"
import { MalformedFrontmatter } from "../Errors.js"
import type { FsPort, SyncFsPort } from "../platform/Fs.js"
import { describeIoError, Fs } from "../platform/Fs.js"
import { Settings } from "../Settings.js"
import { parseSimpleYaml } from "./SimpleYaml.js"
import { readYaml } from "./Yaml.js"

// ---------------------------------------------------------------------------------------
// The fields

/** How to write each required field, for the messages that ask for it. */
const requiredText = (field: "name" | "description", hint: string) =>
  Schema.propertySignature(
    Schema.String.annotations({ message: () => `'${field}' must be a string (quote it): ${hint}` }).pipe(
      Schema.filter((value) => value.trim().length > 0 || `'${field}' is empty: ${hint}`),
    ),
  ).annotations({ missingMessage: () => `missing required field '${field}': ${hint}` })

/**
 * An optional field of the specification, kept when it has its type and left out when it has
 * not: lenient serving (src/skills/Validation.ts reports the mistake from the raw frontmatter).
 */
const lenient = <A, I>(schema: Schema.Schema<A, I>) => {
  const is = Schema.is(schema)
  return Schema.optional(
    Schema.transform(Schema.Unknown, Schema.UndefinedOr(Schema.typeSchema(schema)), {
      strict: true,
      decode: (value) => (is(value) ? value : undefined),
      encode: (value) => value,
    }),
  )
}

/** The fields of the Agent Skills specification; any other top-level field is kept as it is. */
export const SkillFrontmatter = Schema.Struct(
  {
    name: requiredText(
      "name",
      "add 'name:' with the skill's folder name (lowercase letters, digits, hyphens)",
    ),
    description: requiredText(
      "description",
      "add 'description:' saying what the skill does and when to use it",
    ),
    license: lenient(Schema.String),
    compatibility: lenient(Schema.String),
    metadata: lenient(Schema.Record({ key: Schema.String, value: Schema.String })),
    "allowed-tools": lenient(Schema.String),
  },
  Schema.Record({ key: Schema.String, value: Schema.Unknown }),
)
export type SkillFrontmatter = typeof SkillFrontmatter.Type

/** The top-level fields the specification defines. */
export const specFields: ReadonlySet<string> = new Set(Object.keys(SkillFrontmatter.fields))

const decodeFields = Schema.decodeUnknownEither(SkillFrontmatter, { errors: "first" })

export interface ParsedFrontmatter {
  /** Every field the author wrote, as JSON-compatible data. */
  readonly raw: Readonly<Record<string, unknown>>
  readonly fields: SkillFrontmatter
  /** 1-based line of the closing `---`; the body starts on the next line. */
  readonly endLine: number
}

/** A SKILL.md parsed: its frontmatter, and the markdown after it (empty when only the head was read). */
export type ParsedSkill = ParsedFrontmatter & { readonly body: string }

export type FrontmatterRead = Either.Either<ParsedSkill, MalformedFrontmatter>

// ---------------------------------------------------------------------------------------
// Splitting

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
 * Splits a SKILL.md: a UTF-8 BOM, CRLF line ends and blank lines before the opening `---` are
 * tolerated; the frontmatter ends at the first line that is `---` (trailing spaces or tabs
 * allowed; a `---` inside a value is not a delimiter).
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

/**
 * True when a SKILL.md's bytes begin with its frontmatter's `---`. The specification: SKILL.md
 * "MUST begin with YAML frontmatter", and hosts of the MCP Skills extension parse it from the
 * first byte; the server's own parsing also accepts blank lines or a byte order mark first.
 */
export const beginsWithFrontmatter = (bytes: Uint8Array): boolean =>
  bytes[0] === 0x2d && bytes[1] === 0x2d && bytes[2] === 0x2d

// ---------------------------------------------------------------------------------------
// Parsing

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** Reads and decodes the YAML of a split frontmatter (see the module's comment). */
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
    const read = readYaml(split.yaml)
    if (!("data" in read)) return fail(read.reason, read.line)
    data = read.data
  }
  if (data === null || data === undefined)
    return fail("the frontmatter is empty; 'name' and 'description' are required")
  if (!isRecord(data))
    return fail("the frontmatter must be a YAML mapping of fields (name: ..., description: ...)")
  const fields = decodeFields(data)
  if (Either.isLeft(fields)) {
    const issue = ParseResult.ArrayFormatter.formatErrorSync(fields.left)[0]
    return fail(
      issue?.message ?? "invalid name or description",
      undefined,
      issue?.path[0] === "description" ? "description-required" : "name-required",
    )
  }
  return Either.right({ raw: data, fields: fields.right, endLine: split.endLine })
}

/** Splits and parses a whole (or the head of a) SKILL.md text. */
export const parseSkillText = (file: string, text: string): FrontmatterRead => {
  const split = splitFrontmatter(text)
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

// ---------------------------------------------------------------------------------------
// A SKILL.md that is a link checked out as a file

const URL_LIKE = /^[a-z][a-z0-9+.-]*:\/\//i

/**
 * The target path when a SKILL.md is a symbolic link checked out as a plain file (Git for
 * Windows without symlink support writes the link's target as the file's only line), or
 * undefined when the text does not look like that.
 */
export const symlinkTargetIn = (text: string): string | undefined => {
  const content = (text.charCodeAt(0) === 0xfeff ? text.slice(1) : text).replace(/\r?\n$/, "")
  if (content.length === 0 || content.length > 1024 || /[\r\n]/.test(content)) return undefined
  if (content !== content.trim() || !/[\\/]/.test(content) || URL_LIKE.test(content)) return undefined
  // biome-ignore lint/suspicious/noControlCharactersInRegex: a path holds no control characters
  if (/[\u0000-\u001f<>|"*?]/.test(content) || /:\s/.test(content) || /^[-#>*[!`]/.test(content))
    return undefined
  const anchored = /^(?:\.{1,2}[\\/]|[\\/]|~[\\/]|[A-Za-z]:[\\/])/.test(content)
  return anchored || !/\s/.test(content) ? content : undefined
}

/** Why a file holding only a link target is an error; `file` names it (SKILL.md, or a would-be skill folder). */
export const symlinkArtefactReason = (target: string, file = "SKILL.md"): string =>
  `${file} holds only the line '${target.slice(0, 200)}': it is a symbolic link that was checked out as a plain text file (Git for Windows does this when symbolic links are off). Enable them ('git config core.symlinks true', with Windows Developer Mode on) and check the files out again, or replace the file with a copy of its target`

// ---------------------------------------------------------------------------------------
// Reading the head of a file

/** Frontmatter larger than this is refused (the description alone is at most 1,024 characters). */
export const MAX_FRONTMATTER_BYTES = 256 * 1024

/** The first bytes of a file are read in chunks of this size until the frontmatter closes. */
const HEAD_CHUNK = 4 * 1024

const unreadable = (file: string, error: unknown): FrontmatterRead =>
  Either.left(
    new MalformedFrontmatter({
      path: file,
      rule: "skill-unreadable",
      reason: `cannot read the file (${describeIoError(error)})`,
    }),
  )

/**
 * The text of a SKILL.md up to its frontmatter's closing `---` line (or all of it when shorter
 * than `cap` bytes and there is no frontmatter), read in growing chunks: the body of a skill is
 * not read. Undefined when the frontmatter does not close within `cap` bytes.
 */
const readHeadText = async (
  port: FsPort | SyncFsPort,
  fd: number,
  cap: number,
): Promise<string | undefined> => {
  let buffer = Buffer.allocUnsafe(Math.min(HEAD_CHUNK, cap))
  let length = 0
  for (;;) {
    const bytesRead = await port.read(fd, buffer, length, buffer.length - length, length)
    length += bytesRead
    const text = buffer.toString("utf8", 0, length)
    const split = splitFrontmatter(text)
    // Only the frontmatter, copied into a string of its own: values sliced out of the chunk's
    // text would keep the whole chunk alive, and the catalog keeps them for every skill. (Copied
    // from the text, not cut from the bytes: bytes that are not UTF-8 became U+FFFD.)
    if (split._tag === "Split") {
      return Buffer.from(text.slice(0, text.length - split.value.body.length), "utf8").toString("utf8")
    }
    if (bytesRead === 0 || length < buffer.length || split._tag === "NoFrontmatter") return text
    if (buffer.length >= cap) return undefined
    const bigger = Buffer.allocUnsafe(Math.min(buffer.length * 4, cap))
    buffer.copy(bigger, 0, 0, length)
    buffer = bigger
  }
}

/** Reads a SKILL.md's head through `port` and parses its frontmatter; `body` is empty. */
export const readFrontmatter = async (
  port: FsPort | SyncFsPort,
  file: string,
  cap: number,
): Promise<FrontmatterRead> => {
  let fd: number
  try {
    fd = await port.open(file)
  } catch (error) {
    return unreadable(file, error)
  }
  try {
    const text = await readHeadText(port, fd, cap)
    if (text === undefined) {
      return Either.left(
        new MalformedFrontmatter({
          path: file,
          rule: "frontmatter-unclosed",
          reason: `the frontmatter is not closed within the first ${cap} bytes`,
        }),
      )
    }
    return parseSkillText(file, text)
  } catch (error) {
    return unreadable(file, error)
  } finally {
    try {
      await port.close(fd)
    } catch {
      // already closed or gone: nothing to release
    }
  }
}

// ---------------------------------------------------------------------------------------
// The service

export class Frontmatter extends Effect.Service<Frontmatter>()("skills-mcp/Frontmatter", {
  effect: Effect.gen(function* () {
    const { maxFileBytes } = yield* Settings
    const fs = yield* Fs
    const cap = Math.min(maxFileBytes, MAX_FRONTMATTER_BYTES)
    return {
      /**
       * The frontmatter of a SKILL.md, reading only the file's head: with synchronous reads
       * before anything is served (`now`: the first scan), else without blocking the event loop.
       */
      readHead: (file: string, now = false): Promise<FrontmatterRead> =>
        readFrontmatter(now ? fs.sync : fs.async, file, cap),
      /** `readHead`, as an effect that fails with the reason. */
      read: (file: string): Effect.Effect<ParsedSkill, MalformedFrontmatter> =>
        Effect.flatten(Effect.promise(() => readFrontmatter(fs.async, file, cap))),
      /** Parses a whole SKILL.md text (metadata and body). */
      parse: parseSkillText,
    } as const
  }),
}) {}
