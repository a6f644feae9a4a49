/**
 * The built CLI's one-shot commands on the fixture trees: `validate` (human output, --json,
 * --strict, exit codes), `list`, and the `skill://diagnostics` resource of the server.
 */
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import * as Schema from "effect/Schema"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { LintReport } from "../../src/report/Lint.js"
import type { RunningServer } from "../support/server.js"
import {
  callTool,
  copyFixtures,
  eventually,
  PROJECT,
  runRaw,
  startServer,
  toolText,
} from "../support/server.js"
import { skillMd, writeTree } from "../support/tree.js"

const LINT = path.join(PROJECT, "fixtures", "lint")
const VALID = path.join(PROJECT, "fixtures", "valid")
const HOSTILE = path.join(PROJECT, "fixtures", "hostile")
const SHADOW = path.join(PROJECT, "fixtures", "shadow")

/**
 * The one-shot commands' home: empty (no skills of the user's come in), and outside the checkout,
 * since from Node 22.1 the bin keeps its compile cache there (`~/.cache/skills-mcp`).
 */
const HOME = await fs.mkdtemp(path.join(os.tmpdir(), "skills-mcp-validate-home-"))
afterAll(() => fs.rm(HOME, { recursive: true, force: true }))

const validate = (args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  runRaw(["validate", ...args], [], { HOME, ...env })

const decodeReport = (stdout: string) => Schema.decodeUnknownSync(LintReport)(JSON.parse(stdout))

describe("skills-mcp validate", () => {
  it("passes clean skills (flow YAML, CRLF, --- in a description) with exit code 0", async () => {
    const run = await validate([path.join(LINT, "clean")])
    expect(run.code).toBe(0)
    expect(run.stdout).toMatch(/^OK: 3 skills checked in .*clean: 0 errors, 0 warnings \(3 clean\)\.\n$/)
    expect(run.stderr).toBe("")
  })

  it("reports warnings grouped by skill and exits 0; --strict makes them errors (exit 1)", async () => {
    const lenient = await validate([path.join(LINT, "warnings")])
    expect(lenient.code).toBe(0)
    expect(lenient.stdout).toContain("unknown-fields: ")
    expect(lenient.stdout).toContain("unknown-fields/SKILL.md:4: warning unknown-field: field 'requires'")
    expect(lenient.stdout).toContain("unknown-fields/SKILL.md:5: warning unknown-field: field 'version'")
    expect(lenient.stdout).toContain(
      "missing-refs/SKILL.md:8: warning reference-missing: SKILL.md refers to 'references/forms.md'",
    )
    expect(lenient.stdout).toContain(
      "missing-refs/SKILL.md:9: warning reference-missing: SKILL.md refers to 'scripts/fill.py'",
    )
    expect(lenient.stdout).not.toContain("references/present.md")
    expect(lenient.stdout).toContain("long-body/SKILL.md: warning skill-md-length: SKILL.md has 527 lines")
    expect(lenient.stdout).toContain(
      "bom-first/SKILL.md:1: warning frontmatter-not-first: SKILL.md does not begin with '---'",
    )
    expect(lenient.stdout).toMatch(
      /\nOK: 5 skills checked in .*warnings: 0 errors, 6 warnings \(1 clean\)\.\n$/,
    )

    const strict = await validate(["--strict", path.join(LINT, "warnings")])
    expect(strict.code).toBe(1)
    expect(strict.stdout).toContain("unknown-fields/SKILL.md:4: error unknown-field")
    expect(strict.stdout).toMatch(
      /FAILED: 5 skills checked .*: 6 errors, 0 warnings \(1 clean\)\. --strict: warnings count as errors\.\n$/,
    )
  })

  it("reports every error with file:line and how to fix it, and exits 1", async () => {
    const run = await validate([path.join(LINT, "errors")])
    expect(run.code).toBe(1)
    for (const line of [
      "bad-name (Bad_Name): ",
      "bad-name/SKILL.md:2: error name-characters: name 'Bad_Name' may contain only lowercase letters, digits and hyphens",
      "Use 'bad-name'.",
      "bad-name/SKILL.md:2: error name-matches-folder: name 'Bad_Name' differs from its folder name 'bad-name'",
      "empty-compatibility/SKILL.md:4: error compatibility-length: compatibility is empty",
      "long-description/SKILL.md:3: error description-length: description is 1030 characters; the limit is 1024",
      "metadata-list/SKILL.md:4: error metadata-type: metadata must be a map of string keys to string values, not a list",
      "no-name/SKILL.md:1: error name-required: missing required field 'name'",
      "symlink-artefact/SKILL.md:1: error symlink-artefact: SKILL.md holds only the line '../../clean/good-flow/SKILL.md'",
      "core.symlinks",
      "unclosed/SKILL.md:1: error frontmatter-unclosed",
    ]) {
      expect(run.stdout).toContain(line)
    }
    expect(run.stdout).toMatch(
      /\nFAILED: 7 skills checked in .*errors: 8 errors, 0 warnings \(0 clean\)\.\n$/,
    )
  })

  it("--json prints one document with every skill, the counts per rule and duplicate names across roots", async () => {
    const roots = ["clean", "warnings", "errors"].map((name) => path.join(LINT, name))
    const run = await validate(["--json", ...roots])
    expect(run.code).toBe(1)
    const report = decodeReport(run.stdout)
    expect(report.ok).toBe(false)
    expect(report.roots).toEqual(roots)
    expect(report.summary).toEqual({
      skills: 15,
      errors: 8,
      warnings: 8,
      skillsWithErrors: 7,
      skillsWithWarnings: 6,
      rules: {
        "compatibility-length": 1,
        "description-length": 1,
        "duplicate-name": 2,
        "frontmatter-not-first": 1,
        "frontmatter-unclosed": 1,
        "metadata-type": 1,
        "name-characters": 1,
        "name-matches-folder": 1,
        "name-required": 1,
        "reference-missing": 2,
        "skill-md-length": 1,
        "symlink-artefact": 1,
        "unknown-field": 2,
      },
    })
    const first = path.join(LINT, "clean", "good-flow", "SKILL.md")
    const copy = path.join(LINT, "warnings", "copies", "good-flow", "SKILL.md")
    const duplicate = report.skills.find((skill) => skill.file === copy)?.diagnostics[0]
    expect(duplicate).toMatchObject({ rule: "duplicate-name", severity: "warning", file: copy, line: 2 })
    expect(duplicate?.message).toContain(first)
    expect(report.skills.find((skill) => skill.file === first)?.diagnostics[0]?.message).toContain(copy)
    const longText = report.skills.find((skill) => skill.id === "long-text")
    expect(longText).toMatchObject({ name: "long-text", diagnostics: [] })
    expect(report.skills.find((skill) => skill.id === "no-name")).not.toHaveProperty("name")
  })

  it("checks a folder that is itself a skill alone", async () => {
    const run = await validate(["--json", path.join(LINT, "errors", "bad-name")])
    expect(run.code).toBe(1)
    const report = decodeReport(run.stdout)
    expect(report.skills.map((skill) => skill.id)).toEqual(["bad-name"])
    expect(report.summary.rules).toEqual({ "name-characters": 1, "name-matches-folder": 1 })
  })

  it("reads the same roots as the server: SKILLS_DIR, --skills-dir, and --deny", async () => {
    const fromEnv = await validate([], { SKILLS_DIR: path.join(LINT, "clean") })
    expect(fromEnv.code).toBe(0)
    expect(fromEnv.stdout).toContain("3 skills checked")
    const denied = await validate(["--skills-dir", path.join(LINT, "errors"), "--deny", "*", "--allow", "x"])
    expect(denied.stdout).toContain("No skills found in")
    expect(denied.code).toBe(1)
    const allowed = await validate(["-d", path.join(LINT, "errors"), "--allow", "bad-*"])
    expect(allowed.stdout).toContain("1 skill checked")
  })

  it.each([
    [["--bogus"], "Unknown option '--bogus'"],
    [["--watch"], "Option --watch does not apply to 'validate'"],
    [[path.join(LINT, "missing-folder")], "does not exist"],
    [["--max-depth", "zero"], "Invalid value 'zero' for option --max-depth"],
  ])("exits 2 on a usage error: %j", async (args, message) => {
    const run = await validate(args)
    expect(run.code).toBe(2)
    expect(run.stdout).toBe("")
    expect(run.stderr).toContain(message)
  })
})

describe("skills-mcp list", () => {
  it("prints what the server serves, and one line per skipped or shadowed skill with the reason", async () => {
    const run = await runRaw(["list", VALID, HOSTILE, SHADOW], [], { HOME })
    expect(run.code).toBe(0)
    expect(run.stderr).toBe("")
    const lines = run.stdout.split("\n")
    expect(lines[0]).toMatch(/^ID +NAME +URI +ROOT$/)
    expect(lines).toContainEqual(
      expect.stringMatching(
        /^pdf-processing +pdf-processing +skill:\/\/pdf-processing\/SKILL\.md +\S*fixtures\/valid$/,
      ),
    )
    expect(lines).toContainEqual(
      expect.stringMatching(/^csv-analysis +csv-analysis +skill:\/\/data\/csv-analysis\/SKILL\.md /),
    )
    expect(lines).toContainEqual(
      expect.stringMatching(/^release-notes +Release Notes Writer +skill:\/\/release-notes +/),
    )
    expect(run.stdout).toMatch(
      /skipped +missing-description +\S*missing-description\/SKILL\.md +description-required: missing required field 'description'/,
    )
    expect(run.stdout).toMatch(
      /skipped +yaml-tags +\S*yaml-tags\/SKILL\.md:3 +yaml-invalid: YAML tags are not allowed/,
    )
    expect(run.stdout).toMatch(
      /shadowed +pdf-processing +\S*shadow\/pdf-processing\/SKILL\.md +hidden by \S*valid\/pdf-processing\/SKILL\.md/,
    )
    expect(run.stdout).toContain(
      "10 skills served, 5 skipped, 1 shadowed, 1 not listed over the MCP Skills extension.",
    )
  })

  it("--json prints the same as one document", async () => {
    const run = await runRaw(["list", "--json", VALID, SHADOW], [], { HOME })
    expect(run.code).toBe(0)
    const document = Schema.decodeUnknownSync(
      Schema.Struct({
        version: Schema.Literal(1),
        roots: Schema.Array(Schema.String),
        served: Schema.Array(
          Schema.Struct({
            id: Schema.String,
            name: Schema.String,
            uri: Schema.String,
            published: Schema.Boolean,
            root: Schema.String,
            file: Schema.String,
          }),
        ),
        skipped: Schema.Array(Schema.Unknown),
        shadowed: Schema.Array(
          Schema.Struct({ id: Schema.String, file: Schema.String, shadowedBy: Schema.String }),
        ),
        unpublished: Schema.Array(
          Schema.Struct({ id: Schema.String, file: Schema.String, reason: Schema.String }),
        ),
        notices: Schema.Array(Schema.Unknown),
      }),
    )(JSON.parse(run.stdout))
    expect(document.roots).toEqual([VALID, SHADOW])
    expect(document.served.map((skill) => skill.id)).toHaveLength(8)
    expect(document.served.find((skill) => skill.id === "sql-queries")).toEqual({
      id: "sql-queries",
      name: "sql-queries",
      uri: "skill://data/sql-queries/SKILL.md",
      published: true,
      root: VALID,
      file: path.join(VALID, "data", "sql-queries", "SKILL.md"),
    })
    expect(document.shadowed).toEqual([
      {
        id: "pdf-processing",
        file: path.join(SHADOW, "pdf-processing", "SKILL.md"),
        shadowedBy: path.join(VALID, "pdf-processing", "SKILL.md"),
      },
    ])
    expect(document.unpublished.map((left) => left.id)).toEqual(["release-notes"])
  })

  it("marks skills the extension cannot serve for their content as not listed, with the reason", async () => {
    const root = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "skills-mcp-list-")))
    try {
      await writeTree(root, {
        "ok/SKILL.md": skillMd("ok", "Fine."),
        "blank-first/SKILL.md": `\n${skillMd("blank-first", "Blank line first.")}`,
        "many/SKILL.md": skillMd("many", "Too many files."),
        ...Object.fromEntries(Array.from({ length: 512 }, (_, i) => [`many/data/${i}.txt`, `${i}`])),
      })
      const run = await runRaw(["list", "--json", root], [], { HOME })
      expect(run.code).toBe(0)
      const document = JSON.parse(run.stdout) as {
        served: Array<{ id: string; published: boolean }>
        unpublished: Array<{ id: string; reason: string }>
      }
      expect(document.served.map((skill) => [skill.id, skill.published])).toEqual([
        ["blank-first", false],
        ["many", false],
        ["ok", true],
      ])
      expect(document.unpublished).toEqual([
        expect.objectContaining({
          id: "blank-first",
          reason: expect.stringContaining("does not begin with '---'"),
        }),
        expect.objectContaining({ id: "many", reason: "it has more than 512 files" }),
      ])
    } finally {
      await fs.rm(root, { recursive: true, force: true })
    }
  })

  it("refuses validate-only options", async () => {
    const run = await runRaw(["list", "--strict", VALID], [])
    expect(run.code).toBe(2)
    expect(run.stderr).toContain("Option --strict does not apply to 'list'")
  })
})

describe("skill://diagnostics", () => {
  let dir: string
  let server: RunningServer

  beforeAll(async () => {
    dir = await copyFixtures()
    server = await startServer(
      [path.join(dir, "valid"), path.join(dir, "hostile"), path.join(dir, "shadow"), "--refresh-ms", "0"],
      { env: { HOME: path.join(dir, "home") } },
    )
  })

  afterAll(async () => {
    await server.close()
    await fs.rm(dir, { recursive: true, force: true })
  })

  const Diagnostics = Schema.Struct({
    counts: Schema.Struct({
      served: Schema.Int,
      skipped: Schema.Int,
      shadowed: Schema.Int,
      unpublished: Schema.Int,
      warned: Schema.Int,
    }),
    skipped: Schema.Array(Schema.Struct({ id: Schema.String, rule: Schema.String, reason: Schema.String })),
    shadowed: Schema.Array(
      Schema.Struct({ id: Schema.String, file: Schema.String, shadowedBy: Schema.String }),
    ),
    warned: Schema.Array(
      Schema.Struct({ id: Schema.String, diagnostics: Schema.Array(Schema.Struct({ rule: Schema.String })) }),
    ),
    hint: Schema.String,
  })

  const readDiagnostics = async () => {
    const result = await server.client.readResource({ uri: "skill://diagnostics" })
    const content = result.contents[0]
    expect(content).toMatchObject({ uri: "skill://diagnostics", mimeType: "application/json" })
    return Schema.decodeUnknownSync(Diagnostics)(
      JSON.parse(content !== undefined && "text" in content ? content.text : ""),
    )
  }

  it("is listed, and holds the skipped, shadowed and warned skills with their reasons", async () => {
    const { resources } = await server.client.listResources()
    expect(resources).toContainEqual(
      expect.objectContaining({
        uri: "skill://diagnostics",
        name: "diagnostics",
        mimeType: "application/json",
      }),
    )
    const diagnostics = await readDiagnostics()
    expect(diagnostics.counts).toEqual({ served: 10, skipped: 5, shadowed: 1, unpublished: 1, warned: 1 })
    expect(diagnostics.skipped.map((skip) => [skip.id, skip.rule])).toEqual([
      ["malformed-yaml", "yaml-invalid"],
      ["missing-description", "description-required"],
      ["no-frontmatter", "frontmatter-missing"],
      ["unclosed-frontmatter", "frontmatter-unclosed"],
      ["yaml-tags", "yaml-invalid"],
    ])
    expect(diagnostics.shadowed.map((shadow) => shadow.id)).toEqual(["pdf-processing"])
    expect(diagnostics.warned).toEqual([
      expect.objectContaining({
        id: "release-notes",
        diagnostics: [{ rule: "name-characters" }, { rule: "name-matches-folder" }],
      }),
    ])
  })

  it("list_skills says how many skills were not served and where to look", async () => {
    const text = toolText(await callTool(server, "list_skills"))
    expect(text).toContain("6 skill folders could not be served: 5 skipped")
    expect(text).toContain("skill://diagnostics")
    expect(text).toContain("skills-mcp validate")
  })

  it("follows the catalog: a subscriber is told when a fixed skill leaves the skipped list", async () => {
    await server.client.subscribeResource({ uri: "skill://diagnostics" })
    await fs.writeFile(
      path.join(dir, "hostile", "missing-description", "SKILL.md"),
      "---\nname: missing-description\ndescription: Now it has one.\n---\n# Fixed\n",
    )
    await eventually(() =>
      expect(server.notifications).toContainEqual(
        expect.objectContaining({
          method: "notifications/resources/updated",
          params: { uri: "skill://diagnostics" },
        }),
      ),
    )
    const diagnostics = await readDiagnostics()
    expect(diagnostics.skipped.map((skip) => skip.id)).not.toContain("missing-description")
    expect(diagnostics.counts).toMatchObject({ served: 11, skipped: 4 })
  })
})
