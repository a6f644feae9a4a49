/**
 * The model-facing tools: schemas (input, output) and the Effects behind them. No logic
 * beyond shaping: the Catalog and SkillFiles services do the work.
 */
import type { Tool } from "@modelcontextprotocol/sdk/types.js"
import * as Effect from "effect/Effect"
import * as JSONSchema from "effect/JSONSchema"
import * as Schema from "effect/Schema"
import { AuditLog } from "../AuditLog.js"
import { Catalog } from "../catalog/Catalog.js"
import type { Skill, Snapshot } from "../catalog/Snapshot.js"
import type { SkillError } from "../Errors.js"
import { echo, InvalidArgument } from "../Errors.js"
import { type Listing, MAX_EXAMINED, MAX_LISTING_DEPTH } from "../files/Folders.js"
import { SkillFiles } from "../files/SkillFiles.js"
import { withCatalog } from "../instructions.js"
import { notServedNote } from "../report/CatalogReport.js"
import { lineCount } from "../skills/Validation.js"
import type { ToolOutput } from "./Run.js"
import { auditedRun, decodeArguments } from "./Run.js"
import type { TextPage } from "./TextPage.js"
import { DEFAULT_PAGE_LINES, MAX_PAGE_CHARS, pageOf } from "./TextPage.js"

// ---------------------------------------------------------------------------------------
// Schemas

const ListSkillsArgs = Schema.Struct({
  query: Schema.optional(
    Schema.String.pipe(Schema.maxLength(1_000, { message: () => "longer than 1000 characters" })).annotations(
      {
        description:
          "Words describing the task; skills are ranked by relevance over their whole SKILL.md (small typos match too). Omit to list all in catalog order.",
      },
    ),
  ),
  limit: Schema.optional(
    Schema.Int.pipe(Schema.between(1, 1_000)).annotations({
      description: "Largest number of skills to return (default: the page size; 20 with a query).",
    }),
  ),
  cursor: Schema.optional(
    Schema.String.pipe(Schema.maxLength(1_000, { message: () => "longer than 1000 characters" })).annotations(
      {
        description: "The nextCursor of a previous list_skills result, to get the next page.",
      },
    ),
  ),
})

const SkillSummary = Schema.Struct({ id: Schema.String, name: Schema.String, description: Schema.String })

export const ListSkillsResult = Schema.Struct({
  skills: Schema.Array(SkillSummary),
  total: Schema.Int.annotations({ description: "How many skills match, across all pages." }),
  nextCursor: Schema.optional(Schema.String),
  /** With a query: skills searched, and how many with their instructions (indexed in the background). */
  searched: Schema.optional(Schema.Struct({ skills: Schema.Int, bodies: Schema.Int })),
})

const GetSkillArgs = Schema.Struct({
  id: Schema.String.pipe(
    Schema.minLength(1),
    Schema.maxLength(1_000, { message: () => "longer than 1000 characters" }),
  ).annotations({
    description: "The skill's id (its folder name) or its name, as listed.",
  }),
})

const GetSkillResult = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  description: Schema.String,
  path: Schema.String.annotations({ description: "Absolute path of the skill's SKILL.md." }),
  baseDir: Schema.String.annotations({
    description: "Absolute skill folder; relative paths resolve against it.",
  }),
  content: Schema.String.annotations({ description: "The instructions: SKILL.md without its frontmatter." }),
})

const ReadSkillFileArgs = Schema.Struct({
  id: Schema.String.pipe(
    Schema.minLength(1),
    Schema.maxLength(1_000, { message: () => "longer than 1000 characters" }),
  ).annotations({
    description: "The skill's id or name.",
  }),
  path: Schema.optional(
    Schema.String.pipe(Schema.maxLength(4_096, { message: () => "longer than 4096 characters" })).annotations(
      {
        description:
          "Path relative to the skill folder, e.g. 'references/guide.md'. Empty or a folder: list files.",
      },
    ),
  ),
  offset: Schema.optional(
    Schema.Int.pipe(Schema.greaterThanOrEqualTo(1)).annotations({
      description: "First line to read, 1-based (default 1). Files only.",
    }),
  ),
  limit: Schema.optional(
    Schema.Int.pipe(Schema.between(1, 1_000_000)).annotations({
      description: `Number of lines to read (default ${DEFAULT_PAGE_LINES}; at most ${MAX_PAGE_CHARS} characters come back per call). Files only.`,
    }),
  ),
})

const ListingEntrySchema = Schema.Struct({
  path: Schema.String,
  type: Schema.Literal("file", "directory"),
  size: Schema.optional(Schema.Int),
})

/** What a read_skill_file answer says besides its text: a file's text comes once, in the text content. */
export const ReadSkillFileResult = Schema.Struct({
  id: Schema.String,
  path: Schema.String.annotations({ description: "The path read, relative to the skill folder." }),
  type: Schema.Literal("file", "directory"),
  size: Schema.optional(Schema.Int.annotations({ description: "The file's size in bytes." })),
  mimeType: Schema.optional(Schema.String),
  startLine: Schema.optional(
    Schema.Int.annotations({ description: "First line in the text (type 'file')." }),
  ),
  endLine: Schema.optional(Schema.Int.annotations({ description: "Last line in the text (type 'file')." })),
  totalLines: Schema.optional(Schema.Int.annotations({ description: "Lines in the file (type 'file')." })),
  nextOffset: Schema.optional(
    Schema.Int.annotations({
      description: "Where the next part starts, when more lines follow: pass it as offset.",
    }),
  ),
  entries: Schema.optional(
    Schema.Array(ListingEntrySchema).annotations({ description: "Files (type 'directory')." }),
  ),
  truncated: Schema.optional(
    Schema.Boolean.annotations({
      description:
        "A file: the text stops before the file's end (more lines follow) or cuts a line too long for one answer. A folder: the listing stopped.",
    }),
  ),
})

// ---------------------------------------------------------------------------------------
// Definitions (tools/list)

type JsonObjectSchema = Tool["inputSchema"]

/** JSON Schema (2020-12) of an Effect Schema, as MCP wants it: an object schema without `$schema`. */
const objectJsonSchema = <A, I>(schema: Schema.Schema<A, I>): JsonObjectSchema => {
  const { $schema: _ignored, ...rest } = JSONSchema.make(schema, { target: "jsonSchema2020-12" })
  return { ...rest, type: "object" }
}

const readOnly = (title: string) => ({
  title,
  readOnlyHint: true,
  destructiveHint: false,
  idempotentHint: true,
  openWorldHint: false,
})

const LIST_SKILLS_DESCRIPTION =
  "List the available Agent Skills (id, name, description). Pass `query` (a few words about the task) to search every skill, best matches first. Results are paged: pass `nextCursor` back as `cursor` for more."

const GET_SKILL_DESCRIPTION =
  "Load a skill's instructions (its SKILL.md body) by id or name. Call it when a task matches a skill's description below, then follow the instructions. The result names the skill's base directory first: relative paths in the instructions (references/, scripts/, assets/) resolve against it; read those files with your own tools or with read_skill_file."

const READ_SKILL_FILE_DESCRIPTION = `Read a text file from a skill folder (for example references/guide.md), or list the skill's files when \`path\` is empty or names a folder. Paths are relative to the skill folder; nothing outside it can be read. A long file comes in parts of up to ${DEFAULT_PAGE_LINES} lines (or ${MAX_PAGE_CHARS} characters): the answer then ends with the call that reads the next part; \`offset\` (first line, 1-based) and \`limit\` (number of lines) choose a part. For agents without direct file access. Nothing is executed.`

/** The three tools without the catalog, built on first use. */
let bareTools: Array<Tool> | undefined

/** The three tools, the get_skill description as given. */
const defineTools = (getSkillDescription: string): Array<Tool> => {
  bareTools ??= [
    {
      name: "list_skills",
      title: "List skills",
      description: LIST_SKILLS_DESCRIPTION,
      inputSchema: objectJsonSchema(ListSkillsArgs),
      outputSchema: objectJsonSchema(ListSkillsResult),
      annotations: readOnly("List skills"),
    },
    {
      name: "get_skill",
      title: "Load a skill",
      description: GET_SKILL_DESCRIPTION,
      inputSchema: objectJsonSchema(GetSkillArgs),
      outputSchema: objectJsonSchema(GetSkillResult),
      annotations: readOnly("Load a skill"),
    },
    {
      name: "read_skill_file",
      title: "Read a skill file",
      description: READ_SKILL_FILE_DESCRIPTION,
      inputSchema: objectJsonSchema(ReadSkillFileArgs),
      outputSchema: objectJsonSchema(ReadSkillFileResult),
      annotations: readOnly("Read a skill file"),
    },
  ]
  return bareTools.map((tool) =>
    tool.name === "get_skill" ? { ...tool, description: getSkillDescription } : tool,
  )
}

/** Characters of a `tools/list` result as sent (JSON). */
export const listedSize = (tools: ReadonlyArray<Tool>) => JSON.stringify({ tools }).length

/** Whether a listing's get_skill description carries the catalog. */
export const listedCatalog = (tools: ReadonlyArray<Tool>) =>
  tools.some((tool) => tool.name === "get_skill" && tool.description !== GET_SKILL_DESCRIPTION)

/** Tool listings by snapshot and budget: a catalog's listing is built once. */
const listings = new WeakMap<Snapshot, Map<number, Array<Tool>>>()

/**
 * The tools as listed: the whole `tools/list` result within `budget` characters, the
 * get_skill description carrying as much of the catalog as the definitions leave room for
 * (none when `budget` is 0, or smaller than the definitions themselves).
 */
export const toolDefinitions = (snapshot: Snapshot, budget: number): Array<Tool> => {
  const known = listings.get(snapshot)?.get(budget)
  if (known !== undefined) return known
  const bare = defineTools(GET_SKILL_DESCRIPTION)
  let tools = bare
  // The catalog's room, as description characters. JSON's escapes (newlines, quotes,
  // backslashes) take more, so a catalog over the budget is cut again: to the length it took,
  // scaled by the share of its JSON the budget leaves room for.
  const fixed = listedSize(bare) - JSON.stringify(GET_SKILL_DESCRIPTION).length
  let room = budget - listedSize(bare) + GET_SKILL_DESCRIPTION.length
  for (let attempt = 0; budget > 0 && attempt < 8; attempt++) {
    const description = withCatalog(GET_SKILL_DESCRIPTION, snapshot.skills, room)
    if (description === GET_SKILL_DESCRIPTION) break
    const candidate = defineTools(description)
    const size = listedSize(candidate)
    if (size <= budget) {
      tools = candidate
      break
    }
    room = Math.floor((description.length * (budget - fixed)) / (size - fixed))
  }
  const byBudget = listings.get(snapshot) ?? new Map<number, Array<Tool>>()
  byBudget.set(budget, tools)
  listings.set(snapshot, byBudget)
  return tools
}

// ---------------------------------------------------------------------------------------
// Handlers

/** For the audit log: the commit a skill from a git source is served from. */
const commitOf = (skill: Skill): { readonly commit?: string } =>
  skill.git === undefined ? {} : { commit: skill.git.commit }

/** A skill as one line of list_skills' text: its description's whitespace runs collapsed. */
const summaryLine = (skill: Skill) =>
  `- ${skill.id}${skill.name === skill.id ? "" : ` (${skill.name})`}: ${skill.description.replace(/\s+/g, " ")}`

const listSkills = (input: unknown) =>
  Effect.gen(function* () {
    const args = yield* decodeArguments(ListSkillsArgs)(input)
    const catalog = yield* Catalog
    const page = yield* catalog.list(args)
    // ListSkillsResult transforms nothing: its encoded form is this very object, typed by it
    // (not encoded: that would only re-check what was built just above).
    const structured: typeof ListSkillsResult.Encoded = {
      skills: page.skills.map(({ id, name, description }) => ({ id, name, description })),
      total: page.total,
      ...(page.nextCursor === undefined ? {} : { nextCursor: page.nextCursor }),
      ...(page.searched === undefined ? {} : { searched: page.searched }),
    }
    const partly =
      page.searched === undefined || page.searched.bodies >= page.searched.skills
        ? ""
        : `\nSearched the instructions of ${page.searched.bodies} of ${page.searched.skills} skills so far (the rest are being indexed): ask again for a fuller search.`
    const header =
      page.total === 0
        ? args.query
          ? `No skill matches '${args.query}'. Call list_skills without a query to see all skills.`
          : "No skills are available."
        : `${page.total} skill${page.total === 1 ? "" : "s"}${args.query ? ` matching ${page.match === "any" ? "some words of " : ""}'${args.query}', best first` : ""}; showing ${page.skills.length}. Load one with get_skill {"id": "<id>"}.`
    const more =
      page.nextCursor === undefined
        ? ""
        : `\nMore results: call list_skills again with cursor "${page.nextCursor}".`
    const notServed = notServedNote(yield* catalog.peek)
    const output: ToolOutput = {
      structured,
      text: `${header}\n${page.skills.map(summaryLine).join("\n")}${more}${partly}${notServed === "" ? "" : `\n${notServed}`}`,
    }
    return output
  })

const getSkill = (input: unknown) =>
  Effect.gen(function* () {
    const args = yield* decodeArguments(GetSkillArgs)(input)
    const catalog = yield* Catalog
    const files = yield* SkillFiles
    const skill = yield* catalog.get(args.id)
    const loaded = yield* files.loadSkill(skill)
    // GetSkillResult transforms nothing: its encoded form is this very object (as for list_skills).
    const structured: typeof GetSkillResult.Encoded = {
      id: skill.id,
      name: loaded.name,
      description: loaded.description,
      path: skill.file,
      baseDir: skill.dir,
      content: loaded.body,
    }
    const text = `Base directory: ${skill.dir}\nSkill: ${skill.id}${loaded.name === skill.id ? "" : ` (${loaded.name})`}\nRelative paths in these instructions resolve against the base directory.\n\n${loaded.body}`
    const output: ToolOutput = { structured, text, skill: skill.id, ...commitOf(skill) }
    return output
  })

const listingText = (id: string, listing: Listing) => {
  const lines = listing.entries.map((entry) =>
    entry.type === "directory" ? `${entry.path}/` : `${entry.path} (${entry.size ?? 0} bytes)`,
  )
  const where = listing.path === "" ? `skill '${id}'` : `'${listing.path}' in skill '${id}'`
  return `Files in ${where}:\n${lines.join("\n")}${stopText(listing)}`
}

/** Why a listing stopped, for people and models. */
const stopText = (listing: Listing) => {
  if (!listing.truncated) return ""
  if (listing.stoppedBy === "depth")
    return `\n(listing stopped at ${MAX_LISTING_DEPTH} levels of folders: deeper files are not listed)`
  if (listing.stoppedBy === "names")
    return `\n(listing stopped after looking at ${MAX_EXAMINED} names, those left out included)`
  return `\n(listing stopped after ${listing.entries.length} entries)`
}

const readSkillFile = (input: unknown) =>
  Effect.gen(function* () {
    const args = yield* decodeArguments(ReadSkillFileArgs)(input)
    const catalog = yield* Catalog
    const files = yield* SkillFiles
    const skill = yield* catalog.get(args.id)
    const result = yield* files.read(skill, args.path ?? "")
    if (result._tag === "Listing") {
      const structured = yield* Schema.encode(ReadSkillFileResult)({
        id: skill.id,
        path: result.listing.path,
        type: "directory",
        entries: result.listing.entries,
        truncated: result.listing.truncated,
      }).pipe(Effect.orDie)
      const output: ToolOutput = {
        structured,
        text: listingText(skill.id, result.listing),
        skill: skill.id,
        ...commitOf(skill),
      }
      return output
    }
    const { file } = result
    const offset = args.offset ?? 1
    const page = pageOf(file.text, offset, args.limit ?? DEFAULT_PAGE_LINES)
    if (page === undefined) {
      const total = lineCount(file.text)
      return yield* new InvalidArgument({
        argument: "offset",
        reason: `line ${offset} is past the end of '${echo(file.path)}', which has ${total} line${total === 1 ? "" : "s"}`,
      })
    }
    const nextOffset = page.endLine < page.totalLines ? page.endLine + 1 : undefined
    const structured = yield* Schema.encode(ReadSkillFileResult)({
      id: skill.id,
      path: file.path,
      type: "file",
      size: file.size,
      mimeType: file.mimeType,
      startLine: page.startLine,
      endLine: page.endLine,
      totalLines: page.totalLines,
      ...(nextOffset === undefined ? {} : { nextOffset }),
      truncated: nextOffset !== undefined || page.cutLineLength !== undefined,
    }).pipe(Effect.orDie)
    const output: ToolOutput = {
      structured,
      text: pageText(skill.id, file.path, page, nextOffset, args.limit),
      skill: skill.id,
      ...commitOf(skill),
    }
    return output
  })

/**
 * A page's text as the answer gives it: the lines as they are in the file and, when the page is
 * not all of the rest of the file, a note after a blank line saying what was left out and which
 * call reads on.
 */
const pageText = (
  id: string,
  path: string,
  page: TextPage,
  nextOffset: number | undefined,
  limit: number | undefined,
): string => {
  const notes: Array<string> = []
  if (page.cutLineLength !== undefined) {
    notes.push(
      `[Line ${page.endLine} is ${page.cutLineLength} characters long; only its first ${page.text.length} are shown.]`,
    )
  }
  if (nextOffset !== undefined) {
    const next = JSON.stringify({ id, path, offset: nextOffset, ...(limit === undefined ? {} : { limit }) })
    notes.push(
      `[Lines ${page.startLine}-${page.endLine} of ${page.totalLines} shown. To read on, call read_skill_file ${next}]`,
    )
  }
  if (notes.length === 0) return page.text
  return `${page.text}${page.text.endsWith("\n") ? "\n" : "\n\n"}${notes.join("\n")}`
}

const handlers = {
  list_skills: listSkills,
  get_skill: getSkill,
  read_skill_file: readSkillFile,
} as const

const isToolName = (name: string): name is keyof typeof handlers => Object.hasOwn(handlers, name)

/** What the audit log names as the skill and path of a call (only well-formed strings). */
const auditFields = (input: unknown) => {
  const fields: { skill?: string; path?: string } = {}
  if (typeof input === "object" && input !== null) {
    if ("id" in input && typeof input.id === "string") fields.skill = input.id.slice(0, 200)
    if ("path" in input && typeof input.path === "string") fields.path = input.path.slice(0, 500)
  }
  return fields
}

/** Runs one tool call, audited. An unknown tool is an isError result naming the tools. */
export const callTool = (
  name: string,
  input: unknown,
): Effect.Effect<ToolOutput, SkillError, Catalog | SkillFiles | AuditLog> =>
  Effect.gen(function* () {
    const audit = yield* AuditLog
    const effect: Effect.Effect<ToolOutput, SkillError, Catalog | SkillFiles> = isToolName(name)
      ? handlers[name](input)
      : Effect.fail(
          new InvalidArgument({
            argument: "name",
            reason: `no tool '${echo(name)}'; the tools are ${Object.keys(handlers).join(", ")}`,
          }),
        )
    // The skill recorded is the id the call resolved to (it may have named it by name or in
    // another case).
    return yield* auditedRun(
      audit,
      { tool: name.slice(0, 100), ...auditFields(input) },
      effect,
      (output) => ({
        ...(output.skill === undefined ? {} : { skill: output.skill }),
        ...(output.commit === undefined ? {} : { commit: output.commit }),
      }),
    )
  })
