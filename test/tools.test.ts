import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { AuditLog } from "../src/AuditLog.js"
import { Catalog } from "../src/catalog/Catalog.js"
import { usageGuide } from "../src/instructions.js"
import { budgetWarnings } from "../src/mcp/Guide.js"
import type { ToolOutput } from "../src/mcp/Run.js"
import {
  callTool,
  ListSkillsResult,
  listedCatalog,
  listedSize,
  ReadSkillFileResult,
  toolDefinitions,
} from "../src/mcp/tools.js"
import { defaults, type SettingsShape } from "../src/Settings.js"
import { servicesFor } from "./support/layers.js"
import { skillMd, tempTree } from "./support/tree.js"

const listSkills = (root: string, args: Record<string, unknown> = {}) =>
  callTool("list_skills", args).pipe(Effect.provide(servicesFor([root])), Effect.provide(AuditLog.silent))

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

const readFile = (root: string, args: Record<string, unknown>) =>
  callTool("read_skill_file", args).pipe(Effect.provide(servicesFor([root])), Effect.provide(AuditLog.silent))

/** A file of `lines` numbered lines of about 40 characters each. */
const numberedLines = (lines: number) =>
  Array.from({ length: lines }, (_, index) => `line ${index + 1} ${"x".repeat(30)}\n`).join("")

describe("read_skill_file", () => {
  it.scoped("answers a file's text once: the structured result holds its metadata, not a copy", () =>
    Effect.gen(function* () {
      // 74 KB of markdown in 1,800 lines: one part, under both caps.
      const guide = numberedLines(1_800)
      expect(guide.length).toBeGreaterThan(70_000)
      const root = yield* tempTree({
        "pdf/SKILL.md": skillMd("pdf", "PDFs."),
        "pdf/references/guide.md": guide,
      })
      const output = yield* readFile(root, { id: "pdf", path: "references/guide.md" })
      expect(output.text).toBe(guide)
      const structured = yield* Schema.decodeUnknown(ReadSkillFileResult)(output.structured)
      expect(structured).toEqual({
        id: "pdf",
        path: "references/guide.md",
        type: "file",
        size: guide.length,
        mimeType: "text/markdown",
        startLine: 1,
        endLine: 1_800,
        totalLines: 1_800,
        truncated: false,
      })
      expect(JSON.stringify(output.structured).length).toBeLessThan(300)
    }),
  )

  it.scoped("pages through a long file by lines; the parts put together are the file", () =>
    Effect.gen(function* () {
      // 5,000 lines (about 200 KB, the last without a newline): three parts of up to 2,000 lines.
      const text = `${numberedLines(4_999)}last line, no newline`
      const root = yield* tempTree({
        "pdf/SKILL.md": skillMd("pdf", "PDFs."),
        "pdf/references/long.txt": text,
      })
      const parts: Array<string> = []
      let offset: number | undefined = 1
      const starts: Array<number> = []
      while (offset !== undefined) {
        starts.push(offset)
        const output: ToolOutput = yield* readFile(root, { id: "pdf", path: "references/long.txt", offset })
        const structured: typeof ReadSkillFileResult.Type = yield* Schema.decodeUnknown(ReadSkillFileResult)(
          output.structured,
        )
        expect(structured.totalLines).toBe(5_000)
        expect(structured.startLine).toBe(offset)
        const next: number | undefined = structured.nextOffset
        if (next === undefined) {
          expect(structured.endLine).toBe(5_000)
          expect(structured.truncated).toBe(false)
          parts.push(output.text)
        } else {
          expect(structured.truncated).toBe(true)
          const note = `\n[Lines ${offset}-${next - 1} of 5000 shown. To read on, call read_skill_file {"id":"pdf","path":"references/long.txt","offset":${next}}]`
          expect(output.text.endsWith(note)).toBe(true)
          parts.push(output.text.slice(0, -note.length))
        }
        offset = next
      }
      expect(starts).toEqual([1, 2_001, 4_001])
      expect(parts.join("")).toBe(text)
    }),
  )

  it.scoped("reads the lines asked for, caps a part at 100,000 characters, and cuts a longer line", () =>
    Effect.gen(function* () {
      const long = "y".repeat(150_000)
      const text = `one\ntwo\nthree\n${"z".repeat(60_000)}\n${"w".repeat(60_000)}\n${long}\nend\n`
      const root = yield* tempTree({ "pdf/SKILL.md": skillMd("pdf", "PDFs."), "pdf/data.txt": text })
      const read = (args: Record<string, unknown>) => readFile(root, { id: "pdf", path: "data.txt", ...args })

      const middle = yield* read({ offset: 2, limit: 2 })
      expect(middle.text).toBe(
        'two\nthree\n\n[Lines 2-3 of 7 shown. To read on, call read_skill_file {"id":"pdf","path":"data.txt","offset":4,"limit":2}]',
      )
      expect(middle.structured).toMatchObject({ startLine: 2, endLine: 3, totalLines: 7, nextOffset: 4 })

      // Two lines of 60,000 characters do not fit in one part: the second comes next.
      const capped = yield* read({ offset: 4 })
      expect(capped.structured).toMatchObject({ startLine: 4, endLine: 4, nextOffset: 5 })

      const cut = yield* read({ offset: 6 })
      expect(cut.text.startsWith("y".repeat(100_000))).toBe(true)
      expect(cut.text).toContain("[Line 6 is 150000 characters long; only its first 100000 are shown.]")
      expect(cut.text).toContain('call read_skill_file {"id":"pdf","path":"data.txt","offset":7}')
      expect(cut.structured).toMatchObject({ startLine: 6, endLine: 6, nextOffset: 7, truncated: true })

      const last = yield* read({ offset: 7 })
      expect(last.text).toBe("end\n")
    }),
  )

  it.scoped("refuses an offset past the end, naming the file's length", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({
        "pdf/SKILL.md": skillMd("pdf", "PDFs."),
        "pdf/notes.md": "a\nb\n",
        "pdf/empty.md": "",
      })
      const error = yield* Effect.flip(readFile(root, { id: "pdf", path: "notes.md", offset: 3 }))
      expect(error._tag).toBe("InvalidArgument")
      expect(error.message).toBe(
        "Invalid argument 'offset': line 3 is past the end of 'notes.md', which has 2 lines",
      )
      // An empty file has an empty first page.
      const empty = yield* readFile(root, { id: "pdf", path: "empty.md" })
      expect(empty.text).toBe("")
      expect(empty.structured).toMatchObject({ startLine: 1, endLine: 0, totalLines: 0, truncated: false })
      const zero = yield* Effect.flip(readFile(root, { id: "pdf", path: "notes.md", offset: 0 }))
      expect(zero.message).toContain("Invalid argument 'offset'")
    }),
  )
})
