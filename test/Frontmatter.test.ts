import { describe, expect, it, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import { Fs } from "../src/platform/Fs.js"
import { Settings } from "../src/Settings.js"
import { Frontmatter, parseSkillText, splitFrontmatter } from "../src/skills/Frontmatter.js"
import { MAX_YAML_DEPTH } from "../src/skills/Yaml.js"
import { tempTree } from "./support/tree.js"

const parse = (text: string) => parseSkillText("/skills/x/SKILL.md", text)

const failure = (text: string) => {
  const result = parse(text)
  if (Either.isRight(result)) throw new Error("expected a failure")
  return result.left
}

describe("splitFrontmatter", () => {
  it("splits frontmatter and body", () => {
    const split = splitFrontmatter("---\nname: a\n---\n# Body\n")
    expect(split).toEqual({
      _tag: "Split",
      value: { yaml: "name: a\n", startLine: 1, endLine: 3, body: "# Body\n" },
    })
  })

  it("tolerates a BOM, CRLF line ends and blank lines before the opening ---", () => {
    const split = splitFrontmatter("\uFEFF\r\n  \r\n---\r\nname: a\r\n---\r\nbody\r\n")
    expect(split._tag).toBe("Split")
    if (split._tag !== "Split") return
    expect(split.value.startLine).toBe(3)
    expect(split.value.endLine).toBe(5)
    expect(split.value.body).toBe("body\r\n")
  })

  it("does not end the frontmatter at a --- inside a value", () => {
    const text = "---\nname: a\ndescription: before --- after\nnote: |\n  ---x\n---\nbody"
    const split = splitFrontmatter(text)
    expect(split._tag === "Split" && split.value.body).toBe("body")
  })

  it("reports a missing closing --- and a missing frontmatter", () => {
    expect(splitFrontmatter("---\nname: a\n")).toEqual({ _tag: "NotClosed", startLine: 1 })
    expect(splitFrontmatter("# Title\n---\nname: a\n---\n")).toEqual({ _tag: "NoFrontmatter" })
    expect(splitFrontmatter("")).toEqual({ _tag: "NoFrontmatter" })
  })
})

describe("parseSkillText", () => {
  it("decodes the specification's fields and keeps every field verbatim", () => {
    const result = parse(
      [
        "---",
        "name: pdf",
        "description: Work with PDFs",
        "license: MIT",
        "compatibility: Python 3",
        "metadata:",
        "  author: me",
        '  version: "1.0"',
        "allowed-tools: Bash Read",
        "requires: [python, pypdf]",
        "---",
        "body",
      ].join("\n"),
    )
    expect(Either.isRight(result)).toBe(true)
    if (Either.isLeft(result)) return
    expect(result.right.fields).toEqual({
      name: "pdf",
      description: "Work with PDFs",
      license: "MIT",
      compatibility: "Python 3",
      metadata: { author: "me", version: "1.0" },
      "allowed-tools": "Bash Read",
      requires: ["python", "pypdf"],
    })
    expect(result.right.raw["allowed-tools"]).toBe("Bash Read")
    expect(result.right.body).toBe("body")
  })

  it("leaves out known fields of the wrong type (Validation reports them)", () => {
    const result = parse("---\nname: a\ndescription: b\nmetadata:\n  version: 1\nlicense: [MIT]\n---\n")
    expect(Either.isRight(result) && result.right.fields).toEqual({ name: "a", description: "b" })
    expect(Either.isRight(result) && result.right.raw.metadata).toEqual({ version: 1 })
  })

  it("uses YAML 1.2 core: yes/no and dates stay strings, flow lists are lists", () => {
    const result = parse("---\nname: a\ndescription: b\nflag: yes\nwhen: 2024-01-01\ntags: [x, y]\n---\n")
    expect(Either.isRight(result) && result.right.raw).toEqual({
      name: "a",
      description: "b",
      flag: "yes",
      when: "2024-01-01",
      tags: ["x", "y"],
    })
  })

  it.each([
    ["missing name", "---\ndescription: b\n---\n", "missing required field 'name'"],
    ["missing description", "---\nname: a\n---\n", "missing required field 'description'"],
    ["non-string name", "---\nname: 12\ndescription: b\n---\n", "'name' must be a string"],
    ["empty description", "---\nname: a\ndescription: '  '\n---\n", "'description' is empty"],
    ["empty frontmatter", "---\n---\nbody", "the frontmatter is empty"],
    ["a list, not a mapping", "---\n- a\n- b\n---\n", "must be a YAML mapping"],
    ["no frontmatter", "# Title\n", "no frontmatter"],
    ["not closed", "---\nname: a\ndescription: b\n", "not closed"],
    ["custom tag", "---\nname: a\ndescription: !!js/function 'f()'\n---\n", "YAML tags are not allowed"],
    ["binary tag", "---\nname: a\ndescription: b\nlogo: !!binary aGk=\n---\n", "YAML tags are not allowed"],
    ["duplicate keys", "---\nname: a\nname: b\ndescription: c\n---\n", "YAML error"],
  ])("fails on %s", (_label, text, reason) => {
    const error = failure(text)
    expect(error._tag).toBe("MalformedFrontmatter")
    expect(error.reason).toContain(reason)
  })

  it("gives the file line of a YAML error", () => {
    const error = failure("\n---\nname: a\ndescription: [never closed\n---\n")
    expect(error.reason).toContain("YAML error")
    expect(error.line).toBeGreaterThanOrEqual(4)
    expect(error.message).toContain("/skills/x/SKILL.md:")
  })

  it.each([
    ["flow lists", `x: ${"[".repeat(100_000)}${"]".repeat(100_000)}`, 4],
    ["flow maps", `x: ${"{a: ".repeat(100_000)}${"}".repeat(100_000)}`, 4],
    ["compact lists", `x:\n${"- ".repeat(100_000)}v`, 5],
    // The top-level map is the first level; the key on file line 4 + 64 opens the 65th.
    [
      "block maps",
      Array.from({ length: 600 }, (_, depth) => `${" ".repeat(depth)}k${depth}:`).join("\n"),
      68,
    ],
  ])("refuses %s nested deeper than the limit, naming it and the line", (_label, yaml, line) => {
    const error = failure(`---\nname: a\ndescription: b\n${yaml}\n---\nbody`)
    expect(error.rule).toBe("yaml-invalid")
    expect(error.reason).toContain(`nested more than ${MAX_YAML_DEPTH} levels deep`)
    expect(error.line).toBe(line)
  })

  it("reads nesting up to the limit as before", () => {
    const depth = MAX_YAML_DEPTH - 2
    const result = parse(`---\nname: a\ndescription: b\nx: ${"[".repeat(depth)}${"]".repeat(depth)}\n---\n`)
    expect(Either.isRight(result)).toBe(true)
    if (Either.isLeft(result)) return
    let inner: unknown = result.right.raw.x
    let levels = 0
    while (Array.isArray(inner)) {
      levels++
      inner = inner[0]
    }
    expect(levels).toBe(depth)
  })

  it.each([
    ["an unclosed double quote", 'name: a\ndescription: "never closed\nlicense: MIT\nother: x', 3, "closing"],
    ["an unclosed single quote", "name: a\ndescription: b\nmetadata:\n  x: 'oops\n  y: z", 5, "closing"],
    ["an unclosed flow list", "name: a\ndescription: [never closed\nlicense: MIT", 3, "'['"],
    ["an unclosed flow list on the last line", "name: a\ndescription: b\ntags: [a,\n  b", 4, "'['"],
    ["an unclosed flow map", "name: a\ndescription: b\nmeta: {a: b", 4, "'{'"],
    [
      "an over-indented key",
      "name: a\ndescription: b\nmetadata:\n  x: y\n   z: w\nlicense: MIT",
      6,
      "indented",
    ],
    ["an over-indented top-level key", "name: a\n  description: b\nlicense: MIT", 3, "indented"],
    ["a key with no value", "name: a\ndescription: b\nlicense", 4, "map values"],
  ])("points a YAML error at the line where the problem starts: %s", (_label, yaml, line, hint) => {
    const error = failure(`---\n${yaml}\n---\nbody`)
    expect(error.rule).toBe("yaml-invalid")
    expect(error.reason).toContain(hint)
    expect(error.line).toBe(line)
  })

  it("stops an alias bomb (billion laughs) quickly", () => {
    const bomb = [
      "---",
      "a: &a [x, x, x, x, x, x, x, x, x]",
      "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]",
      "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]",
      "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]",
      "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]",
      "name: [*e, *e, *e, *e, *e, *e, *e, *e, *e]",
      "description: boom",
      "---",
    ].join("\n")
    const error = failure(bomb)
    expect(error.reason).toMatch(/alias|resource/i)
  })
})

layer(
  Frontmatter.Default.pipe(Layer.provide(Layer.merge(Settings.make({ maxFileBytes: 64 * 1024 }), Fs.node))),
)("Frontmatter.read", (it) => {
  it.scoped("reads only the head of a large SKILL.md", () =>
    Effect.gen(function* () {
      const body = "x".repeat(200_000)
      const root = yield* tempTree({ "a/SKILL.md": `---\nname: a\ndescription: b\n---\n${body}` })
      const parsed = yield* Frontmatter.pipe(Effect.flatMap((fm) => fm.read(`${root}/a/SKILL.md`)))
      expect(parsed.fields.name).toBe("a")
      expect(parsed.body.length).toBeLessThan(32 * 1024)
    }),
  )

  it.scoped("reads a frontmatter that spans several chunks", () =>
    Effect.gen(function* () {
      const long = "word ".repeat(8_000)
      const root = yield* tempTree({
        "a/SKILL.md": `---\nname: a\ndescription: b\nnotes: ${long}\n---\nbody`,
      })
      const parsed = yield* Frontmatter.pipe(Effect.flatMap((fm) => fm.read(`${root}/a/SKILL.md`)))
      expect(String(parsed.raw.notes).length).toBeGreaterThan(39_000)
    }),
  )

  it.scoped("refuses a frontmatter that never closes within the cap", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({ "a/SKILL.md": `---\nname: a\ndescription: ${"b".repeat(100_000)}\n` })
      const error = yield* Frontmatter.pipe(
        Effect.flatMap((fm) => Effect.flip(fm.read(`${root}/a/SKILL.md`))),
      )
      expect(error.reason).toContain("not closed within the first 65536 bytes")
    }),
  )

  it.scoped("reports an unreadable file without failing the caller's fiber", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({})
      const error = yield* Frontmatter.pipe(
        Effect.flatMap((fm) => Effect.flip(fm.read(`${root}/missing/SKILL.md`))),
      )
      expect(error.reason).toContain("no such file")
    }),
  )
})
