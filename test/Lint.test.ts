/**
 * `validate`'s engine over real temporary trees: the rules that need the disk (unreadable
 * SKILL.md, missing references, size, links out of a root), the ones over every skill at
 * once (duplicate names), --strict, and the human-readable report.
 */
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { lintLayer } from "../src/Live.js"
import type { LintReport } from "../src/report/Lint.js"
import { formatLintReport, Lint, LintReport as LintReportSchema } from "../src/report/Lint.js"
import type { SettingsShape } from "../src/Settings.js"
import { Settings } from "../src/Settings.js"
import { rawControls } from "./support/terminal.js"
import { skillMd, tempTree } from "./support/tree.js"

const lint = (roots: ReadonlyArray<string>, options: { strict?: boolean } & Partial<SettingsShape> = {}) => {
  const { strict = false, ...overrides } = options
  return Effect.flatMap(Lint, (linter) => linter.run({ strict })).pipe(
    Effect.provide(
      lintLayer(
        Settings.make({ roots: roots.map((root) => ({ path: root, explicit: true })), ...overrides }),
      ),
    ),
  )
}

const rulesById = (report: LintReport) =>
  Object.fromEntries(report.skills.map((skill) => [skill.id, skill.diagnostics.map((d) => d.rule)]))

describe("Lint", () => {
  it.scoped("checks every skill, the disk rules included, and counts per rule", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({
        "good/SKILL.md": skillMd("good", "Fine", "# Good\n\nSee [the guide](references/guide.md).\n"),
        "good/references/guide.md": "# Guide\n",
        "refs/SKILL.md": skillMd("refs", "d", "# Refs\n\nRun `scripts/missing.py`.\n"),
        "outside/SKILL.md": skillMd(
          "outside",
          "d",
          "# Outside\n\nSee [the shared guide](../good/references/guide.md); name yours e.g. `references/topic.md`.\n",
        ),
        "big/SKILL.md": skillMd("big", "d"),
        "huge/SKILL.md": skillMd("huge", "d", `# Huge\n${"x".repeat(3000)}\n`),
        "long/SKILL.md": skillMd("long", "d", "x\n".repeat(600)),
        "Human/SKILL.md": skillMd("Human Name", "d"),
        "broken/SKILL.md": "---\nname: broken\n",
      })
      for (let i = 0; i < 513; i++) yield* Effect.promise(() => fs.writeFile(`${root}/big/f${i}.txt`, "x"))
      const report = yield* lint([root], { maxFileBytes: 2048 })
      expect(rulesById(report)).toEqual({
        Human: ["name-characters", "name-matches-folder"],
        big: ["skill-too-large"],
        broken: ["frontmatter-unclosed"],
        good: [],
        huge: ["skill-unreadable"],
        long: ["skill-md-length"],
        outside: ["reference-outside"],
        refs: ["reference-missing"],
      })
      expect(report.summary).toEqual({
        skills: 8,
        errors: 4,
        warnings: 4,
        skillsWithErrors: 3,
        skillsWithWarnings: 4,
        rules: {
          "frontmatter-unclosed": 1,
          "name-characters": 1,
          "name-matches-folder": 1,
          "reference-missing": 1,
          "reference-outside": 1,
          "skill-md-length": 1,
          "skill-too-large": 1,
          "skill-unreadable": 1,
        },
      })
      expect(report.ok).toBe(false)
      const refs = report.skills.find((skill) => skill.id === "refs")?.diagnostics[0]
      expect(refs).toMatchObject({ file: `${root}/refs/SKILL.md`, line: 7, severity: "warning" })
      const big = report.skills.find((skill) => skill.id === "big")?.diagnostics[0]
      expect(big).toMatchObject({ file: `${root}/big` })
      expect(big?.message).toContain("514 files")
      expect(report.skills.find((skill) => skill.id === "huge")?.diagnostics[0]?.message).toContain(
        "over the 2048-byte limit",
      )
      // The document is what --json prints: it round-trips through its schema.
      const encoded = yield* Schema.encode(LintReportSchema)(report)
      expect(Schema.decodeUnknownSync(LintReportSchema)(JSON.parse(JSON.stringify(encoded)))).toEqual(report)
    }),
  )

  it.scoped("lists a skill's problems in the order of its lines", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({
        "order/SKILL.md": skillMd(
          "order",
          "d",
          "# Order\n\nRun `scripts/missing.py`.\nSee [shared](../other/guide.md).\n",
        ),
        "other/guide.md": "# Guide\n",
      })
      const report = yield* lint([root])
      const order = report.skills.find((skill) => skill.id === "order")
      expect(order?.diagnostics.map((d) => [d.line, d.rule])).toEqual([
        [7, "reference-missing"],
        [8, "reference-outside"],
      ])
    }),
  )

  it.scoped("warns about one name in two roots, naming both paths, and about links out of a root", () =>
    Effect.gen(function* () {
      const outside = yield* tempTree({ "elsewhere/SKILL.md": skillMd("elsewhere", "d") })
      const first = yield* tempTree({
        "pdf/SKILL.md": skillMd("pdf", "First"),
        escape: { symlink: `${outside}/elsewhere` },
      })
      const second = yield* tempTree({ "group/pdf/SKILL.md": skillMd("pdf", "Second") })
      const report = yield* lint([first, second])
      expect(report.skills.map((skill) => [skill.file, skill.diagnostics.map((d) => d.message)])).toEqual([
        [`${first}/pdf/SKILL.md`, [expect.stringContaining(`${second}/group/pdf/SKILL.md`)]],
        [`${second}/group/pdf/SKILL.md`, [expect.stringContaining(`${first}/pdf/SKILL.md`)]],
      ])
      expect(report.skills[0]?.diagnostics[0]).toMatchObject({ rule: "duplicate-name", line: 2 })
      expect(report.notices).toEqual([
        expect.objectContaining({ rule: "path-skipped", severity: "warning", file: `${first}/escape` }),
      ])
      expect(report.ok).toBe(true)
    }),
  )

  it.scoped("validates a folder that is itself a skill alone, and --strict makes warnings errors", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({
        "pdf/SKILL.md": skillMd("pdf", "d", "# PDF\n", "requires: [x]\n"),
        "pdf/nested/SKILL.md": skillMd("nested", "d"),
        "other/SKILL.md": skillMd("other", "d"),
      })
      const lenient = yield* lint([path.join(root, "pdf")])
      expect(lenient.skills.map((skill) => skill.id)).toEqual(["pdf"])
      expect(lenient.summary).toMatchObject({ errors: 0, warnings: 1 })
      expect(lenient.ok).toBe(true)
      const strict = yield* lint([path.join(root, "pdf")], { strict: true })
      expect(strict.skills[0]?.diagnostics[0]).toMatchObject({ rule: "unknown-field", severity: "error" })
      expect(strict.summary).toMatchObject({ errors: 1, warnings: 0 })
      expect(strict.ok).toBe(false)
      expect(strict.strict).toBe(true)
    }),
  )

  it.scoped(
    "reports a link to a skill folder checked out as a one-line file where the folder should be",
    () =>
      Effect.gen(function* () {
        const root = yield* tempTree({
          "shared/pdf/SKILL.md": skillMd("pdf", "d"),
          "skills/pdf": "../shared/pdf",
          "skills/notes.txt": "see shared/pdf",
          "skills/dangling": "../shared/missing",
        })
        const report = yield* lint([path.join(root, "skills")])
        expect(report.notices).toEqual([
          expect.objectContaining({
            rule: "symlink-artefact",
            severity: "error",
            file: `${root}/skills/pdf`,
          }),
          // A root that holds no skill is reported too (rule root-empty).
          expect.objectContaining({ rule: "root-empty", severity: "warning", file: `${root}/skills` }),
        ])
        expect(report.notices[0]?.message).toContain("'pdf' holds only the line '../shared/pdf'")
        expect(report.summary).toMatchObject({ skills: 0, errors: 1 })
      }),
  )

  it.scoped("finds nothing in an empty folder, and says so", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({ "notes.md": "# not a skill\n" })
      const report = yield* lint([root])
      expect(report.skills).toEqual([])
      expect(report.ok).toBe(false)
      expect(formatLintReport(report, root)).toBe(
        [
          "Skills folders:",
          `  ${root}: warning root-empty: no skill found in this skills folder (a skill is a folder holding a SKILL.md, at most 4 levels down)`,
          "",
          `No skills found in ${root}.`,
          "",
        ].join("\n"),
      )
    }),
  )
})

describe("formatLintReport", () => {
  it.scoped("shows control characters of folder names and names escaped: no forged line", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({
        "clear\u001b[2J/SKILL.md": skillMd("clear", "d"),
        "ok\n  forged: error x/SKILL.md": skillMd("ok", "d"),
        "named/SKILL.md": skillMd('"named\\e[8m\\nOK: all clean"', "d"),
      })
      const text = formatLintReport(yield* lint([root]), root)
      expect(rawControls(text)).toEqual([])
      expect(text).toContain("clear\\x1b[2J (clear): ")
      expect(text).toContain("ok\\n  forged: error x (ok): ")
      expect(text).toContain("named (named\\x1b[8m\\nOK: all clean): named")
      // Each skill's title, then its diagnostics (indented), then the summary: nothing else.
      const lines = text.split("\n").filter((line) => line !== "")
      expect(lines.filter((line) => !line.startsWith("  ")).map((line) => line.split(" ")[0])).toEqual([
        "clear\\x1b[2J",
        "named",
        "ok\\n",
        "FAILED:",
      ])
    }),
  )

  it.scoped("reports a root that holds no skill, with the dot-folders that do", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({ ".curated/a/SKILL.md": skillMd("a", "d") })
      const report = yield* lint([root])
      expect(report.notices).toEqual([
        {
          rule: "root-empty",
          severity: "warning",
          file: root,
          message: expect.stringContaining("skills are in .curated (1): pass --include-dot-folders"),
        },
      ])
      expect(formatLintReport(report, path.dirname(root))).toContain(": warning root-empty: no skill found")
      const included = yield* lint([root], { includeDotFolders: true })
      expect([included.ok, included.summary.skills, included.notices]).toEqual([true, 1, []])
    }),
  )

  it("groups problems by skill with file:line, leaves clean skills out, and ends with a summary", () => {
    const report: LintReport = {
      version: 1,
      ok: false,
      strict: false,
      roots: ["/work/skills"],
      summary: { skills: 2, errors: 1, warnings: 1, skillsWithErrors: 1, skillsWithWarnings: 0, rules: {} },
      skills: [
        {
          id: "release-notes",
          name: "Release Notes",
          dir: "/work/skills/release-notes",
          file: "/work/skills/release-notes/SKILL.md",
          root: "/work/skills",
          diagnostics: [
            {
              rule: "name-characters",
              severity: "error",
              message: "name 'Release Notes' ...",
              file: "/work/skills/release-notes/SKILL.md",
              line: 2,
            },
            {
              rule: "skill-too-large",
              severity: "warning",
              message: "too big",
              file: "/work/skills/release-notes",
            },
          ],
        },
        {
          id: "pdf",
          name: "pdf",
          dir: "/work/skills/pdf",
          file: "/work/skills/pdf/SKILL.md",
          root: "/work/skills",
          diagnostics: [],
        },
      ],
      notices: [],
    }
    expect(formatLintReport(report, "/work")).toBe(
      [
        "release-notes (Release Notes): skills/release-notes",
        "  skills/release-notes/SKILL.md:2: error name-characters: name 'Release Notes' ...",
        "  skills/release-notes: warning skill-too-large: too big",
        "",
        "FAILED: 2 skills checked in skills: 1 error, 1 warning (1 clean).",
        "",
      ].join("\n"),
    )
    expect(formatLintReport(report, "/elsewhere")).toContain("/work/skills/release-notes/SKILL.md:2: error")
  })
})
