import { describe, expect, it } from "@effect/vitest"
import { bestFirst, escapeXml, renderAvailableSkills, usageGuide } from "../src/instructions.js"

const entries = Array.from({ length: 200 }, (_, i) => ({
  id: `skill-${i}`,
  name: i === 0 ? "First & <Best>" : `skill-${i}`,
  description: `Does thing number ${i} with "quotes".`,
}))

describe("renderAvailableSkills", () => {
  it("lists every entry, XML-escaped, when they fit", () => {
    const xml = renderAvailableSkills(entries.slice(0, 2), 10_000)
    expect(xml).toBe(
      [
        "<available_skills>",
        "<skill>",
        "<id>skill-0</id>",
        "<name>First &amp; &lt;Best&gt;</name>",
        '<description>Does thing number 0 with "quotes".</description>',
        "</skill>",
        "<skill>",
        "<id>skill-1</id>",
        '<description>Does thing number 1 with "quotes".</description>',
        "</skill>",
        "</available_skills>",
      ].join("\n"),
    )
  })

  it.each([500, 2_000, 8_000])(
    "stays within a budget of %i characters and says how many more exist",
    (budget) => {
      const xml = renderAvailableSkills(entries, budget)
      expect(xml.length).toBeLessThanOrEqual(budget)
      const shown = xml.split("<skill>").length - 1
      expect(xml).toContain(`${200 - shown} more skills not shown here: call list_skills`)
    },
  )

  it("lists the best entries: earlier roots first, skills without errors first, then catalog order", () => {
    const error = [{ severity: "error" as const }]
    const warning = [{ severity: "warning" as const }]
    const mixed = [
      { id: "second-root", name: "second-root", description: "d", rootIndex: 1 },
      { id: "bad-name", name: "Bad Name", description: "d", rootIndex: 0, diagnostics: error },
      { id: "warned", name: "warned", description: "d", rootIndex: 0, diagnostics: warning },
      { id: "fine", name: "fine", description: "d", rootIndex: 0 },
    ]
    expect(bestFirst(mixed).map((entry) => entry.id)).toEqual(["warned", "fine", "bad-name", "second-root"])
    const xml = renderAvailableSkills(mixed, 10_000)
    expect([...xml.matchAll(/<id>(.*)<\/id>/g)].map((match) => match[1])).toEqual([
      "warned",
      "fine",
      "bad-name",
      "second-root",
    ])
  })

  it("never cuts a description: an entry that does not fit is passed over for shorter ones", () => {
    const long = { id: "long", name: "long", description: "x".repeat(600) }
    const short = Array.from({ length: 20 }, (_, i) => ({
      id: `s${i}`,
      name: `s${i}`,
      description: "Short.",
    }))
    const xml = renderAvailableSkills([long, ...short], 700)
    expect(xml.length).toBeLessThanOrEqual(700)
    expect(xml).not.toContain("xxx")
    const shown = xml.split("<skill>").length - 1
    expect(shown).toBeGreaterThan(0)
    expect(xml).toContain(`${21 - shown} more skills not shown here`)
    expect(xml).toContain("search all 21 skills")
  })

  it("escapes the characters that matter in element content", () => {
    expect(escapeXml(`<a href="x">'&'</a>`)).toBe(`&lt;a href="x"&gt;'&amp;'&lt;/a&gt;`)
  })
})

describe("usageGuide", () => {
  it("is wrapped in <skills-mcp-instructions> unless xml is off", () => {
    expect(usageGuide()).toMatch(/^<skills-mcp-instructions>\n[\s\S]+\n<\/skills-mcp-instructions>$/)
    expect(usageGuide({ xml: false })).not.toContain("<skills-mcp-instructions>")
    expect(usageGuide({ xml: false })).toContain("get_skill")
  })
})
