/**
 * Every rule of src/skills/Validation.ts, table-driven: texts that pass and texts that break one
 * rule each, through the same parser the server uses. The rules that need the disk or every
 * skill at once are checked here as pure functions and end to end in Lint.test.ts.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Either from "effect/Either"
import { parseSkillText, symlinkTargetIn } from "../src/skills/Frontmatter.js"
import { fileReferences } from "../src/skills/References.js"
import type { RuleId } from "../src/skills/Validation.js"
import {
  checkLength,
  checkSize,
  checkSkill,
  codePoints,
  duplicateNames,
  fieldLines,
  isValidName,
  nameProblems,
  RULE_IDS,
  RULES,
  suggestedName,
} from "../src/skills/Validation.js"

/** The rules a whole SKILL.md text breaks: its parse failure's, or every frontmatter rule's. */
const rulesOfText = (folder: string, text: string): Array<RuleId> => {
  const parsed = parseSkillText(`/skills/${folder}/SKILL.md`, text)
  if (Either.isLeft(parsed)) return [parsed.left.rule]
  return checkSkill({ folder, frontmatter: parsed.right }).map((diagnostic) => diagnostic.rule)
}

/** Every frontmatter rule's diagnostics for a SKILL.md text that parses (a test fails if not). */
const diagnosticsOf = (folder: string, text: string, lines?: ReadonlyMap<string, number>) => {
  const parsed = parseSkillText(`/skills/${folder}/SKILL.md`, text)
  if (Either.isLeft(parsed)) throw new Error(parsed.left.message)
  return checkSkill({ folder, frontmatter: parsed.right, ...(lines === undefined ? {} : { lines }) })
}

const rulesOf = (folder: string, frontmatter: string) =>
  rulesOfText(folder, `---\n${frontmatter}\n---\n# Body\n`)

/** Rules the tables below show failing (checked against RULES at the end). */
const covered = new Set<RuleId>()

describe("frontmatter rules: texts that pass", () => {
  it.each([
    ["the minimal skill", "pdf", "name: pdf\ndescription: Works with PDFs"],
    [
      "every specified field",
      "pdf",
      'name: pdf\ndescription: d\nlicense: MIT\ncompatibility: Python 3\nmetadata:\n  author: me\n  version: "1.0"\nallowed-tools: Bash(git:*) Read',
    ],
    ["flow-style allowed-tools list", "pdf", "name: pdf\ndescription: d\nallowed-tools: [Bash, Read]"],
    [
      "block-style allowed-tools list",
      "pdf",
      "name: pdf\ndescription: d\nallowed-tools:\n  - Bash(git:*)\n  - Read",
    ],
    ["flow-style metadata map", "pdf", 'name: pdf\ndescription: d\nmetadata: {author: me, version: "1"}'],
    ["a flow-style frontmatter", "pdf", "{name: pdf, description: d}"],
    ["quoted values", "pdf", "name: \"pdf\"\ndescription: 'It''s for PDFs'"],
    ["a --- inside a value", "pdf", "name: pdf\ndescription: before --- after"],
    ["Unicode lowercase letters", "café", "name: café\ndescription: d"],
    ["a German sharp s", "straße", "name: straße\ndescription: d"],
    ["letters without case", "日本語", "name: 日本語\ndescription: d"],
    ["a name equal to its folder after NFKC (ligature)", "file-tools", "name: ﬁle-tools\ndescription: d"],
    ["a name equal to its folder after NFKC (full width)", "pdf", "name: ｐｄｆ\ndescription: d"],
    ["a folder in decomposed form", "cafe\u0301", "name: café\ndescription: d"],
    ["a 64-character name", "a".repeat(64), `name: ${"a".repeat(64)}\ndescription: d`],
    ["a 1024-character description", "pdf", `name: pdf\ndescription: ${"d".repeat(1024)}`],
    [
      "a description of 1024 emoji (2048 UTF-16 units)",
      "pdf",
      `name: pdf\ndescription: ${"😀".repeat(1024)}`,
    ],
    ["a 500-character compatibility", "pdf", `name: pdf\ndescription: d\ncompatibility: ${"c".repeat(500)}`],
    ["an empty allowed-tools list", "pdf", "name: pdf\ndescription: d\nallowed-tools: []"],
  ])("%s", (_title, folder, frontmatter) => {
    expect(rulesOf(folder, frontmatter)).toEqual([])
  })

  it.each([
    ["CRLF line ends", "---\r\nname: pdf\r\ndescription: d\r\n---\r\n# Body\r\n"],
    ["a UTF-8 byte order mark", "\uFEFF---\nname: pdf\ndescription: d\n---\n# Body\n"],
    ["a BOM and CRLF together", "\uFEFF---\r\nname: pdf\r\ndescription: d\r\n---\r\n"],
    ["blank lines before the frontmatter", "\n\n---\nname: pdf\ndescription: d\n---\n"],
  ])("%s", (_title, text) => {
    expect(rulesOfText("pdf", text)).toEqual([])
  })

  it("reads a description holding --- lines whole (never truncated)", () => {
    const text = "---\nname: pdf\ndescription: |\n  first part\n  ---\n  second part --- end\n---\nbody\n"
    const parsed = parseSkillText("/skills/pdf/SKILL.md", text)
    expect(Either.isRight(parsed) && parsed.right.fields.description).toBe(
      "first part\n---\nsecond part --- end\n",
    )
    expect(Either.isRight(parsed) && parsed.right.body).toBe("body\n")
  })
})

describe("frontmatter rules: texts that fail", () => {
  it.each<[string, string, string, ReadonlyArray<RuleId>]>([
    ["no frontmatter", "pdf", "# Just markdown\n", ["frontmatter-missing"]],
    ["an empty file", "pdf", "", ["frontmatter-missing"]],
    [
      "a frontmatter that never closes",
      "pdf",
      "---\nname: pdf\ndescription: d\n# Body\n",
      ["frontmatter-unclosed"],
    ],
    ["invalid YAML", "pdf", "---\nname: [pdf\ndescription: d\n---\n", ["yaml-invalid"]],
    ["a YAML tag", "pdf", "---\nname: !!binary aGk=\ndescription: d\n---\n", ["yaml-invalid"]],
    ["duplicate keys", "pdf", "---\nname: pdf\nname: pdf\ndescription: d\n---\n", ["yaml-invalid"]],
    ["a frontmatter that is a list", "pdf", "---\n- name\n- description\n---\n", ["yaml-invalid"]],
    ["an empty frontmatter", "pdf", "---\n---\n# Body\n", ["yaml-invalid"]],
    [
      "a tab-indented mapping",
      "pdf",
      "---\nname: pdf\ndescription: d\nmetadata:\n\tauthor: me\n---\n",
      ["yaml-invalid"],
    ],
    ["a one-line relative link target", "pdf", "../shared/pdf/SKILL.md", ["symlink-artefact"]],
    ["a link target with a final newline", "pdf", "../../skills/pdf\n", ["symlink-artefact"]],
    ["a Windows link target", "pdf", "..\\shared\\pdf\\SKILL.md", ["symlink-artefact"]],
  ])("%s", (_title, folder, text, expected) => {
    const rules = rulesOfText(folder, text)
    expect(rules).toEqual(expected)
    for (const rule of rules) covered.add(rule)
  })

  it.each<[string, string, string, ReadonlyArray<RuleId>]>([
    ["a missing name", "pdf", "description: d", ["name-required"]],
    ["a numeric name", "pdf", "name: 123\ndescription: d", ["name-required"]],
    ["an empty name", "pdf", 'name: ""\ndescription: d', ["name-required"]],
    ["a list as name", "pdf", "name: [pdf]\ndescription: d", ["name-required"]],
    ["a missing description", "pdf", "name: pdf", ["description-required"]],
    ["a blank description", "pdf", 'name: pdf\ndescription: "   "', ["description-required"]],
    ["a null description", "pdf", "name: pdf\ndescription:", ["description-required"]],
    ["a 65-character name", "a".repeat(65), `name: ${"a".repeat(65)}\ndescription: d`, ["name-length"]],
    ["uppercase letters", "PDF", "name: PDF\ndescription: d", ["name-characters"]],
    ["Unicode uppercase letters", "ÉCOLE", "name: ÉCOLE\ndescription: d", ["name-characters"]],
    ["an underscore", "pdf_tools", "name: pdf_tools\ndescription: d", ["name-characters"]],
    ["a space", "pdf tools", "name: pdf tools\ndescription: d", ["name-characters"]],
    ["an emoji", "pdf😀", "name: pdf😀\ndescription: d", ["name-characters"]],
    ["a slash", "pdf/tools", "name: pdf/tools\ndescription: d", ["name-characters"]],
    ["a leading hyphen", "-pdf", "name: -pdf\ndescription: d", ["name-hyphens"]],
    ["a trailing hyphen", "pdf-", "name: pdf-\ndescription: d", ["name-hyphens"]],
    ["consecutive hyphens", "pdf--tools", "name: pdf--tools\ndescription: d", ["name-hyphens"]],
    ["a name other than the folder", "pdf", "name: pdf-tools\ndescription: d", ["name-matches-folder"]],
    [
      "a human name",
      "release-notes",
      "name: Release Notes\ndescription: d",
      ["name-characters", "name-matches-folder"],
    ],
    [
      "a 1025-character description",
      "pdf",
      `name: pdf\ndescription: ${"d".repeat(1025)}`,
      ["description-length"],
    ],
    ["1025 emoji", "pdf", `name: pdf\ndescription: ${"😀".repeat(1025)}`, ["description-length"]],
    [
      "an empty compatibility",
      "pdf",
      'name: pdf\ndescription: d\ncompatibility: ""',
      ["compatibility-length"],
    ],
    ["a null compatibility", "pdf", "name: pdf\ndescription: d\ncompatibility:", ["compatibility-length"]],
    [
      "a 501-character compatibility",
      "pdf",
      `name: pdf\ndescription: d\ncompatibility: ${"c".repeat(501)}`,
      ["compatibility-length"],
    ],
    ["a numeric compatibility", "pdf", "name: pdf\ndescription: d\ncompatibility: 3", ["compatibility-type"]],
    [
      "a list as compatibility",
      "pdf",
      "name: pdf\ndescription: d\ncompatibility: [a, b]",
      ["compatibility-type"],
    ],
    ["metadata that is a list", "pdf", "name: pdf\ndescription: d\nmetadata: [a, b]", ["metadata-type"]],
    ["metadata that is a string", "pdf", "name: pdf\ndescription: d\nmetadata: author me", ["metadata-type"]],
    [
      "a numeric metadata value",
      "pdf",
      "name: pdf\ndescription: d\nmetadata:\n  version: 1.0",
      ["metadata-type"],
    ],
    [
      "a nested metadata map",
      "pdf",
      "name: pdf\ndescription: d\nmetadata:\n  a:\n    b: c",
      ["metadata-type"],
    ],
    [
      "a flow metadata map with a number",
      "pdf",
      "name: pdf\ndescription: d\nmetadata: {a: 1}",
      ["metadata-type"],
    ],
    ["a null metadata", "pdf", "name: pdf\ndescription: d\nmetadata:", ["metadata-type"]],
    ["a list as license", "pdf", "name: pdf\ndescription: d\nlicense: [MIT]", ["license-type"]],
    ["a numeric license", "pdf", "name: pdf\ndescription: d\nlicense: 3", ["license-type"]],
    [
      "allowed-tools as a map",
      "pdf",
      "name: pdf\ndescription: d\nallowed-tools: {Bash: yes}",
      ["allowed-tools-type"],
    ],
    [
      "allowed-tools holding a number",
      "pdf",
      "name: pdf\ndescription: d\nallowed-tools: [Bash, 3]",
      ["allowed-tools-type"],
    ],
    [
      "a boolean allowed-tools",
      "pdf",
      "name: pdf\ndescription: d\nallowed-tools: true",
      ["allowed-tools-type"],
    ],
    [
      "a field outside the specification",
      "pdf",
      "name: pdf\ndescription: d\nrequires: [python]",
      ["unknown-field"],
    ],
    [
      "two unknown fields",
      "pdf",
      "name: pdf\ndescription: d\nversion: 2\ntags: [a]",
      ["unknown-field", "unknown-field"],
    ],
  ])("%s", (_title, folder, frontmatter, expected) => {
    const rules = rulesOf(folder, frontmatter)
    expect(rules).toEqual(expected)
    for (const rule of rules) covered.add(rule)
  })

  it("points at the field's line and says how to fix it", () => {
    const text = "---\nname: Bad_Name\ndescription: d\nrequires: x\n---\n"
    const lines = fieldLines("name: Bad_Name\ndescription: d\nrequires: x\n", 1)
    const diagnostics = diagnosticsOf("bad-name", text, lines)
    expect(diagnostics).toEqual([
      expect.objectContaining({ rule: "name-characters", severity: "error", line: 2 }),
      expect.objectContaining({ rule: "name-matches-folder", severity: "error", line: 2 }),
      expect.objectContaining({ rule: "unknown-field", severity: "warning", line: 4 }),
    ])
    expect(diagnostics[0]?.message).toContain("Use 'bad-name'")
    expect(diagnostics[1]?.message).toContain("set 'name: bad-name'")
    expect(diagnostics[2]?.message).toContain("'requires'")
  })

  it("gives one fix for a bad name that also differs from its folder: the folder's name", () => {
    const [characters, folder] = diagnosticsOf(
      "verification-quality",
      "---\nname: Verification & Quality Assurance\ndescription: d\n---\n",
    )
    expect(characters).toMatchObject({ rule: "name-characters" })
    expect(characters?.message).toContain("Use 'verification-quality'.")
    expect(folder).toMatchObject({ rule: "name-matches-folder" })
    expect(folder?.message).toContain("set 'name: verification-quality'")
  })

  it("does not tell authors to move Claude Code's own fields under metadata", () => {
    const [claude, other] = diagnosticsOf(
      "a",
      "---\nname: a\ndescription: d\ndisable-model-invocation: true\nrequires: x\n---\n",
    )
    expect(claude).toMatchObject({ rule: "unknown-field", severity: "warning" })
    expect(claude?.message).toContain("Claude Code reads it")
    expect(claude?.message).not.toContain("metadata")
    expect(other?.message).toContain("Move it under 'metadata'")
  })

  it("explains a symbolic link checked out as a file, naming its target", () => {
    const parsed = parseSkillText("/skills/pdf/SKILL.md", "../shared/pdf/SKILL.md")
    expect(Either.isLeft(parsed) && parsed.left.reason).toContain("'../shared/pdf/SKILL.md'")
    expect(Either.isLeft(parsed) && parsed.left.reason).toContain("core.symlinks")
  })
})

describe("symlinkTargetIn", () => {
  it.each([
    ["../shared/pdf/SKILL.md", "../shared/pdf/SKILL.md"],
    ["skills/pdf/SKILL.md", "skills/pdf/SKILL.md"],
    ["/opt/skills/pdf", "/opt/skills/pdf"],
    ["../my skills/pdf", "../my skills/pdf"],
    ["C:\\skills\\pdf", "C:\\skills\\pdf"],
    ["\uFEFF../pdf/SKILL.md\n", "../pdf/SKILL.md"],
  ])("recognises %j", (text, target) => {
    expect(symlinkTargetIn(text)).toBe(target)
  })

  it.each([
    "Hello world",
    "See docs/guide.md for the rest",
    "https://example.com/skills/pdf",
    "# pdf/tools",
    "name: pdf/x",
    "../a\n../b",
    "",
    "pdf",
  ])("leaves %j alone", (text) => {
    expect(symlinkTargetIn(text)).toBeUndefined()
  })
})

describe("names", () => {
  it.each([
    ["pdf", true],
    ["pdf-processing", true],
    ["a1-b2", true],
    ["café", true],
    ["ｐｄｆ", true],
    ["x".repeat(64), true],
    ["x".repeat(65), false],
    ["PDF", false],
    ["pdf_processing", false],
    ["-pdf", false],
    ["pdf-", false],
    ["pdf--tools", false],
    ["", false],
    ["Release Notes Writer", false],
  ])("'%s' valid: %s", (name, valid) => {
    expect(isValidName(name)).toBe(valid)
    expect(nameProblems(name).length === 0).toBe(valid)
  })

  it.each([
    ["PDF Processing", "pdf-processing"],
    ["Release Notes Writer!", "release-notes-writer"],
    ["sw/analytics", "sw-analytics"],
    ["Ｃafé", "café"],
    ["---", undefined],
  ])("suggests a valid name for '%s'", (name, suggestion) => {
    expect(suggestedName(name)).toBe(suggestion)
  })

  it("counts code points, not UTF-16 units", () => {
    expect(codePoints("😀")).toBe(1)
    expect(codePoints("a😀b")).toBe(3)
    expect(codePoints("\uD800")).toBe(1)
  })
})

describe("fieldLines", () => {
  it("finds top-level keys (plain and quoted) below the opening line", () => {
    const lines = fieldLines(
      'name: a\ndescription: >-\n  x: y\n"allowed-tools": Read\nmetadata:\n  k: v\n',
      3,
    )
    expect([...lines]).toEqual([
      ["name", 4],
      ["description", 5],
      ["allowed-tools", 7],
      ["metadata", 8],
    ])
  })
})

describe("file rules", () => {
  it("warns when SKILL.md is over 500 lines", () => {
    expect(checkLength("x\n".repeat(500))).toBeUndefined()
    const long = checkLength("x\n".repeat(501))
    expect(long).toMatchObject({ rule: "skill-md-length", severity: "warning" })
    expect(long?.message).toContain("501 lines")
    if (long !== undefined) covered.add(long.rule)
  })

  it("finds files referenced by relative path, with their lines, once each", () => {
    const body = [
      "# Title", // 10
      "See [the guide](references/guide.md#part) and ![chart](assets/chart%20one.png).", // 11
      "Run `python scripts/run.py --fast` then `scripts/run.py` again.", // 12
      "Read `references/naïve guide.md`.", // 13
      "[web](https://example.com/x) [anchor](#usage) [mail](mailto:a@b.c) [abs](/etc/passwd)", // 14
      "[def]: ./FORMS.md", // 15
      '<img src="assets/logo.svg"> and a template: `references/<topic>.md`, scripts/*.py', // 16
      "```markdown", // 17
      "[in code](not-a-link.md) but scripts/in-fence.sh counts", // 18
      "```", // 19
      "The folders scripts/ and references/ are optional; check project scripts/manifests first.", // 20
      "Templates live in assets/templates/.", // 21
    ].join("\n")
    expect(fileReferences(body, 10)).toEqual([
      { path: "references/guide.md", line: 11 },
      { path: "assets/chart one.png", line: 11 },
      { path: "scripts/run.py", line: 12 },
      { path: "references/naïve guide.md", line: 13 },
      { path: "./FORMS.md", line: 15 },
      { path: "assets/logo.svg", line: 16 },
      { path: "scripts/in-fence.sh", line: 18 },
      { path: "assets/templates/", line: 21 },
    ])
  })

  it("does not take paths given as examples, or in HTML comments, for references", () => {
    const body = [
      "# Layout", // 1
      "- **Example**: `scripts/rotate.py` for rotation tasks", // 2
      "- **Examples**: `references/finance.md` for schemas,", // 3
      "  `references/mnda.md` for the NDA template", // 4
      "- Bare paths (e.g. `references/guide.md`) resolve; e.g. [links](references/linked.md) count.", // 5
      "", // 6
      "Example: when building a skill for queries, the analysis shows:", // 7
      "", // 8
      "1. An `assets/hello-world/` template would help", // 9
      "2. A `references/schema.md` file would help", // 10
      "", // 11
      "## Steps", // 12
      "", // 13
      "1. Run `scripts/real.py` first.", // 14
      "<!-- scripts/commented.py", // 15
      "     and references/also-commented.md -->", // 16
      "See [the real guide](references/real.md) and https://example.com/x with example patterns.", // 17
      "```bash", // 18
      "python3 scripts/in-code.py # not an example", // 19
      "```", // 20
    ].join("\n")
    expect(fileReferences(body, 1)).toEqual([
      { path: "references/linked.md", line: 5 },
      { path: "scripts/real.py", line: 14 },
      { path: "references/real.md", line: 17 },
      { path: "scripts/in-code.py", line: 19 },
    ])
  })

  it("warns when a skill is over the Skills extension's limits", () => {
    const limits = { files: 512, bytes: 16 * 1024 * 1024 }
    expect(checkSize({ files: 512, bytes: 16 * 1024 * 1024, partial: false }, limits)).toBeUndefined()
    const many = checkSize({ files: 513, bytes: 10, partial: false }, limits)
    expect(many).toMatchObject({ rule: "skill-too-large", severity: "warning" })
    expect(many?.message).toContain("513 files")
    expect(checkSize({ files: 3, bytes: 16 * 1024 * 1024 + 1, partial: false }, limits)?.message).toContain(
      "16777217 bytes",
    )
    const oversized = checkSize(
      { files: 1, bytes: 20, partial: false, oversized: { path: "a.bin", size: 20, limit: 10 } },
      limits,
    )
    expect(oversized?.message).toContain("'a.bin' is 20 bytes")
    if (many !== undefined) covered.add(many.rule)
  })

  it("pairs skills that share a name (after NFKC), each with the other paths", () => {
    const a = { name: "pdf", file: "/one/pdf/SKILL.md" }
    const b = { name: "ｐｄｆ", file: "/two/pdf/SKILL.md" }
    const c = { name: "csv", file: "/one/csv/SKILL.md" }
    const duplicates = duplicateNames([a, b, c])
    expect([...duplicates]).toEqual([
      [a, ["/two/pdf/SKILL.md"]],
      [b, ["/one/pdf/SKILL.md"]],
    ])
    covered.add("duplicate-name")
  })
})

describe("the rule table", () => {
  it("gives every rule a severity and a summary, and the tables above fail every pure rule", () => {
    for (const rule of RULE_IDS) {
      expect(["error", "warning"]).toContain(RULES[rule].severity)
      expect(RULES[rule].summary.length).toBeGreaterThan(10)
    }
    // These need the disk (or a file's bytes): Lint.test.ts, test/e2e/validate.test.ts and
    // test/e2e/roots.test.ts.
    const onDisk = new Set<RuleId>([
      "skill-unreadable",
      "frontmatter-not-first",
      "reference-missing",
      "reference-outside",
      "path-skipped",
      "skill-nested",
      "root-empty",
    ])
    expect(RULE_IDS.filter((rule) => !covered.has(rule) && !onDisk.has(rule))).toEqual([])
  })
})
