/**
 * Property-based tests (Effect's bundled fast-check) for the two pieces every hostile input
 * goes through: the path resolver and the frontmatter splitter.
 */
import * as path from "node:path"
import { describe, expect, it, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as fc from "effect/FastCheck"
import * as Layer from "effect/Layer"
import { checkRelativePath } from "../src/files/Containment.js"
import { SkillFiles } from "../src/files/SkillFiles.js"
import { Fs } from "../src/platform/Fs.js"
import { isInside } from "../src/platform/Paths.js"
import { Settings } from "../src/Settings.js"
import { Frontmatter, splitFrontmatter } from "../src/skills/Frontmatter.js"
import { skillMd, tempTree } from "./support/tree.js"

const SECRET = "outside-secret-7c1d"

/** Pieces of hostile paths: traversal in every spelling, separators, links, real names. */
const piece = fc.constantFrom(
  "..",
  ".",
  "/",
  "\\",
  "%2e%2e",
  "%2E.",
  ".%2e",
  "%2f",
  "%5c",
  "%00",
  "\0",
  "C:",
  "~",
  "references",
  "guide.md",
  "up",
  "self",
  "out",
  "out-dir",
  "pdf-sibling",
  "secret.txt",
  "ü",
  " ",
)
const hostilePath = fc.array(piece, { maxLength: 10 }).map((parts) => parts.join(""))

describe("checkRelativePath", () => {
  it("accepts only paths whose segments stay below the skill folder", () => {
    fc.assert(
      fc.property(hostilePath, (requested) => {
        const checked = checkRelativePath("pdf", requested)
        if (Either.isLeft(checked)) return
        const base = "/skills/pdf"
        for (const segment of checked.right) {
          expect(segment).not.toBe("..")
          expect(decodeURIComponentSafe(segment).split(/[/\\]/)).not.toContain("..")
          expect(segment.includes("\0")).toBe(false)
        }
        expect(isInside(base, path.join(base, ...checked.right))).toBe(true)
      }),
      { numRuns: 5_000 },
    )
  })
})

const decodeURIComponentSafe = (value: string) => {
  try {
    return decodeURIComponent(value)
  } catch {
    return value
  }
}

const SkillFilesTest = SkillFiles.Default.pipe(
  Layer.provide(Frontmatter.Default),
  Layer.provide(Layer.merge(Settings.make({ maxFileBytes: 4096 }), Fs.node)),
)

layer(SkillFilesTest)("SkillFiles.resolve (on disk)", (it) => {
  it.scoped("never resolves outside the skill, and never reads the secret, whatever the path", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({
        "skills/pdf/SKILL.md": skillMd("pdf", "PDF"),
        "skills/pdf/references/guide.md": "guide",
        "skills/pdf/references/self": { symlink: ".." },
        "skills/pdf/references/up": { symlink: "../../.." },
        "skills/pdf/out": { symlink: "../../secret.txt" },
        "skills/pdf/out-dir": { symlink: "../pdf-sibling" },
        "skills/pdf-sibling/secret.txt": SECRET,
        "secret.txt": SECRET,
      })
      const files = yield* SkillFiles
      const skill = { id: "pdf", dir: `${root}/skills/pdf`, rootReal: root }
      const base = `${root}/skills/pdf`
      const samples = fc.sample(hostilePath, { numRuns: 3_000, seed: 20261122 })
      let served = 0
      for (const requested of samples) {
        const resolved = yield* Effect.either(files.resolve(skill, requested))
        if (Either.isRight(resolved)) {
          expect(isInside(base, resolved.right.real)).toBe(true)
          served++
        }
        const read = yield* Effect.either(files.readBytes(skill, requested))
        if (Either.isRight(read)) expect(Buffer.from(read.right.bytes).toString("utf8")).not.toContain(SECRET)
        else expect(read.left.message).not.toContain(SECRET)
      }
      // The generator does reach real files (the property is not vacuous).
      expect(served).toBeGreaterThan(50)
    }),
  )
})

/** Frontmatter lines that are not the delimiter. */
const yamlLine = fc
  .string({ maxLength: 30 })
  .map((line) => line.replace(/[\r\n]/g, " "))
  .filter((line) => !/^---[ \t]*$/.test(line))
const body = fc.string({ maxLength: 200 })

describe("splitFrontmatter", () => {
  it("never throws, on any text", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), (text) => {
        expect(["Split", "NoFrontmatter", "NotClosed"]).toContain(splitFrontmatter(text)._tag)
      }),
      { numRuns: 5_000 },
    )
  })

  it("returns exactly the frontmatter and body it was given, with LF, CRLF, a BOM or blank lines before", () => {
    fc.assert(
      fc.property(
        fc.array(yamlLine, { maxLength: 8 }),
        body,
        fc.boolean(),
        fc.boolean(),
        fc.nat(3),
        (lines, rest, crlf, bom, blanks) => {
          const eol = crlf ? "\r\n" : "\n"
          const yaml = lines.map((line) => `${line}${eol}`).join("")
          const text = `${bom ? "\uFEFF" : ""}${eol.repeat(blanks)}---${eol}${yaml}---${eol}${rest}`
          const split = splitFrontmatter(text)
          expect(split._tag).toBe("Split")
          if (split._tag !== "Split") return
          expect(split.value.yaml).toBe(yaml)
          expect(split.value.body).toBe(rest)
          expect(split.value.startLine).toBe(blanks + 1)
          expect(split.value.endLine).toBe(blanks + lines.length + 2)
        },
      ),
      { numRuns: 3_000 },
    )
  })

  it("reports a frontmatter that is never closed, wherever --- appears inside a line", () => {
    fc.assert(
      fc.property(fc.array(yamlLine, { maxLength: 8 }), (lines) => {
        const text = `---\n${lines.map((line) => `${line}\n`).join("")}`
        expect(splitFrontmatter(text)._tag).toBe("NotClosed")
      }),
      { numRuns: 2_000 },
    )
  })
})
