import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { parseSkillText } from "../src/Frontmatter.js"
import { checkSkill, nameProblems } from "../src/Validation.js"

const rulesFor = (folder: string, frontmatter: string) => {
  const parsed = parseSkillText(`/s/${folder}/SKILL.md`, `---\n${frontmatter}\n---\nbody`)
  if (Either.isLeft(parsed)) throw new Error(parsed.left.message)
  return checkSkill({ folder, frontmatter: parsed.right }).map((diagnostic) => diagnostic.rule)
}

describe("nameProblems", () => {
  it.each([
    ["pdf", 0],
    ["pdf-processing", 0],
    ["a1-b2", 0],
    ["x".repeat(64), 0],
    ["x".repeat(65), 1],
    ["PDF", 1],
    ["pdf_processing", 1],
    ["-pdf", 1],
    ["pdf-", 1],
    ["pdf--tools", 1],
    ["", 1],
    ["Release Notes Writer", 1],
  ])("'%s' has %i problem(s)", (name, count) => {
    expect(nameProblems(name).length > 0 ? 1 : 0).toBe(count)
  })
})

describe("checkSkill", () => {
  it("passes a skill that follows every rule", () => {
    expect(rulesFor("pdf", 'name: pdf\ndescription: Works with PDFs\nmetadata:\n  version: "1"')).toEqual([])
  })

  it.each([
    ["name-format", "Bad", "name: Bad\ndescription: d"],
    ["name-matches-folder", "folder", "name: other\ndescription: d"],
    ["description-length", "a", `name: a\ndescription: ${"d".repeat(1025)}`],
    ["compatibility-length", "a", `name: a\ndescription: d\ncompatibility: ${"c".repeat(501)}`],
    ["compatibility-type", "a", "name: a\ndescription: d\ncompatibility: 3"],
    ["metadata-type", "a", "name: a\ndescription: d\nmetadata:\n  version: 1"],
    ["metadata-type", "a", "name: a\ndescription: d\nmetadata: [a, b]"],
    ["license-type", "a", "name: a\ndescription: d\nlicense: [MIT]"],
    ["allowed-tools-type", "a", "name: a\ndescription: d\nallowed-tools: [Bash, Read]"],
  ])("reports %s", (rule, folder, frontmatter) => {
    expect(rulesFor(folder, frontmatter)).toContain(rule)
  })

  it("counts description length in code points, not UTF-16 units", () => {
    const emoji = "😀".repeat(1024)
    expect(rulesFor("a", `name: a\ndescription: ${emoji}`)).toEqual([])
    expect(rulesFor("a", `name: a\ndescription: ${emoji}x`)).toContain("description-length")
  })
})
