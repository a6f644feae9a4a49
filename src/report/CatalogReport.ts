/**
 * What the catalog serves and what it does not, with the reasons: the document behind
 * `skills-mcp list` and the `skill://diagnostics` resource. Built from a catalog snapshot
 * only (no disk access), so both show exactly what the server sees.
 */
import * as path from "node:path"
import type { Skill, SkillCommit, Snapshot } from "../catalog/Snapshot.js"
import type { WithheldFile } from "../files/Manifests.js"
import { forTerminal } from "../Terminal.js"

/** A path relative to `cwd` when it is below it, else absolute; anything else as it is. */
export const displayPath = (target: string, cwd: string): string => {
  // Not a path: a git source (`URL#REF:SUBDIR`), shown as it is.
  if (!path.isAbsolute(target)) return target
  const relative = path.relative(cwd, target)
  return relative !== "" && !relative.startsWith("..") && !path.isAbsolute(relative) ? relative : target
}

export interface ServedEntry {
  readonly id: string
  readonly name: string
  /** The URI the server reads the skill's SKILL.md at (none when no skill:// URI leads to it). */
  readonly uri?: string
  /** True when the skill is listed over the MCP Skills extension (skills/list). */
  readonly published: boolean
  readonly root: string
  readonly file: string
  /** From a git source: the source (`URL#REF:SUBDIR`) and the commit the skill is served from. */
  readonly git?: SkillCommit
}

export interface CatalogReport {
  readonly served: ReadonlyArray<ServedEntry>
  /** SKILL.md files the server cannot serve: the validate rule and the reason. */
  readonly skipped: ReadonlyArray<{
    readonly id: string
    readonly file: string
    readonly root: string
    readonly rule: string
    readonly reason: string
    readonly line?: number
  }>
  /** Skills hidden by an earlier skill with the same id (the first root wins). */
  readonly shadowed: ReadonlyArray<{
    readonly id: string
    readonly file: string
    readonly shadowedBy: string
  }>
  /** Served skills left out of the MCP Skills extension's skills/list (still served by the tools). */
  readonly unpublished: ReadonlyArray<{ readonly id: string; readonly file: string; readonly reason: string }>
  /**
   * Folders discovery could not follow, roots that hold no skill (kind "empty-root", with
   * the dot-folders below them that hold skills), and git sources' problems (kind "source",
   * path `URL#REF:SUBDIR`: a failed fetch or a refused commit, the commit still served).
   */
  readonly notices: ReadonlyArray<{
    readonly path: string
    readonly reason: string
    readonly kind?: "empty-root" | "source"
    readonly dotFolders?: ReadonlyArray<string>
  }>
}

/**
 * What a snapshot does not serve, or not over the Skills extension, with the reasons. `leftOut`:
 * skills (by folder) the extension cannot serve for their content, as SkillFiles found (the
 * catalog itself checks only names and URIs).
 */
const problemsOf = (
  snapshot: Snapshot,
  leftOut: ReadonlyMap<string, string>,
): Omit<CatalogReport, "served"> => {
  const contentLeftOut = snapshot.published.flatMap((skill) => {
    const reason = leftOut.get(skill.dir)
    return reason === undefined ? [] : [{ id: skill.id, file: skill.file, reason }]
  })
  return {
    skipped: snapshot.skipped.map((skip) => ({
      id: skip.id,
      file: skip.file,
      root: skip.root,
      rule: skip.rule,
      reason: skip.reason,
      ...(skip.line === undefined ? {} : { line: skip.line }),
    })),
    shadowed: snapshot.shadowed.map(({ id, file, shadowedBy }) => ({ id, file, shadowedBy })),
    unpublished: [
      ...snapshot.unpublished.map(({ id, file, reason }) => ({ id, file, reason })),
      ...contentLeftOut,
    ],
    notices: snapshot.notices.map(({ path, reason, kind, dotFolders }) => ({
      path,
      reason,
      ...(kind === undefined ? {} : { kind }),
      ...(dotFolders === undefined ? {} : { dotFolders }),
    })),
  }
}

/** The report of a snapshot: every served skill with its URI, then `problemsOf`. */
export const catalogReport = (
  snapshot: Snapshot,
  uriOf: (skill: Skill) => string | undefined,
  leftOut: ReadonlyMap<string, string> = new Map(),
): CatalogReport => {
  const problems = problemsOf(snapshot, leftOut)
  const unpublished = new Set(problems.unpublished.map((entry) => entry.file))
  const listed = new Set(snapshot.published)
  return {
    served: snapshot.skills.map((skill) => {
      const uri = uriOf(skill)
      return {
        id: skill.id,
        name: skill.name,
        ...(uri === undefined ? {} : { uri }),
        published: listed.has(skill) && !unpublished.has(skill.file),
        root: skill.root,
        file: skill.file,
        ...(skill.git === undefined ? {} : { git: skill.git }),
      }
    }),
    ...problems,
  }
}

const DIAGNOSTICS_HINT =
  "Run `skills-mcp validate` on the skills folders for every rule of the Agent Skills specification, with line numbers and how to fix each problem."

/**
 * The `skill://diagnostics` document: counts, then every skipped, shadowed, unpublished and
 * warned skill with its reasons (the frontmatter rules the server checks on every skill).
 */
export const diagnosticsDocument = (
  snapshot: Snapshot,
  leftOut: ReadonlyMap<string, string> = new Map(),
  withheld: ReadonlyMap<string, ReadonlyArray<WithheldFile>> = new Map(),
) => {
  const report = problemsOf(snapshot, leftOut)
  const withheldFiles = snapshot.skills.flatMap((skill) =>
    (withheld.get(skill.dir) ?? []).map((file) => ({ id: skill.id, path: file.path, reason: file.reason })),
  )
  const warned = snapshot.skills
    .filter((skill) => skill.diagnostics.length > 0)
    .map((skill) => ({
      id: skill.id,
      name: skill.name,
      file: skill.file,
      diagnostics: skill.diagnostics.map(({ rule, severity, message }) => ({ rule, severity, message })),
    }))
  return {
    version: snapshot.version,
    counts: {
      served: snapshot.skills.length,
      skipped: report.skipped.length,
      shadowed: report.shadowed.length,
      unpublished: report.unpublished.length,
      warned: warned.length,
      withheld: withheldFiles.length,
    },
    skipped: report.skipped,
    shadowed: report.shadowed,
    unpublished: report.unpublished,
    warned,
    /** Files of served skills that no manifest lists (found once a skill is listed or fetched). */
    withheld: withheldFiles,
    /** Skills served from git sources: the source and the commit each is served from. */
    commits: snapshot.skills.flatMap((skill) =>
      skill.git === undefined ? [] : [{ id: skill.id, source: skill.git.source, commit: skill.git.commit }],
    ),
    notices: report.notices,
    hint: DIAGNOSTICS_HINT,
  }
}

/**
 * For the list_skills text: how many skill folders the server does not serve and where the
 * reasons are; empty when it serves every one.
 */
export const notServedNote = (snapshot: Snapshot): string => {
  const skipped = snapshot.skipped.length
  const shadowed = snapshot.shadowed.length
  if (skipped + shadowed === 0) return ""
  const parts = [
    ...(skipped > 0 ? [`${skipped} skipped (unreadable or malformed SKILL.md)`] : []),
    ...(shadowed > 0 ? [`${shadowed} shadowed by a skill with the same id`] : []),
  ]
  return `${plural(skipped + shadowed, "skill folder")} could not be served: ${parts.join(", ")}. The reasons are in the resource skill://diagnostics; run 'skills-mcp validate' on the skills folders for every check.`
}

// ---------------------------------------------------------------------------------------
// `skills-mcp list`, for people

/** Aligned columns; every cell made safe for a terminal first (names and paths come from the skills). */
const table = (cells: ReadonlyArray<ReadonlyArray<string>>): Array<string> => {
  const rows = cells.map((row) => row.map(forTerminal))
  const widths: Array<number> = []
  for (const row of rows)
    row.forEach((cell, index) => {
      widths[index] = Math.max(widths[index] ?? 0, cell.length)
    })
  return rows.map((row) =>
    row
      .map((cell, index) => (index === row.length - 1 ? cell : cell.padEnd(widths[index] ?? 0)))
      .join("  ")
      .trimEnd(),
  )
}

export const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? "" : "s"}`

/** One line per served skill (id, name, URI, root), then one per skill not served, then a summary. */
export const formatCatalogReport = (report: CatalogReport, cwd: string): string => {
  const shown = (target: string) => displayPath(target, cwd)
  const lines: Array<string> = []
  if (report.served.length > 0) {
    lines.push(
      ...table([
        ["ID", "NAME", "URI", "ROOT"],
        ...report.served.map((skill) => [
          skill.id,
          skill.name,
          skill.uri ?? "-",
          skill.git === undefined
            ? shown(skill.root)
            : `${skill.git.source} @ ${skill.git.commit.slice(0, 12)}`,
        ]),
      ]),
    )
  }
  const problems = table([
    ...report.skipped.map((skip) => [
      "skipped",
      skip.id,
      `${shown(skip.file)}${skip.line === undefined ? "" : `:${skip.line}`}`,
      `${skip.rule}: ${skip.reason}`,
    ]),
    ...report.shadowed.map((shadow) => [
      "shadowed",
      shadow.id,
      shown(shadow.file),
      `hidden by ${shown(shadow.shadowedBy)} (the first root wins)`,
    ]),
    ...report.unpublished.map((left) => [
      "not in skills/list",
      left.id,
      shown(left.file),
      `${left.reason} (still served by the tools)`,
    ]),
    ...report.notices.map((notice) =>
      notice.kind === "source"
        ? ["git source", "-", notice.path, notice.reason]
        : [
            notice.kind === "empty-root" ? "no skills" : "not followed",
            notice.kind === "empty-root" ? "-" : path.basename(notice.path),
            shown(notice.path),
            notice.reason,
          ],
    ),
  ])
  if (problems.length > 0) lines.push("", ...problems)
  lines.push(
    "",
    `${plural(report.served.length, "skill")} served, ${report.skipped.length} skipped, ${report.shadowed.length} shadowed${
      report.unpublished.length > 0
        ? `, ${report.unpublished.length} not listed over the MCP Skills extension`
        : ""
    }.${report.skipped.length > 0 ? " Run 'skills-mcp validate' for details and fixes." : ""}`,
  )
  return `${lines.join("\n").replace(/^\n/, "")}\n`
}
