import * as Either from "effect/Either"
import { describe, expect, it } from "vitest"
import { publish } from "../src/catalog/Publication.js"
import type { Skill } from "../src/catalog/Snapshot.js"
import { MAX_URI_CHARS, parseSkillUri, resolveSegments } from "../src/skills/Uris.js"

const skill = (
  id: string,
  name: string,
  segments: ReadonlyArray<string>,
  description = "Does a thing.",
): Skill => ({
  id,
  name,
  description,
  dir: `/r/${segments.join("/")}`,
  file: `/r/${segments.join("/")}/SKILL.md`,
  root: "/r",
  rootReal: "/r",
  rootIndex: 0,
  segments,
  fingerprint: { dev: 1, ino: 1, size: 1, mtimeMs: 1, ctimeMs: 1 },
  frontmatter: { raw: { name, description }, fields: { name, description }, endLine: 4 },
  diagnostics: [],
})

const owner = (skills: ReadonlyArray<Skill>, uri: ReadonlyArray<string>) =>
  resolveSegments(publish(skills), uri)

describe("publish", () => {
  it("gives the URIs two skill paths share to the first skill in priority order only", () => {
    const pdf = skill("pdf", "pdf", ["pdf"])
    const nested = skill("references", "references", ["pdf", "references"])
    for (const order of [
      [pdf, nested],
      [nested, pdf],
    ]) {
      const first = order[0] as Skill
      const publication = publish(order)
      expect(publication.published).toEqual([first])
      expect(owner(order, ["pdf", "references", "forms.md"])).toMatchObject({ skill: first })
    }
  })

  it("gives a name twin of another skill's id no URI of that skill's", () => {
    const twin = skill("aaa", "xlsx", ["aaa"])
    const xlsx = skill("xlsx", "xlsx", ["xlsx"])
    const publication = publish([twin, xlsx])
    expect(publication.published).toEqual([xlsx])
    expect(publication.unpublished[0]?.reason).toContain("id of another skill")
    expect(owner([twin, xlsx], ["xlsx", "SKILL.md"])).toMatchObject({ skill: xlsx })
    // The twin keeps its id's URI, for older clients.
    expect(publication.addresses.get(twin)).toEqual({ base: ["aaa"], published: false })
  })

  it("publishes only what a verifying host accepts, and gives the rest their id's URI", () => {
    const skills = [
      skill("long", "long", ["long"], "x".repeat(1_025)),
      skill("café", "café", ["café"]),
      skill("human", "Human Name", ["human"]),
      skill("ok", "ok", ["ok"], "y".repeat(1_024)),
    ]
    const publication = publish(skills)
    expect(publication.published.map((s) => s.id)).toEqual(["ok"])
    expect(publication.unpublished.map((s) => s.id)).toEqual(["long", "café", "human"])
    expect(skills.map((s) => publication.addresses.get(s)?.base.join("/"))).toEqual([
      "long",
      "café",
      "human",
      "ok",
    ])
  })

  it("leaves the catalog documents' URIs to them, and gives a skill with no free URI none", () => {
    const diagnostics = skill("diagnostics", "Diagnostics Skill", ["diagnostics"])
    const group = skill("acme", "Acme", ["acme"])
    const nested = skill("refunds", "refunds", ["acme", "billing", "refunds"])
    const publication = publish([diagnostics, group, nested])
    expect(publication.addresses.get(diagnostics)).toBeUndefined()
    // acme's id URI would hold the published path acme/billing/refunds.
    expect(publication.addresses.get(group)).toBeUndefined()
    expect(publication.addresses.get(nested)).toEqual({
      base: ["acme", "billing", "refunds"],
      published: true,
    })
  })

  it("resolves URIs thousands of segments deep to the claim at any depth", () => {
    const pdf = skill("pdf", "pdf", ["pdf"])
    const refunds = skill("refunds", "refunds", ["acme", "billing", "refunds"])
    const cafe = skill("café", "Café Notes", ["café"]) // unpublished: claims its id, composed
    const deep = skill("deep", "deep", ["a", "b", "c", "d", "deep"])
    const skills = [pdf, refunds, cafe, deep]
    const parsed = (uri: string) => {
      expect(uri.length).toBeLessThanOrEqual(MAX_URI_CHARS)
      return Either.getOrThrow(parseSkillUri(uri))
    }
    // 1,361 segments: the longest URI accepted.
    const under = parsed(`skill://pdf/${"ab/".repeat(1_359)}x`)
    expect(under).toHaveLength(1_361)
    expect(owner(skills, under)).toMatchObject({ skill: pdf, base: ["pdf"], rest: under.slice(1) })
    const nested = parsed(`skill://acme/billing/refunds/${"ab/".repeat(1_350)}x`)
    expect(owner(skills, nested)).toMatchObject({ skill: refunds, rest: nested.slice(3) })
    // Decomposed segments find the composed claim; the rest stays as written.
    const decomposed = parsed(`skill://cafe\u0301/${"e\u0301/".repeat(1_300)}x`)
    expect(owner(skills, decomposed)).toMatchObject({
      skill: cafe,
      base: ["café"],
      published: false,
      rest: decomposed.slice(1),
    })
    expect(decomposed[1]).toBe("e\u0301")
    expect(owner(skills, ["a", "b", "c", "d", "deep", ...under])).toMatchObject({ skill: deep })
    expect(owner(skills, ["a", "b", "c", "d"])).toBeUndefined()
    expect(owner(skills, parsed(`skill://acme/billing/${"ab/".repeat(1_350)}x`))).toBeUndefined()
    expect(owner(skills, parsed(`skill://${"ab/".repeat(1_360)}pdf`))).toBeUndefined()
  })
})
