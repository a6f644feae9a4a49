import { describe, expect, it } from "@effect/vitest"
import { escapeXml, renderAvailableSkills, usageGuide } from "../src/instructions.js"

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
