/**
 * What `skills-mcp list` and `skill://diagnostics` say about a catalog: served skills with
 * their URIs, and every skipped, shadowed, unpublished and warned skill with the reason.
 */
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { Catalog } from "../src/catalog/Catalog.js"
import { skillResourceUri } from "../src/mcp/resources.js"
import {
  catalogReport,
  diagnosticsDocument,
  displayPath,
  formatCatalogReport,
  notServedNote,
} from "../src/report/CatalogReport.js"
import { servicesFor } from "./support/layers.js"
import { rawControls } from "./support/terminal.js"
import { skillMd, tempTree } from "./support/tree.js"

const snapshotOf = (roots: ReadonlyArray<string>) =>
  Effect.flatMap(Catalog, (catalog) => catalog.snapshot).pipe(Effect.provide(servicesFor(roots)))

describe("catalogReport", () => {
  it.scoped("lists served skills with their URIs and every skill left out with the reason", () =>
    Effect.gen(function* () {
      const first = yield* tempTree({
        "pdf/SKILL.md": skillMd("pdf", "PDFs", "# PDF\n", "requires: [x]\n"),
        "notes/SKILL.md": skillMd("Release Notes", "Notes"),
        "broken/SKILL.md": "---\nname: broken\ndescription: [unclosed\n---\n",
        "link/SKILL.md": "../pdf/SKILL.md",
      })
      const second = yield* tempTree({ "pdf/SKILL.md": skillMd("pdf", "Another") })
      const snapshot = yield* snapshotOf([first, second])
      const report = catalogReport(snapshot, (skill) => skillResourceUri(snapshot, skill))
      expect(report.served).toEqual([
        {
          id: "notes",
          name: "Release Notes",
          uri: "skill://notes",
          published: false,
          root: first,
          file: `${first}/notes/SKILL.md`,
        },
        {
          id: "pdf",
          name: "pdf",
          uri: "skill://pdf/SKILL.md",
          published: true,
          root: first,
          file: `${first}/pdf/SKILL.md`,
        },
      ])
      expect(report.skipped.map((skip) => [skip.id, skip.rule])).toEqual([
        ["broken", "yaml-invalid"],
        ["link", "symlink-artefact"],
      ])
      expect(report.shadowed).toEqual([
        { id: "pdf", file: `${second}/pdf/SKILL.md`, shadowedBy: `${first}/pdf/SKILL.md` },
      ])
      expect(report.unpublished.map((left) => left.id)).toEqual(["notes"])

      const document = diagnosticsDocument(snapshot)
      expect(document.counts).toEqual({
        served: 2,
        skipped: 2,
        shadowed: 1,
        unpublished: 1,
        warned: 2,
        withheld: 0,
      })
      expect(document.warned.map((warned) => [warned.id, warned.diagnostics.map((d) => d.rule)])).toEqual([
        ["notes", ["name-characters", "name-matches-folder"]],
        ["pdf", ["unknown-field"]],
      ])
      expect(document.hint).toContain("skills-mcp validate")

      expect(notServedNote(snapshot)).toBe(
        "3 skill folders could not be served: 2 skipped (unreadable or malformed SKILL.md), 1 shadowed by a skill with the same id. The reasons are in the resource skill://diagnostics; run 'skills-mcp validate' on the skills folders for every check.",
      )

      const text = formatCatalogReport(report, first)
      const lines = text.split("\n")
      expect(lines[0]).toMatch(/^ID +NAME +URI +ROOT$/)
      expect(lines[1]).toMatch(/^notes +Release Notes +skill:\/\/notes +\//)
      expect(lines[2]).toMatch(/^pdf +pdf +skill:\/\/pdf\/SKILL\.md +\//)
      expect(text).toMatch(/skipped +broken +broken\/SKILL\.md:\d +yaml-invalid: /)
      expect(text).toMatch(/skipped +link +link\/SKILL\.md:1 +symlink-artefact: /)
      expect(text).toContain(`hidden by pdf/SKILL.md (the first root wins)`)
      expect(text).toMatch(/not in skills\/list +notes +notes\/SKILL\.md +its name 'Release Notes'/)
      expect(lines.at(-2)).toBe(
        "2 skills served, 2 skipped, 1 shadowed, 1 not listed over the MCP Skills extension. Run 'skills-mcp validate' for details and fixes.",
      )
    }),
  )

  it.scoped("says nothing in list_skills when every skill folder is served", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({ "pdf/SKILL.md": skillMd("pdf", "PDFs") })
      const snapshot = yield* snapshotOf([root])
      expect(notServedNote(snapshot)).toBe("")
      expect(diagnosticsDocument(snapshot).counts).toEqual({
        served: 1,
        skipped: 0,
        shadowed: 0,
        unpublished: 0,
        warned: 0,
        withheld: 0,
      })
    }),
  )
})

describe("formatCatalogReport", () => {
  it.scoped("shows control characters of folder names and names escaped: one row per skill", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({
        "clear\u001b[2J/SKILL.md": skillMd("clear", "d"),
        "two\nlines/SKILL.md": skillMd("two", "d"),
        "named/SKILL.md": skillMd('"named\\e]8;;https://evil.example\\aclick\\e[8m\\nforged  row"', "d"),
        "flipped/SKILL.md": skillMd("flip\u202edepp", "d"),
      })
      const snapshot = yield* snapshotOf([root])
      expect(snapshot.skills.map((skill) => skill.name).sort()).toEqual([
        "clear",
        "flip\u202edepp",
        "named\u001b]8;;https://evil.example\u0007click\u001b[8m\nforged  row",
        "two",
      ])
      const text = formatCatalogReport(
        catalogReport(snapshot, () => undefined),
        root,
      )
      expect(rawControls(text)).toEqual([])
      // One row per skill, starting with its id; then one per skill not listed; then the summary.
      const lines = text.split("\n")
      expect(lines.map((line) => line.split(" ")[0])).toEqual([
        "ID",
        "clear\\x1b[2J",
        "flipped",
        "named",
        "two\\nlines",
        "",
        "not",
        "not",
        "",
        "4",
        "",
      ])
      expect(text).toContain("clear\\x1b[2J ")
      expect(text).toContain("two\\nlines ")
      expect(text).toContain("named\\x1b]8;;https://evil.example\\x07click\\x1b[8m\\nforged  row")
      expect(text).toContain("flip\\u202edepp")
    }),
  )

  it.scoped("names a root that serves nothing, and the dot-folders that hold its skills", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({
        ".curated/a/SKILL.md": skillMd("a", "d"),
        ".system/b/SKILL.md": skillMd("b", "d"),
      })
      const snapshot = yield* snapshotOf([root])
      const report = catalogReport(snapshot, () => undefined)
      expect(report.notices).toEqual([
        {
          path: root,
          kind: "empty-root",
          dotFolders: [".curated", ".system"],
          reason: expect.stringContaining("pass --include-dot-folders"),
        },
      ])
      expect(diagnosticsDocument(snapshot).notices).toEqual(report.notices)
      expect(formatCatalogReport(report, path.dirname(root))).toMatch(
        /^no skills +- +\S+ +no skill found outside dot-folders, which discovery skips; skills are in \.curated \(1\), \.system \(1\)/,
      )
      const included = yield* Effect.flatMap(Catalog, (catalog) => catalog.snapshot).pipe(
        Effect.provide(servicesFor([root], { includeDotFolders: true })),
      )
      expect(included.skills.map((skill) => skill.id)).toEqual(["a", "b"])
      expect(included.notices).toEqual([])
    }),
  )
})

describe("displayPath", () => {
  it.each([
    ["/work/skills/pdf", "/work", "skills/pdf"],
    ["/work", "/work", "/work"],
    ["/other/pdf", "/work", "/other/pdf"],
    ["/workshop/pdf", "/work", "/workshop/pdf"],
  ])("shows %s from %s as %s", (target, cwd, shown) => {
    expect(displayPath(target, cwd)).toBe(shown)
  })
})
