import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { Catalog } from "../src/Catalog.js"
import { usageGuide } from "../src/instructions.js"
import { budgetWarnings } from "../src/mcp/Server.js"
import { callTool, ListSkillsResult, listedCatalog, listedSize, toolDefinitions } from "../src/mcp/tools.js"
import { defaults, type SettingsShape } from "../src/Settings.js"
import { auditMemory, servicesFor } from "./support/layers.js"
import { skillMd, tempTree } from "./support/tree.js"

const listSkills = (root: string, args: Record<string, unknown> = {}) =>
  callTool("list_skills", args).pipe(Effect.provide(servicesFor([root])), Effect.provide(auditMemory))

describe("list_skills", () => {
  it.scoped("gives each skill one text line, its description's whitespace runs collapsed", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({
        "folded/SKILL.md": skillMd("folded", "|\n  Reads PDF files.\n  Use it\tfor  forms."),
        "plain/SKILL.md": skillMd("plain", "Writes release notes from the changelog."),
        "nbsp/SKILL.md": skillMd("nbsp", "'A\u00a0no-break space.'"),
        "spaced/SKILL.md": skillMd("spaced", "'Two  spaces.'"),
      })
      const output = yield* listSkills(root)
      expect(output.text.split("\n").slice(1)).toEqual([
        "- folded: Reads PDF files. Use it for forms. ",
        "- nbsp: A no-break space.",
        "- plain: Writes release notes from the changelog.",
        "- spaced: Two spaces.",
      ])
      // The structured result keeps each description as written, and is the schema's own form.
      const structured = yield* Schema.decodeUnknown(ListSkillsResult)(output.structured)
      expect(structured.skills.map((skill) => skill.description)).toEqual([
        "Reads PDF files.\nUse it\tfor  forms.\n",
        "A\u00a0no-break space.",
        "Writes release notes from the changelog.",
        "Two  spaces.",
      ])
      expect(structured.total).toBe(4)
    }),
  )
})

/** The catalog of a tree of skills made for the test. */
const snapshotOf = (tree: Record<string, string>) =>
  Effect.flatMap(tempTree(tree), (root) =>
    Effect.flatMap(Catalog, (catalog) => catalog.snapshot).pipe(Effect.provide(servicesFor([root]))),
  )

describe("toolDefinitions", () => {
  it.scoped("fits tools/list within every budget that has room for a catalog, and carries one", () =>
    Effect.gen(function* () {
      // Descriptions of many lengths, with characters JSON escapes (quotes, backslashes, tabs),
      // so that the catalog's escaped size and the room it leaves free vary from one cut to the next.
      const tree: Record<string, string> = {}
      for (let index = 0; index < 12; index++) {
        const words = Array.from({ length: 3 + ((index * 7) % 23) }, (_, word) => `w${word}`).join(" ")
        tree[`skill-${index}/SKILL.md`] = skillMd(`skill-${index}`, `'Use "${words}" \\ a\ttab ${index}.'`)
      }
      const snapshot = yield* snapshotOf(tree)
      const bare = listedSize(toolDefinitions(snapshot, 0))
      const missed: Array<number> = []
      for (let budget = bare + 400; budget <= bare + 4_000; budget++) {
        const tools = toolDefinitions(snapshot, budget)
        expect(listedSize(tools)).toBeLessThanOrEqual(budget)
        if (!(tools[1]?.description ?? "").includes("<available_skills>")) missed.push(budget)
      }
      expect(missed).toEqual([])
    }),
  )

  it.scoped("fills the budget with a catalog whose descriptions JSON doubles (backslashes)", () =>
    Effect.gen(function* () {
      const tree: Record<string, string> = {}
      for (let index = 0; index < 40; index++) {
        tree[`slashes-${index}/SKILL.md`] = skillMd(`slashes-${index}`, `'${"\\".repeat(100)} ${index}'`)
      }
      const snapshot = yield* snapshotOf(tree)
      const bare = listedSize(toolDefinitions(snapshot, 0))
      // An entry takes about 260 characters of JSON, the line on the skills left out about 200:
      // what a listing leaves unused is less than an entry and that line.
      const unused: Array<number> = []
      for (let budget = bare + 1_000; budget <= bare + 8_000; budget += 50) {
        const size = listedSize(toolDefinitions(snapshot, budget))
        expect(size).toBeLessThanOrEqual(budget)
        unused.push(budget - size)
      }
      expect(Math.max(...unused)).toBeLessThan(500)
    }),
  )
})

describe("budgetWarnings", () => {
  it.scoped("names each budget that leaves no room for a catalog where one is placed, and only those", () =>
    Effect.gen(function* () {
      const snapshot = yield* snapshotOf({
        "pdf/SKILL.md": skillMd("pdf", "Reads PDF files."),
        "notes/SKILL.md": skillMd("notes", "Writes release notes."),
      })
      const warn = (overrides: Partial<SettingsShape>) =>
        budgetWarnings(snapshot, { ...defaults, ...overrides })
      const bare = listedSize(toolDefinitions(snapshot, 0))
      const guide = usageGuide({ xml: false, loader: "tools" }).length
      const hostGuide = usageGuide({ xml: false, loader: "host" }).length

      expect(warn({})).toEqual([])
      // Below the tool definitions: sent whole. Above them but with no room left: said too.
      const [over] = warn({ catalogBudget: 3_000 })
      expect(warn({ catalogBudget: 3_000 })).toHaveLength(1)
      expect(over).toContain(`The tools/list budget of 3000 characters`)
      expect(over).toContain(
        `the tool definitions alone takes ${bare} characters, more than the budget, and is sent whole`,
      )
      expect(warn({ toolsBudget: bare + 50 })).toEqual([
        expect.stringContaining(`the tool definitions alone takes ${bare} characters.`),
      ])
      expect(listedCatalog(toolDefinitions(snapshot, bare + 50))).toBe(false)
      expect(warn({ toolsBudget: bare + 4 * 200 })).toEqual([])
      expect(listedCatalog(toolDefinitions(snapshot, bare + 4 * 200))).toBe(true)

      expect(warn({ instructionsBudget: 500 })).toEqual([
        expect.stringContaining(
          `the usage guide alone takes ${guide} characters, more than the budget, and is sent whole`,
        ),
      ])
      expect(warn({ instructionsBudget: guide + 100 })).toEqual([
        expect.stringContaining(`The instructions budget of ${guide + 100} characters`),
      ])
      // Under --tools auto, both guides; under --tools never, the host's and no tools/list.
      expect(warn({ tools: "auto", instructionsBudget: guide + 100 })).toEqual([
        expect.stringContaining("the usage guide for clients shown tools alone"),
      ])
      const auto = warn({ tools: "auto", instructionsBudget: hostGuide + 100, toolsBudget: 1_000 })
      expect(auto).toEqual([
        expect.stringContaining(
          `the usage guide for clients shown tools alone takes ${guide} characters, more`,
        ),
        expect.stringContaining(
          `the usage guide for clients shown no tools alone takes ${hostGuide} characters.`,
        ),
        expect.stringContaining("The tools/list budget of 1000"),
      ])
      expect(warn({ tools: "never", catalogBudget: hostGuide + 100 })).toEqual([
        expect.stringContaining(`the usage guide alone takes ${hostGuide} characters.`),
      ])
      // No catalog asked for (budget 0, or placed elsewhere): nothing to say.
      expect(warn({ catalogBudget: 0 })).toEqual([])
      expect(warn({ catalogPlacement: "none", catalogBudget: 100 })).toEqual([])
      expect(warn({ catalogPlacement: "tool", instructionsBudget: 100 })).toEqual([])
      expect(warn({ catalogPlacement: "instructions", toolsBudget: 100 })).toEqual([])
    }),
  )
})
