import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { Catalog } from "../src/Catalog.js"
import { callTool, ListSkillsResult, listedSize, toolDefinitions } from "../src/mcp/tools.js"
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
      const root = yield* tempTree(tree)
      const snapshot = yield* Effect.flatMap(Catalog, (catalog) => catalog.snapshot).pipe(
        Effect.provide(servicesFor([root])),
      )
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
})
