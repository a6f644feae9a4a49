/**
 * Validation: the Agent Skills rules (agentskills.io/specification) as pure functions from a
 * parsed skill to diagnostics. The server only logs them; `skills-mcp validate` enforces them.
 */
import { Effect } from "effect"
import type { ParsedFrontmatter } from "./Frontmatter.js"

export type Severity = "error" | "warning"

export interface Diagnostic {
  /** Stable rule id, e.g. `name-format`. */
  readonly rule: string
  readonly severity: Severity
  /** What is wrong and how to fix it. */
  readonly message: string
  readonly line?: number
}

export interface SkillSubject {
  /** The skill's folder name. */
  readonly folder: string
  readonly frontmatter: ParsedFrontmatter
}

const MAX_NAME = 64
const MAX_DESCRIPTION = 1024
const MAX_COMPATIBILITY = 500

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

/** The naming rules: 1..64 characters of a-z, 0-9 and single hyphens, no hyphen at either end. */
export const nameProblems = (name: string): Array<string> => {
  const problems: Array<string> = []
  const length = codePoints(name)
  if (length < 1 || length > MAX_NAME)
    problems.push(`must be 1-${MAX_NAME} characters long (it has ${length})`)
  if (!/^[a-z0-9-]*$/.test(name)) problems.push("may contain only lowercase letters a-z, digits and hyphens")
  if (name.startsWith("-") || name.endsWith("-")) problems.push("must not start or end with a hyphen")
  if (name.includes("--")) problems.push("must not contain consecutive hyphens")
  return problems
}

export const isValidName = (name: string): boolean => nameProblems(name).length === 0

/** Every rule that applies to one skill's frontmatter. */
export const checkSkill = ({ folder, frontmatter }: SkillSubject): Array<Diagnostic> => {
  const diagnostics: Array<Diagnostic> = []
  const { raw, fields } = frontmatter
  const report = (rule: string, severity: Severity, message: string) =>
    diagnostics.push({ rule, severity, message })

  const problems = nameProblems(fields.name)
  if (problems.length > 0) {
    report(
      "name-format",
      "error",
      `name '${fields.name}' ${problems.join("; ")}. Use a name like 'pdf-processing'.`,
    )
  }
  if (fields.name !== folder) {
    report(
      "name-matches-folder",
      "error",
      `name '${fields.name}' differs from its folder '${folder}'; rename one so they are equal.`,
    )
  }
  const descriptionLength = codePoints(fields.description)
  if (descriptionLength > MAX_DESCRIPTION) {
    report(
      "description-length",
      "error",
      `description is ${descriptionLength} characters; the limit is ${MAX_DESCRIPTION}. Shorten it and move details into the body.`,
    )
  }
  if (raw.compatibility !== undefined) {
    if (typeof raw.compatibility !== "string") {
      report(
        "compatibility-type",
        "error",
        `compatibility must be a string, not ${typeName(raw.compatibility)}.`,
      )
    } else if (codePoints(raw.compatibility) > MAX_COMPATIBILITY) {
      report(
        "compatibility-length",
        "error",
        `compatibility is ${codePoints(raw.compatibility)} characters; the limit is ${MAX_COMPATIBILITY}.`,
      )
    }
  }
  if (raw.metadata !== undefined && fields.metadata === undefined) {
    report(
      "metadata-type",
      "error",
      'metadata must be a map of string keys to string values (quote numbers and booleans: version: "1.0").',
    )
  }
  if (raw.license !== undefined && fields.license === undefined) {
    report("license-type", "error", `license must be a string, not ${typeName(raw.license)}.`)
  }
  if (raw["allowed-tools"] !== undefined && fields.allowedTools === undefined) {
    report(
      "allowed-tools-type",
      "error",
      `allowed-tools must be a space-separated string, not ${typeName(raw["allowed-tools"])}.`,
    )
  }
  return diagnostics
}

export class Validation extends Effect.Service<Validation>()("skills-mcp/Validation", {
  succeed: { checkSkill, nameProblems, isValidName } as const,
}) {}
