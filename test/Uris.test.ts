import { describe, expect, it } from "@effect/vitest"
import * as Either from "effect/Either"
import { fileUri, parseSkillUri, resolveSegments, skillMdUri, skillPathOf } from "../src/skills/Uris.js"

const skill = (id: string, name: string, segments: ReadonlyArray<string>) => ({ id, name, segments })

describe("skill:// URIs", () => {
  it("replaces the folder with the frontmatter name in the skill path", () => {
    expect(skillPathOf(skill("template", "template-skill", ["template"]))).toEqual(["template-skill"])
    expect(skillPathOf(skill("refunds", "refunds", ["acme", "billing", "refunds"]))).toEqual([
      "acme",
      "billing",
      "refunds",
    ])
  })

  it("builds URIs with each segment encoded", () => {
    expect(skillMdUri(["acme", "billing", "refunds"])).toBe("skill://acme/billing/refunds/SKILL.md")
    expect(fileUri(["my group", "pdf"], "references/a b.md")).toBe(
      "skill://my%20group/pdf/references/a%20b.md",
    )
    expect(fileUri(["pdf"], "")).toBe("skill://pdf")
  })

  it("keeps letters of any script as they are, so the last segment is the skill's name itself", () => {
    expect(skillMdUri(["équipe", "café"])).toBe("skill://équipe/café/SKILL.md")
    expect(fileUri(["日本語"], "références/100% sûr?.md")).toBe(
      "skill://日本語/références/100%25%20sûr%3F.md",
    )
    expect(fileUri(["x"], "emoji 🧪.md")).toBe("skill://x/emoji%20%F0%9F%A7%AA.md")
  })

  it("round-trips what it builds", () => {
    const uri = fileUri(["été", "pdf"], "références/guide #1.md")
    expect(parseSkillUri(uri)).toEqual(Either.right(["été", "pdf", "références", "guide #1.md"]))
  })

  it.each([
    "file:///etc/passwd",
    "skill://pdf/../secret",
    "skill://pdf/%2e%2e/secret",
    "skill://pdf/a%2fb",
    "skill://pdf/a%5cb",
    "skill://pdf//x",
    "skill://pdf/x?y",
    "skill://pdf/x#y",
    "skill://pdf/%zz",
    "skill://pdf/a%00b",
    `skill://${"a/".repeat(3000)}b`,
  ])("refuses %s", (uri) => {
    expect(Either.isLeft(parseSkillUri(uri))).toBe(true)
  })

  it("resolves the claim whose base prefixes the URI, and prompt-xml before any skill", () => {
    const nested = skill("refunds", "refunds", ["acme", "billing", "refunds"])
    const human = skill("notes", "Release Notes", ["notes"])
    const space = {
      deepest: 3,
      claims: new Map([
        ["acme/billing/refunds", { skill: nested, base: ["acme", "billing", "refunds"], published: true }],
        ["notes", { skill: human, base: ["notes"], published: false }],
        ["café", { skill: human, base: ["café"], published: false }],
      ]),
    }
    expect(resolveSegments(space, ["acme", "billing", "refunds", "SKILL.md"])).toMatchObject({
      skill: nested,
      published: true,
      rest: ["SKILL.md"],
    })
    expect(resolveSegments(space, ["notes", "_manifest"])).toMatchObject({
      skill: human,
      published: false,
      rest: ["_manifest"],
    })
    // Either Unicode normalisation form of a segment finds its claim.
    expect(resolveSegments(space, ["cafe\u0301"])).toMatchObject({ skill: human, base: ["café"] })
    expect(resolveSegments(space, ["prompt-xml"])).toEqual({ _tag: "PromptXml" })
    expect(resolveSegments(space, ["acme", "billing"])).toBeUndefined()
    expect(resolveSegments(space, ["nobody"])).toBeUndefined()
  })
})
