/**
 * The fast frontmatter reader must agree with the `yaml` package on everything it accepts, and the
 * watched parse behind it (nesting limited) with `parseDocument` on everything
 * (and refuse what it cannot read exactly). Property-based, with Effect's bundled fast-check.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Either from "effect/Either"
import * as fc from "effect/FastCheck"
import type { Document } from "yaml"
import { parseDocument, visit } from "yaml"
import { parseFrontmatterYaml } from "../src/skills/Frontmatter.js"
import { parseSimpleYaml } from "../src/skills/SimpleYaml.js"
import { YAML_OPTIONS as SAFE } from "../src/skills/Yaml.js"

const yamlOf = (text: string) => {
  const doc = parseDocument(text, SAFE)
  return doc.errors.length > 0 || doc.warnings.length > 0 ? "invalid" : doc.toJS()
}

const hostile = fc.constantFrom(
  " ",
  "  ",
  ":",
  ": ",
  "#",
  " #",
  "'",
  "''",
  '"',
  "\\",
  "-",
  "?",
  "[",
  "]",
  "{",
  "}",
  ",",
  "&",
  "*",
  "!",
  "|",
  ">",
  "%",
  "@",
  "`",
  "1",
  "0x1F",
  "1.5",
  ".inf",
  "~",
  "null",
  "true",
  "False",
  "\t",
  "\r",
  "\u2028",
)
const word = fc.constantFrom(
  "pdf",
  "Extract",
  "text",
  "é",
  "日本",
  "😀",
  "http://x",
  "a:b",
  "C#",
  "v2",
  "Don't",
  "x-y",
)
const words = fc.array(word, { minLength: 1, maxLength: 5 }).map((parts) => parts.join(" "))
const scalar = fc.oneof(
  { weight: 5, arbitrary: words },
  { weight: 2, arbitrary: fc.tuple(words, hostile, words).map(([a, b, c]) => `${a}${b}${c}`) },
  { weight: 2, arbitrary: fc.tuple(hostile, words).map(([a, b]) => `${a}${b}`) },
  { weight: 1, arbitrary: words.map((w) => `'${w.replaceAll("'", "''")}'`) },
  { weight: 1, arbitrary: fc.tuple(words, hostile).map(([w, h]) => `"${w}${h}"`) },
  { weight: 1, arbitrary: fc.array(hostile, { maxLength: 4 }).map((parts) => parts.join("")) },
)
const key = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.constantFrom(
      "name",
      "description",
      "license",
      "metadata",
      "version",
      "x-y",
      "a.b",
      "_k",
      "k",
    ),
  },
  { weight: 1, arbitrary: fc.constantFrom("1", "true", "__proto__", "name ", "-k", "k#") },
)
const entry = fc.oneof(
  { weight: 6, arbitrary: fc.tuple(key, scalar).map(([k, v]) => `${k}: ${v}`) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(key, fc.constantFrom("  ", "    ", " "), fc.array(fc.tuple(key, scalar), { maxLength: 3 }))
      .map(([k, indent, subs]) => [`${k}:`, ...subs.map(([sk, sv]) => `${indent}${sk}: ${sv}`)].join("\n")),
  },
  {
    // Block scalars: plain ones the fast path reads, and shapes it must leave to the parser
    // (keep chomping, indicators, comments, deeper or blank lines, trailing spaces).
    weight: 3,
    arbitrary: fc
      .tuple(
        key,
        fc.constantFrom(">", ">-", "|", "|-", ">+", "|2", "> # c", "|-  "),
        fc.constantFrom("  ", "    ", " "),
        fc.array(
          fc.oneof(
            { weight: 6, arbitrary: words },
            { weight: 1, arbitrary: scalar },
            { weight: 1, arbitrary: fc.constantFrom("", "  deeper", "trailing ", "   ") },
          ),
          { minLength: 1, maxLength: 4 },
        ),
        fc.constantFrom("", "\n", "\n\n"),
      )
      .map(
        ([k, header, indent, lines, gap]) =>
          `${k}: ${header}\n${lines.map((line) => (line === "" ? "" : `${indent}${line}`)).join("\n")}${gap}`,
      ),
  },
  { weight: 1, arbitrary: scalar.map((v) => `# ${v}`) },
  { weight: 1, arbitrary: fc.constantFrom("", " ", "  x: y", "key", "...") },
)
const document = fc
  .tuple(fc.array(entry, { minLength: 1, maxLength: 6 }), fc.constantFrom("\n", "\r\n"), fc.boolean())
  .map(
    ([entries, newline, trailing]) =>
      entries.join("\n").replaceAll("\n", newline) + (trailing ? newline : ""),
  )

describe("parseSimpleYaml", () => {
  it("reads the common frontmatter shapes", () => {
    expect(
      parseSimpleYaml(
        "name: pdf\ndescription: 'It''s for PDFs: forms too'\nmetadata:\n  author: me\n  version: \"1.0\"\nlicense: MIT\n",
      ),
    ).toEqual({
      name: "pdf",
      description: "It's for PDFs: forms too",
      metadata: { author: "me", version: "1.0" },
      license: "MIT",
    })
  })

  it("reads plain folded and literal block scalars", () => {
    expect(
      parseSimpleYaml(
        "name: pdf\ndescription: >-\n  Extract text:\n  fill forms # too\nlicense: |\n  MIT\n  more\n\n",
      ),
    ).toEqual({ name: "pdf", description: "Extract text: fill forms # too", license: "MIT\nmore\n" })
  })

  it("leaves everything else to the YAML parser", () => {
    for (const text of [
      "a: [x, y]",
      "a: 1",
      "a: true",
      "a: |+\n  text",
      "a: >2\n  text",
      "a: >\n  text\n    deeper",
      "a: >\n  text\n\n  after a blank line",
      "a: x\na: y",
      "a:\n  - x",
      "a: b: c",
      "a: x # c",
    ]) {
      expect(parseSimpleYaml(text)).toBeUndefined()
    }
  })

  it("agrees with the yaml package on every document it accepts", () => {
    let accepted = 0
    let acceptedBlocks = 0
    fc.assert(
      fc.property(document, (text) => {
        const simple = parseSimpleYaml(text)
        if (simple === undefined) return
        accepted++
        if (/: [>|]-?\r?\n/.test(text)) acceptedBlocks++
        expect(yamlOf(text)).toEqual(simple)
      }),
      { numRuns: 8_000 },
    )
    // The property is not vacuous: a fair share of the generated documents take the fast path.
    expect(accepted).toBeGreaterThan(500)
    expect(acceptedBlocks).toBeGreaterThan(100)
  })
})

describe("parseFrontmatterYaml", () => {
  /** The tags of the YAML 1.2 core schema, the only ones a frontmatter may carry. */
  const coreTag = /^tag:yaml\.org,2002:(str|int|float|bool|null|map|seq)$/

  /**
   * Why a document parseDocument reads without error must still be refused, and with which
   * rule; undefined when it must be read. The refusals: a tag outside the core schema, an alias
   * toJS cannot resolve, no data, data that is not a mapping, a missing or empty name or
   * description (in that order). The generated documents nest a few levels, far from the
   * nesting limit.
   */
  const refusalOf = (doc: Document.Parsed): { rule: string; reason: string } | undefined => {
    let tagged = false
    visit(doc, {
      Node: (_key, node) => {
        if (node.tag === undefined || coreTag.test(node.tag)) return undefined
        tagged = true
        return visit.BREAK
      },
    })
    if (tagged) return { rule: "yaml-invalid", reason: "YAML tags are not allowed" }
    let data: unknown
    try {
      data = doc.toJS({ maxAliasCount: 100 })
    } catch {
      return { rule: "yaml-invalid", reason: "YAML could not be read" }
    }
    if (data === null || data === undefined)
      return { rule: "yaml-invalid", reason: "the frontmatter is empty" }
    if (typeof data !== "object" || Array.isArray(data))
      return { rule: "yaml-invalid", reason: "must be a YAML mapping" }
    for (const field of ["name", "description"]) {
      const value: unknown = Reflect.get(data, field)
      if (typeof value !== "string" || value.trim() === "")
        return { rule: `${field}-required`, reason: `'${field}'` }
    }
    return undefined
  }

  it("reads every document as the yaml package's parseDocument does (nesting watched)", () => {
    let read = 0
    let refused = 0
    let refusedAsFrontmatter = 0
    fc.assert(
      // With the two required fields first, more documents are read through.
      fc.property(document, fc.boolean(), (entries, withRequired) => {
        const text = withRequired ? `name: n\ndescription: d\n${entries}` : entries
        const doc = parseDocument(text, SAFE)
        const result = parseFrontmatterYaml("SKILL.md", { yaml: text, startLine: 1, endLine: 2, body: "" })
        const error = doc.errors[0]
        const refusal = error === undefined ? refusalOf(doc) : undefined
        if (error !== undefined) {
          refused++
          // The same error (a second document's message is cut before its advice on the API).
          const message = error.message.split("\n")[0]?.split(";")[0] ?? ""
          expect(Either.isLeft(result) && result.left.reason).toContain(`YAML error: ${message}`)
        } else if (refusal !== undefined) {
          // Read by parseDocument, but not a frontmatter: refused for that reason only.
          refusedAsFrontmatter++
          expect(Either.isLeft(result) && result.left.rule).toBe(refusal.rule)
          expect(Either.isLeft(result) && result.left.reason).toContain(refusal.reason)
        } else {
          read++
          expect(Either.isRight(result) && result.right.raw).toEqual(doc.toJS())
        }
      }),
      { numRuns: 4_000 },
    )
    expect(read).toBeGreaterThan(300)
    expect(refused).toBeGreaterThan(300)
    expect(refusedAsFrontmatter).toBeGreaterThan(300)
  })
})
