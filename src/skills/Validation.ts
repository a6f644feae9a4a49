/**
 * Validation: the Agent Skills rules (agentskills.io/specification) as pure functions, each
 * rule with a stable id, a severity and a message that says how to fix the problem. The server
 * applies the frontmatter rules to every skill it serves and only reports them (lenient
 * serving); `skills-mcp validate` (src/report/Lint.ts) runs every rule, the ones that need the
 * disk included, and fails on errors.
 */
import * as Effect from "effect/Effect"
import type { ParsedFrontmatter } from "./Frontmatter.js"
import { specFields } from "./Frontmatter.js"
import type { FileReference } from "./References.js"

export type Severity = "error" | "warning"

/** Every rule: its severity and what it checks (docs/VALIDATE.md lists the same table). */
export const RULES = {
  "skill-unreadable": { severity: "error", summary: "SKILL.md can be read (and is within --max-file-bytes)" },
  "symlink-artefact": {
    severity: "error",
    summary: "SKILL.md is not a symbolic link checked out as a one-line text file",
  },
  "frontmatter-missing": { severity: "error", summary: "SKILL.md starts with YAML frontmatter (`---`)" },
  "frontmatter-unclosed": { severity: "error", summary: "the frontmatter ends with a `---` line" },
  "yaml-invalid": {
    severity: "error",
    summary: "the frontmatter is a valid YAML 1.2 mapping (no custom tags)",
  },
  "name-required": { severity: "error", summary: "`name` is present, a string, not empty" },
  "description-required": { severity: "error", summary: "`description` is present, a string, not empty" },
  "skill-nested": {
    severity: "error",
    summary: "the skill folder is not inside another skill's folder (through a root or a link)",
  },
  "name-length": { severity: "error", summary: "`name` is 1-64 characters (after NFKC normalisation)" },
  "name-characters": {
    severity: "error",
    summary: "`name` holds only lowercase letters (Unicode allowed), digits and hyphens",
  },
  "name-hyphens": {
    severity: "error",
    summary: "`name` does not start or end with a hyphen, nor contain `--`",
  },
  "name-matches-folder": {
    severity: "error",
    summary: "`name` equals the folder name (both NFKC-normalised)",
  },
  "description-length": {
    severity: "error",
    summary: "`description` is at most 1024 characters (code points)",
  },
  "compatibility-type": { severity: "error", summary: "`compatibility` is a string" },
  "compatibility-length": { severity: "error", summary: "`compatibility` is 1-500 characters" },
  "metadata-type": { severity: "error", summary: "`metadata` maps string keys to string values" },
  "license-type": { severity: "error", summary: "`license` is a string" },
  "allowed-tools-type": {
    severity: "error",
    summary: "`allowed-tools` is a space-separated string (or a YAML list of strings)",
  },
  "unknown-field": { severity: "warning", summary: "no top-level field outside the specification" },
  "skill-md-length": { severity: "warning", summary: "SKILL.md is at most 500 lines" },
  "frontmatter-not-first": {
    severity: "warning",
    summary: "SKILL.md begins with `---`, with no byte order mark or blank lines before it",
  },
  "reference-missing": {
    severity: "warning",
    summary: "files SKILL.md references by relative path exist",
  },
  "reference-outside": {
    severity: "warning",
    summary: "files SKILL.md references by relative path are inside the skill folder",
  },
  "skill-too-large": {
    severity: "warning",
    summary: "the skill fits the MCP Skills extension: at most 512 files and 16 MiB",
  },
  "duplicate-name": { severity: "warning", summary: "no other skill in the roots has the same name" },
  "path-skipped": {
    severity: "warning",
    summary: "discovery could follow every folder (no link out of the root, no unreadable folder)",
  },
  "root-empty": {
    severity: "warning",
    summary:
      "every skills folder holds at least one skill (skills in dot-folders count with --include-dot-folders)",
  },
} as const satisfies Record<string, { readonly severity: Severity; readonly summary: string }>

export type RuleId = keyof typeof RULES
export const RULE_IDS = Object.keys(RULES) as ReadonlyArray<RuleId>

export interface Diagnostic {
  /** Stable rule id, e.g. `name-characters`. */
  readonly rule: RuleId
  readonly severity: Severity
  /** What is wrong and how to fix it. */
  readonly message: string
  /** 1-based line in SKILL.md, when known. */
  readonly line?: number
}

/** A diagnostic of `rule`, with the rule's severity. */
export const diagnostic = (rule: RuleId, message: string, line?: number): Diagnostic =>
  line === undefined
    ? { rule, severity: RULES[rule].severity, message }
    : { rule, severity: RULES[rule].severity, message, line }

export interface SkillSubject {
  /** The skill's folder name. */
  readonly folder: string
  readonly frontmatter: ParsedFrontmatter
  /** Line of each top-level field in SKILL.md (see `fieldLines`), to point at the field. */
  readonly lines?: ReadonlyMap<string, number>
}

export const MAX_NAME = 64
export const MAX_DESCRIPTION = 1024
const MAX_COMPATIBILITY = 500
const MAX_SKILL_MD_LINES = 500

/** Length in Unicode code points (an emoji counts once), without allocating. */
export const codePoints = (text: string): number => {
  let count = text.length
  for (let index = 0; index < text.length; index++) {
    const unit = text.charCodeAt(index)
    if (unit >= 0xdc00 && unit <= 0xdfff && index > 0) {
      const previous = text.charCodeAt(index - 1)
      if (previous >= 0xd800 && previous <= 0xdbff) count--
    }
  }
  return count
}

const typeName = (value: unknown) =>
  value === null
    ? "null"
    : Array.isArray(value)
      ? "a list"
      : typeof value === "object"
        ? "a map"
        : `a ${typeof value}`

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

// ---------------------------------------------------------------------------------------
// Names

/** Letters and digits of any script, and hyphens. */
const NAME_CHARACTERS = /^[\p{L}\p{N}-]*$/u

/**
 * Frontmatter fields outside the specification that Claude Code documents for its skills:
 * moving them under `metadata` would break those skills, so `unknown-field` says so.
 */
const CLIENT_FIELDS = new Set([
  "argument-hint",
  "disable-model-invocation",
  "user-invocable",
  "model",
  "context",
  "agent",
  "hooks",
  "when_to_use",
])

export interface NameProblem {
  readonly rule: "name-length" | "name-characters" | "name-hyphens"
  readonly problem: string
}

/** Lowercase ASCII words joined by single hyphens: a name every naming rule accepts. */
const SIMPLE_NAME = /^[a-z0-9]+(?:-[a-z0-9]+)*$/

/**
 * The naming rules, on the NFKC form of the name: 1-64 characters; lowercase letters (of
 * any script: `é`, `ß`, `日本`), digits and hyphens; no hyphen at either end, no `--`.
 */
const nameRuleProblems = (name: string): Array<NameProblem> => {
  // The common case, at a glance (the catalog checks every name at start-up).
  if (name.length <= MAX_NAME && SIMPLE_NAME.test(name)) return []
  const normal = name.normalize("NFKC")
  const problems: Array<NameProblem> = []
  const length = codePoints(normal)
  if (length < 1 || length > MAX_NAME)
    problems.push({
      rule: "name-length",
      problem: `must be 1-${MAX_NAME} characters long (it has ${length})`,
    })
  if (!NAME_CHARACTERS.test(normal) || normal.toLowerCase() !== normal) {
    const bad = [...new Set([...normal].filter((c) => !/^[\p{L}\p{N}-]$/u.test(c) || c.toLowerCase() !== c))]
    problems.push({
      rule: "name-characters",
      problem: `may contain only lowercase letters, digits and hyphens (found ${bad
        .slice(0, 5)
        .map((c) => `'${c}'`)
        .join(", ")})`,
    })
  }
  if (normal.startsWith("-") || normal.endsWith("-"))
    problems.push({ rule: "name-hyphens", problem: "must not start or end with a hyphen" })
  if (normal.includes("--"))
    problems.push({ rule: "name-hyphens", problem: "must not contain consecutive hyphens" })
  return problems
}

/** The naming rules' problems as text (empty when the name is valid). */
export const nameProblems = (name: string): Array<string> =>
  nameRuleProblems(name).map((problem) => problem.problem)

export const isValidName = (name: string): boolean => nameRuleProblems(name).length === 0

/** A valid name close to `name` (`PDF Processing` -> `pdf-processing`), or undefined if none. */
export const suggestedName = (name: string): string | undefined => {
  const slug = name
    .normalize("NFKC")
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, "-")
    .replace(/^-+|-+$/g, "")
  const cut = [...slug].slice(0, MAX_NAME).join("").replace(/-+$/, "")
  return cut !== "" && isValidName(cut) ? cut : undefined
}

// ---------------------------------------------------------------------------------------
// Frontmatter

/**
 * The line of each top-level field of a frontmatter: `yaml` is the text between the `---`
 * lines and `startLine` the line of the opening `---`. Block-style keys only (a flow-style
 * frontmatter has no line per field).
 */
export const fieldLines = (yaml: string, startLine: number): Map<string, number> => {
  const lines = new Map<string, number>()
  const KEY =
    /^(?:"((?:[^"\\]|\\.)*)"|'((?:[^']|'')*)'|([^\s#'"{[\-?:][^#]*?|-[^\s#][^#]*?))[ \t]*:(?:[ \t]|$)/
  yaml.split("\n").forEach((raw, index) => {
    const match = KEY.exec(raw.endsWith("\r") ? raw.slice(0, -1) : raw)
    const key = match?.[1] ?? match?.[2]?.replaceAll("''", "'") ?? match?.[3]
    if (key !== undefined && !lines.has(key)) lines.set(key, startLine + 1 + index)
  })
  return lines
}

/** Every frontmatter rule that applies to one skill (all but the parse failures). */
export const checkSkill = ({ folder, frontmatter, lines }: SkillSubject): Array<Diagnostic> => {
  const diagnostics: Array<Diagnostic> = []
  const { raw, fields } = frontmatter
  const report = (rule: RuleId, field: string, message: string) =>
    diagnostics.push(diagnostic(rule, message, lines?.get(field)))

  const nameRules = nameRuleProblems(fields.name)
  const differs = fields.name !== folder && fields.name.normalize("NFKC") !== folder.normalize("NFKC")
  // Only a name with a problem needs a suggestion (the catalog checks every skill at start-up).
  // The name must equal the folder's, so a valid folder name is the one fix for both rules.
  const suggestion =
    nameRules.length === 0 && !differs
      ? undefined
      : differs && isValidName(folder)
        ? folder.normalize("NFKC")
        : suggestedName(fields.name)
  const rename = suggestion === undefined ? "" : ` Use '${suggestion}'.`
  if (nameRules.length > 0) {
    const byRule = new Map<NameProblem["rule"], Array<string>>()
    for (const { rule, problem } of nameRules) byRule.set(rule, [...(byRule.get(rule) ?? []), problem])
    for (const [rule, problems] of byRule)
      report(rule, "name", `name '${fields.name}' ${problems.join("; ")}.${rename}`)
  }

  if (differs) {
    const fix =
      suggestion === folder.normalize("NFKC") || isValidName(folder)
        ? `set 'name: ${folder}' or rename the folder to match`
        : `rename the folder to '${suggestion ?? fields.name}' and use that as the name`
    report(
      "name-matches-folder",
      "name",
      `name '${fields.name}' differs from its folder name '${folder}': ${fix}.`,
    )
  }

  // No more code points than UTF-16 units: most descriptions need no count.
  const descriptionLength =
    fields.description.length <= MAX_DESCRIPTION ? fields.description.length : codePoints(fields.description)
  if (descriptionLength > MAX_DESCRIPTION) {
    report(
      "description-length",
      "description",
      `description is ${descriptionLength} characters; the limit is ${MAX_DESCRIPTION}. Keep what the skill does and when to use it; move details into the body.`,
    )
  }

  if ("compatibility" in raw) {
    const value = raw.compatibility
    if (value === null || (typeof value === "string" && value.trim() === "")) {
      report(
        "compatibility-length",
        "compatibility",
        "compatibility is empty; give the requirements (e.g. 'Requires Python 3.10+') or remove the field.",
      )
    } else if (typeof value !== "string") {
      report(
        "compatibility-type",
        "compatibility",
        `compatibility must be a string, not ${typeName(value)}; write the requirements as one sentence.`,
      )
    } else if (codePoints(value) > MAX_COMPATIBILITY) {
      report(
        "compatibility-length",
        "compatibility",
        `compatibility is ${codePoints(value)} characters; the limit is ${MAX_COMPATIBILITY}. Move details into the body.`,
      )
    }
  }

  if ("metadata" in raw) {
    const value = raw.metadata
    if (!isRecord(value)) {
      report(
        "metadata-type",
        "metadata",
        `metadata must be a map of string keys to string values, not ${typeName(value)} (write 'metadata:' then indented 'key: "value"' lines).`,
      )
    } else {
      const wrong = Object.entries(value).filter(([, item]) => typeof item !== "string")
      if (wrong.length > 0) {
        report(
          "metadata-type",
          "metadata",
          `metadata values must be strings: ${wrong
            .slice(0, 5)
            .map(([key, item]) => `'${key}' is ${typeName(item)}`)
            .join(", ")}. Quote numbers and booleans (version: "1.0") and flatten nested values.`,
        )
      }
    }
  }

  if ("license" in raw && typeof raw.license !== "string") {
    report(
      "license-type",
      "license",
      `license must be a string (a license name such as 'MIT' or a bundled file such as 'LICENSE.txt'), not ${typeName(raw.license)}.`,
    )
  }

  if ("allowed-tools" in raw) {
    const value = raw["allowed-tools"]
    const valid =
      typeof value === "string" || (Array.isArray(value) && value.every((item) => typeof item === "string"))
    if (!valid) {
      report(
        "allowed-tools-type",
        "allowed-tools",
        `allowed-tools must be a space-separated string such as 'Bash(git:*) Read' (or a list of strings), not ${
          Array.isArray(value) ? "a list holding non-strings" : typeName(value)
        }.`,
      )
    }
  }

  for (const key of Object.keys(raw).filter((field) => !specFields.has(field))) {
    report(
      "unknown-field",
      key,
      CLIENT_FIELDS.has(key)
        ? `field '${key}' is not part of the Agent Skills specification: Claude Code reads it, other clients ignore it. Keep it if the skill is for Claude Code; otherwise remove it.`
        : `field '${key}' is not part of the Agent Skills specification; clients ignore it. Move it under 'metadata' (as a string value) or remove it.`,
    )
  }
  return diagnostics
}

// ---------------------------------------------------------------------------------------
// The file itself

/** Lines of a text (a final line end does not start another line). */
export const lineCount = (text: string): number => {
  if (text === "") return 0
  let count = 1
  for (let index = text.indexOf("\n"); index !== -1; index = text.indexOf("\n", index + 1)) count++
  return text.endsWith("\n") ? count - 1 : count
}

export const checkLength = (text: string): Diagnostic | undefined => {
  const lines = lineCount(text)
  return lines > MAX_SKILL_MD_LINES
    ? diagnostic(
        "skill-md-length",
        `SKILL.md has ${lines} lines; the specification advises at most ${MAX_SKILL_MD_LINES}. Move detailed material into references/ files and link them.`,
      )
    : undefined
}

export const frontmatterNotFirst = (): Diagnostic =>
  diagnostic(
    "frontmatter-not-first",
    "SKILL.md does not begin with '---' (a byte order mark or blank lines come first): hosts using the MCP Skills extension parse it from the first byte, so the server leaves it out of skills/list. Save it without a BOM and remove the blank lines.",
    1,
  )

export const outsideReference = (reference: FileReference): Diagnostic =>
  diagnostic(
    "reference-outside",
    `SKILL.md refers to '${reference.path}', outside the skill folder: agents that read the skill through the server (read_skill_file, skill:// resources) cannot open it, and a copied skill loses it. Move the file into the skill folder.`,
    reference.line,
  )

export const missingReference = (reference: FileReference): Diagnostic =>
  diagnostic(
    "reference-missing",
    `SKILL.md refers to '${reference.path}', which does not exist in the skill folder. Add the file or fix the path (paths are relative to the skill folder).`,
    reference.line,
  )

export interface SkillSize {
  readonly files: number
  readonly bytes: number
  /** True when the count stopped early: the skill has at least `files` files. */
  readonly partial: boolean
  /** A file over the server's per-file limit, if any. */
  readonly oversized?: { readonly path: string; readonly size: number; readonly limit: number }
}

/** The MCP Skills extension's limits (a skill over them is left out of skills/list). */
export const checkSize = (
  size: SkillSize,
  limits: { readonly files: number; readonly bytes: number },
): Diagnostic | undefined => {
  const problems: Array<string> = []
  if (size.files > limits.files)
    problems.push(`${size.partial ? "more than " : ""}${size.files} files (limit ${limits.files})`)
  if (size.bytes > limits.bytes)
    problems.push(`${size.partial ? "more than " : ""}${size.bytes} bytes (limit ${limits.bytes}, 16 MiB)`)
  if (size.oversized !== undefined)
    problems.push(
      `'${size.oversized.path}' is ${size.oversized.size} bytes, over the server's ${size.oversized.limit}-byte file limit (--max-file-bytes)`,
    )
  return problems.length === 0
    ? undefined
    : diagnostic(
        "skill-too-large",
        `the skill has ${problems.join("; ")}: hosts using the MCP Skills extension will not see it (the tools still serve it). Move large or generated files out of the skill folder.`,
      )
}

export interface NamedSkill {
  readonly name: string
  /** SKILL.md path. */
  readonly file: string
}

/** For each skill whose name (NFKC) another skill also has: the other SKILL.md paths. */
export const duplicateNames = <S extends NamedSkill>(skills: ReadonlyArray<S>): Map<S, Array<string>> => {
  const groups = new Map<string, Array<S>>()
  for (const skill of skills) {
    const key = skill.name.normalize("NFKC")
    groups.set(key, [...(groups.get(key) ?? []), skill])
  }
  const result = new Map<S, Array<string>>()
  for (const group of groups.values()) {
    if (group.length < 2) continue
    for (const skill of group)
      result.set(
        skill,
        group.filter((other) => other !== skill).map((other) => other.file),
      )
  }
  return result
}

export const duplicateName = (name: string, others: ReadonlyArray<string>, line?: number): Diagnostic =>
  diagnostic(
    "duplicate-name",
    `name '${name}' is also the name of ${others.join(", ")}; an agent asked for '${name}' gets only one of them. Rename one, or remove the copy.`,
    line,
  )

export class Validation extends Effect.Service<Validation>()("skills-mcp/Validation", {
  succeed: { checkSkill, nameProblems, isValidName } as const,
}) {}
