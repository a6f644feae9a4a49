/**
 * Lint: `skills-mcp validate`, the strict view of the skills the server would find. Same roots,
 * discovery, parser and rules (src/skills/) as the server; on top, the rules that need the disk
 * or every skill at once: SKILL.md's length, files it refers to, the skill's size, duplicate
 * names. Unlike the catalog, nothing is skipped: every SKILL.md found is checked and reported,
 * shadowed ones included.
 */
import * as path from "node:path"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { MAX_SKILL_BYTES, MAX_SKILL_FILES } from "../files/Manifests.js"
import { SkillFiles } from "../files/SkillFiles.js"
import { Fs } from "../platform/Fs.js"
import { isInside } from "../platform/Paths.js"
import { Settings } from "../Settings.js"
import type { Candidate } from "../skills/Discovery.js"
import { Discovery, nestedReason, SKILL_FILE } from "../skills/Discovery.js"
import {
  beginsWithFrontmatter,
  parseSkillText,
  splitFrontmatter,
  symlinkArtefactReason,
  symlinkTargetIn,
} from "../skills/Frontmatter.js"
import { fileReferences } from "../skills/References.js"
import type { Diagnostic, RuleId, SkillSize } from "../skills/Validation.js"
import {
  checkLength,
  checkSize,
  checkSkill,
  diagnostic,
  duplicateName,
  duplicateNames,
  fieldLines,
  frontmatterNotFirst,
  missingReference,
  outsideReference,
  RULE_IDS,
} from "../skills/Validation.js"
import { forTerminal } from "../Terminal.js"
import { displayPath, plural } from "./CatalogReport.js"

/** A link target is a short path; larger files are not looked at. */
const MAX_LINK_TARGET_BYTES = 1024

// ---------------------------------------------------------------------------------------
// The report (`validate --json` prints it; docs/CLI.md documents it)

export const LintDiagnostic = Schema.Struct({
  rule: Schema.Literal(...RULE_IDS),
  severity: Schema.Literal("error", "warning"),
  message: Schema.String,
  /** Absolute path of the file (or folder) the diagnostic is about. */
  file: Schema.String,
  line: Schema.optional(Schema.Int),
})
export type LintDiagnostic = typeof LintDiagnostic.Type

export const LintedSkill = Schema.Struct({
  /** The folder name. */
  id: Schema.String,
  /** Frontmatter `name`, when SKILL.md has a readable one. */
  name: Schema.optional(Schema.String),
  dir: Schema.String,
  file: Schema.String,
  root: Schema.String,
  diagnostics: Schema.Array(LintDiagnostic),
})
export type LintedSkill = typeof LintedSkill.Type

export const LintReport = Schema.Struct({
  version: Schema.Literal(1),
  /** True when skills were found and none has an error (with --strict: nor a warning). */
  ok: Schema.Boolean,
  strict: Schema.Boolean,
  roots: Schema.Array(Schema.String),
  summary: Schema.Struct({
    skills: Schema.Int,
    errors: Schema.Int,
    warnings: Schema.Int,
    skillsWithErrors: Schema.Int,
    skillsWithWarnings: Schema.Int,
    /** Diagnostics per rule id (rules that fired only). */
    rules: Schema.Record({ key: Schema.String, value: Schema.Int }),
  }),
  /** Every SKILL.md found, in discovery order (root order, then path order). */
  skills: Schema.Array(LintedSkill),
  /** Problems found while walking the roots, outside any skill. */
  notices: Schema.Array(LintDiagnostic),
})
export type LintReport = typeof LintReport.Type

// ---------------------------------------------------------------------------------------
// Checking one skill

interface Checked {
  readonly candidate: Candidate
  readonly name?: string
  readonly nameLine?: number
  readonly diagnostics: ReadonlyArray<LintDiagnostic>
}

const at =
  (file: string) =>
  (d: Diagnostic): LintDiagnostic =>
    d.line === undefined
      ? { rule: d.rule, severity: d.severity, message: d.message, file }
      : { rule: d.rule, severity: d.severity, message: d.message, file, line: d.line }

/** A diagnostic as `--strict` sees it: every warning an error. */
const strictly = (d: LintDiagnostic): LintDiagnostic => ({ ...d, severity: "error" })

/** Counts and the `ok` flag from the diagnostics. */
const summarise = (
  roots: ReadonlyArray<string>,
  skills: ReadonlyArray<LintedSkill>,
  notices: ReadonlyArray<LintDiagnostic>,
  strict: boolean,
): LintReport => {
  const shown = strict
    ? skills.map((skill) => ({ ...skill, diagnostics: skill.diagnostics.map(strictly) }))
    : skills
  const shownNotices = strict ? notices.map(strictly) : notices
  const all = [...shown.flatMap((skill) => skill.diagnostics), ...shownNotices]
  const rules: Record<string, number> = {}
  for (const d of all) rules[d.rule] = (rules[d.rule] ?? 0) + 1
  const errors = all.filter((d) => d.severity === "error").length
  return {
    version: 1,
    ok: errors === 0 && shown.length > 0,
    strict,
    roots,
    summary: {
      skills: shown.length,
      errors,
      warnings: all.length - errors,
      skillsWithErrors: shown.filter((skill) => skill.diagnostics.some((d) => d.severity === "error")).length,
      skillsWithWarnings: shown.filter(
        (skill) => skill.diagnostics.length > 0 && skill.diagnostics.every((d) => d.severity === "warning"),
      ).length,
      rules,
    },
    skills: shown,
    notices: shownNotices,
  }
}

export class Lint extends Effect.Service<Lint>()("skills-mcp/Lint", {
  effect: Effect.gen(function* () {
    const settings = yield* Settings
    const discovery = yield* Discovery
    const files = yield* SkillFiles
    const fs = yield* Fs
    const statOrNull = (target: string) => Effect.promise(async () => fs.async.stat(target))
    const readDirOrNull = (dir: string) => Effect.promise(async () => fs.async.readdir(dir))
    /** The text of a file of at most MAX_LINK_TARGET_BYTES, or null when it cannot be read. */
    const smallTextOrNull = (file: string) =>
      Effect.promise(async () => {
        try {
          const fd = await fs.async.open(file)
          try {
            const buffer = Buffer.alloc(MAX_LINK_TARGET_BYTES)
            const length = await fs.async.read(fd, buffer, 0, buffer.length, 0)
            return buffer.toString("utf8", 0, length)
          } finally {
            await fs.async.close(fd)
          }
        } catch {
          return null
        }
      })

    /**
     * The skill's file count and bytes, from its listing (at most 2,000 entries: `partial` past
     * that). Close to, not the same as, the manifest's count (files/Manifests.ts), which leaves
     * out files no URI reads back and stops at 512 files.
     */
    const sizeOf = (candidate: Candidate) =>
      Effect.map(
        Effect.option(files.list({ id: candidate.id, dir: candidate.dir, rootReal: candidate.rootReal }, "")),
        (listing) => {
          if (listing._tag === "None") return undefined
          let count = 0
          let bytes = 0
          let oversized: SkillSize["oversized"]
          for (const entry of listing.value.entries) {
            if (entry.type !== "file") continue
            count++
            bytes += entry.size ?? 0
            if (oversized === undefined && (entry.size ?? 0) > settings.maxFileBytes)
              oversized = { path: entry.path, size: entry.size ?? 0, limit: settings.maxFileBytes }
          }
          const size: SkillSize = {
            files: count,
            bytes,
            partial: listing.value.truncated,
            ...(oversized === undefined ? {} : { oversized }),
          }
          return size
        },
      )

    const checkOne = (candidate: Candidate) =>
      Effect.gen(function* () {
        const skill = { id: candidate.id, dir: candidate.dir, rootReal: candidate.rootReal }
        const where = at(candidate.file)
        const read = yield* Effect.either(files.readBytes(skill, SKILL_FILE))
        if (Either.isLeft(read)) {
          const checked: Checked = {
            candidate,
            diagnostics: [where(diagnostic("skill-unreadable", read.left.message))],
          }
          return checked
        }
        const text = Buffer.from(read.right.bytes).toString("utf8")
        const split = splitFrontmatter(text)
        const lines =
          split._tag === "Split"
            ? fieldLines(split.value.yaml, split.value.startLine)
            : new Map<string, number>()
        const parsed = parseSkillText(candidate.file, text)
        if (Either.isLeft(parsed)) {
          const error = parsed.left
          // Every rule a SKILL.md that cannot be served fails (Errors.ts) is a rule of the table.
          const rule: RuleId = error.rule
          // A missing or invalid field: its line, else the frontmatter's first line.
          const field =
            rule === "name-required" ? "name" : rule === "description-required" ? "description" : ""
          const line =
            error.line ??
            lines.get(field) ??
            (split._tag === "Split" && field !== "" ? split.value.startLine : undefined)
          const checked: Checked = { candidate, diagnostics: [where(diagnostic(rule, error.reason, line))] }
          return checked
        }
        const diagnostics: Array<Diagnostic> = checkSkill({
          folder: candidate.id,
          frontmatter: parsed.right,
          lines,
        })
        if (!beginsWithFrontmatter(read.right.bytes)) diagnostics.push(frontmatterNotFirst())
        const length = checkLength(text)
        if (length !== undefined) diagnostics.push(length)
        const references = fileReferences(parsed.right.body, parsed.right.endLine + 1)
        const skillDir = path.resolve(candidate.dir)
        const within = (reference: (typeof references)[number]) =>
          isInside(skillDir, path.resolve(skillDir, reference.path))
        const inside = references.filter(within)
        const outside = references.filter((reference) => !within(reference))
        diagnostics.push(...outside.map(outsideReference))
        const missing = yield* Effect.filter(
          inside,
          (reference) =>
            Effect.map(statOrNull(path.resolve(candidate.dir, reference.path)), (info) => info === null),
          { concurrency: 8 },
        )
        diagnostics.push(...missing.map(missingReference))
        const sized = yield* sizeOf(candidate)
        const size =
          sized === undefined
            ? undefined
            : checkSize(sized, { files: MAX_SKILL_FILES, bytes: MAX_SKILL_BYTES })
        const result: Array<LintDiagnostic> = diagnostics.map(where)
        if (size !== undefined) result.push(at(candidate.dir)(size))
        const nameLine = lines.get("name")
        const checked: Checked = {
          candidate,
          name: parsed.right.fields.name,
          ...(nameLine === undefined ? {} : { nameLine }),
          diagnostics: result,
        }
        return checked
      })

    /**
     * Files in the roots and group folders that stand where a skill folder should: a link to
     * a skill folder that Git for Windows checked out as a one-line text file.
     */
    const linkArtefacts = (folders: ReadonlyArray<string>) =>
      Effect.map(
        Effect.forEach(
          folders,
          (folder) =>
            Effect.flatMap(readDirOrNull(folder), (entries) =>
              Effect.forEach(
                (entries ?? []).filter((entry) => entry.isFile() && entry.name !== SKILL_FILE),
                (entry) =>
                  Effect.gen(function* () {
                    const file = path.join(folder, entry.name)
                    if (((yield* statOrNull(file))?.size ?? Number.POSITIVE_INFINITY) > MAX_LINK_TARGET_BYTES)
                      return []
                    const text = yield* smallTextOrNull(file)
                    const target = text === null ? undefined : symlinkTargetIn(text)
                    if (target === undefined) return []
                    const skill = path.resolve(folder, target.replaceAll("\\", "/"), SKILL_FILE)
                    if ((yield* statOrNull(skill))?.isFile() !== true) return []
                    return [
                      at(file)(
                        diagnostic("symlink-artefact", symlinkArtefactReason(target, `'${entry.name}'`)),
                      ),
                    ]
                  }),
                { concurrency: 8 },
              ),
            ),
          { concurrency: 4 },
        ),
        (found) => found.flat(2),
      )

    /** Checks every skill under the roots. */
    const run = Effect.fn("Lint.run")(function* (options: { readonly strict: boolean }) {
      const found = yield* discovery.discover()
      const checked = yield* Effect.forEach(found.candidates, checkOne, { concurrency: 8 })
      const named = checked.flatMap((entry) =>
        entry.name === undefined ? [] : [{ entry, name: entry.name, file: entry.candidate.file }],
      )
      const duplicates = duplicateNames(named)
      const othersOf = new Map([...duplicates].map(([key, others]) => [key.entry, others]))
      const skills = checked.map((entry): LintedSkill => {
        const others = othersOf.get(entry)
        const extra =
          others === undefined || entry.name === undefined
            ? []
            : [at(entry.candidate.file)(duplicateName(entry.name, others, entry.nameLine))]
        return {
          id: entry.candidate.id,
          ...(entry.name === undefined ? {} : { name: entry.name }),
          dir: entry.candidate.dir,
          file: entry.candidate.file,
          root: entry.candidate.root.path,
          diagnostics: byLine([...entry.diagnostics, ...extra]),
        }
      })
      // Folders inside other skills' folders: reported, not checked (they are not skills).
      const nested = found.nested.map(
        (entry): LintedSkill => ({
          id: entry.candidate.id,
          dir: entry.candidate.dir,
          file: entry.candidate.file,
          root: entry.candidate.root.path,
          diagnostics: [at(entry.candidate.file)(diagnostic("skill-nested", nestedReason(entry)))],
        }),
      )
      const notices = [
        ...(yield* linkArtefacts(found.folders)),
        ...found.notices.map((notice) =>
          at(notice.path)(
            diagnostic(notice.kind === "empty-root" ? "root-empty" : "path-skipped", notice.reason),
          ),
        ),
      ]
      return summarise(
        settings.roots.map((root) => root.git?.display ?? root.path),
        [...skills, ...nested],
        notices,
        options.strict,
      )
    })

    return { run } as const
  }),
}) {}

// ---------------------------------------------------------------------------------------
// Human-readable output

/** Every line is made safe for a terminal (src/Terminal.ts): names, paths and messages come from the skills. */
const diagnosticLine = (d: LintDiagnostic, cwd: string) =>
  forTerminal(
    `  ${displayPath(d.file, cwd)}${d.line === undefined ? "" : `:${d.line}`}: ${d.severity} ${d.rule}: ${d.message}`,
  )

/** In the order of the file: by line, problems without a line (the whole skill) last. */
const byLine = (diagnostics: ReadonlyArray<LintDiagnostic>): Array<LintDiagnostic> =>
  [...diagnostics].sort((a, b) => (a.line ?? Number.MAX_SAFE_INTEGER) - (b.line ?? Number.MAX_SAFE_INTEGER))

/** The report for people: problems grouped by skill, then one summary line. */
export const formatLintReport = (report: LintReport, cwd: string): string => {
  const blocks: Array<string> = []
  for (const skill of report.skills) {
    if (skill.diagnostics.length === 0) continue
    const title =
      skill.name === undefined || skill.name === skill.id ? skill.id : `${skill.id} (${skill.name})`
    blocks.push(
      [
        forTerminal(`${title}: ${displayPath(skill.dir, cwd)}`),
        ...skill.diagnostics.map((d) => diagnosticLine(d, cwd)),
      ].join("\n"),
    )
  }
  if (report.notices.length > 0)
    blocks.push(["Skills folders:", ...report.notices.map((d) => diagnosticLine(d, cwd))].join("\n"))
  const { skills, errors, warnings, skillsWithErrors, skillsWithWarnings } = report.summary
  const clean = skills - skillsWithErrors - skillsWithWarnings
  const where = forTerminal(report.roots.map((root) => displayPath(root, cwd)).join(", "))
  const summary =
    skills === 0
      ? `No skills found in ${where || "any skills folder"}.`
      : `${report.ok ? "OK" : "FAILED"}: ${plural(skills, "skill")} checked in ${where}: ${plural(errors, "error")}, ${plural(warnings, "warning")} (${clean} clean).${report.strict ? " --strict: warnings count as errors." : ""}`
  return `${[...blocks, summary].join("\n\n")}\n`
}
