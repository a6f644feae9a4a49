/**
 * Every failure a client or a user can see. Data lives in fields, wording in `message`;
 * the MCP boundary (src/mcp/Run.ts) turns them into results, once.
 */
import * as Schema from "effect/Schema"

const quoteList = (items: ReadonlyArray<string>) => items.map((item) => `'${item}'`).join(", ")

/** Longest part of a client's value a message repeats: a 1 MB argument must not come back. */
export const MAX_ECHO = 120

/** `value` as a message repeats it: whole when short, else its start and its length. */
export const echo = (value: string): string =>
  value.length <= MAX_ECHO ? value : `${value.slice(0, MAX_ECHO)}… (${value.length} characters)`

export class SkillNotFound extends Schema.TaggedError<SkillNotFound>()("SkillNotFound", {
  query: Schema.String,
  suggestions: Schema.Array(Schema.String),
}) {
  override get message() {
    const hint = this.suggestions.length > 0 ? ` Closest ids: ${quoteList(this.suggestions)}.` : ""
    return `Skill '${echo(this.query)}' not found.${hint} Call list_skills (optionally with a query) to see the available skills.`
  }
}

/**
 * Why a SKILL.md cannot be served, as the id of the `validate` rule that reports it
 * (src/skills/Validation.ts lists every rule).
 */
export const FrontmatterRule = Schema.Literal(
  "skill-unreadable",
  "symlink-artefact",
  "frontmatter-missing",
  "frontmatter-unclosed",
  "yaml-invalid",
  "name-required",
  "description-required",
  "skill-nested",
)
export type FrontmatterRule = typeof FrontmatterRule.Type

export class MalformedFrontmatter extends Schema.TaggedError<MalformedFrontmatter>()("MalformedFrontmatter", {
  path: Schema.String,
  line: Schema.optional(Schema.Number),
  reason: Schema.String,
  rule: FrontmatterRule,
}) {
  override get message() {
    const at = this.line === undefined ? this.path : `${this.path}:${this.line}`
    return `Malformed SKILL.md frontmatter at ${at}: ${this.reason}`
  }
}

/** A requested path that is not inside the skill. `requested` is for the audit log only. */
export class PathEscape extends Schema.TaggedError<PathEscape>()("PathEscape", {
  skillId: Schema.String,
  requested: Schema.String,
}) {
  override get message() {
    return `The path is outside the skill '${this.skillId}' (or cannot be resolved inside it). Use a path relative to the skill folder, such as 'references/guide.md'.`
  }
}

export class FileNotFound extends Schema.TaggedError<FileNotFound>()("FileNotFound", {
  skillId: Schema.String,
  path: Schema.String,
}) {
  override get message() {
    return `No file or folder '${echo(this.path)}' in skill '${this.skillId}'. Call read_skill_file with an empty path to list the skill's files.`
  }
}

export class FileTooLarge extends Schema.TaggedError<FileTooLarge>()("FileTooLarge", {
  skillId: Schema.String,
  path: Schema.String,
  size: Schema.Number,
  limit: Schema.Number,
}) {
  override get message() {
    return `'${this.path}' in skill '${this.skillId}' is ${this.size} bytes, over the ${this.limit}-byte limit. The operator can raise it with --max-file-bytes or SKILLS_MCP_MAX_FILE_BYTES.`
  }
}

export class BinaryFile extends Schema.TaggedError<BinaryFile>()("BinaryFile", {
  skillId: Schema.String,
  path: Schema.String,
  size: Schema.Number,
  mimeType: Schema.String,
}) {
  override get message() {
    return `'${this.path}' in skill '${this.skillId}' is a binary file (${this.mimeType}, ${this.size} bytes) and cannot be returned as text. Use it from the skill folder on disk.`
  }
}

export class SkillUnreadable extends Schema.TaggedError<SkillUnreadable>()("SkillUnreadable", {
  skillId: Schema.String,
  path: Schema.String,
  reason: Schema.String,
}) {
  override get message() {
    return `Skill '${this.skillId}' could not be read (${this.path}): ${this.reason}`
  }
}

export class InvalidArgument extends Schema.TaggedError<InvalidArgument>()("InvalidArgument", {
  argument: Schema.String,
  reason: Schema.String,
}) {
  override get message() {
    return `Invalid argument '${this.argument}': ${this.reason}`
  }
}

/** A skill the Skills extension does not serve (naming rules, size limits); the tools still do. */
export class SkillNotPublished extends Schema.TaggedError<SkillNotPublished>()("SkillNotPublished", {
  skillId: Schema.String,
  reason: Schema.String,
}) {
  override get message() {
    return `Skill '${this.skillId}' is not served over the MCP Skills extension: ${this.reason}. Its instructions and files remain available through get_skill and read_skill_file.`
  }
}

/** A URI this server does not serve. */
export class UnknownUri extends Schema.TaggedError<UnknownUri>()("UnknownUri", {
  uri: Schema.String,
  reason: Schema.String,
}) {
  override get message() {
    return `No resource is served at ${echo(this.uri)}: ${this.reason}.`
  }
}

/** A request (over HTTP) that ran longer than the server allows; its work was stopped. */
export class RequestTimeout extends Schema.TaggedError<RequestTimeout>()("RequestTimeout", {
  limitMs: Schema.Number,
}) {
  override get message() {
    return `The request took longer than ${this.limitMs / 1000} s, the server's limit, and was stopped. Try again, or ask for less (a smaller page, a narrower query).`
  }
}

/** Start-up and command-line problems: bad flags, missing explicit roots. */
export class UsageError extends Schema.TaggedError<UsageError>()("UsageError", {
  reason: Schema.String,
}) {
  override get message() {
    return this.reason
  }
}

/** An auth file (`--auth`) that cannot be used, and why (never with a token in it). */
export class AuthFileUnusable extends Schema.TaggedError<AuthFileUnusable>()("AuthFileUnusable", {
  reason: Schema.String,
}) {
  override get message() {
    return this.reason
  }
}

/** Failures a tool call can end with; each has a message a person can act on. */
export type SkillError =
  | SkillNotFound
  | MalformedFrontmatter
  | PathEscape
  | FileNotFound
  | FileTooLarge
  | BinaryFile
  | SkillUnreadable
  | InvalidArgument
  | SkillNotPublished
  | UnknownUri
  | RequestTimeout

/** A git command of a git source failed (src/sources/Git.ts): logged and shown in diagnostics, never sent to a client. */
export class GitFailed extends Schema.TaggedError<GitFailed>()("GitFailed", {
  reason: Schema.String,
}) {
  override get message() {
    return this.reason
  }
}
