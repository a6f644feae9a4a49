/**
 * Reading only a SKILL.md's head (what the catalog does for every skill) gives exactly what
 * parsing the whole file gives, and keeps nothing of the body.
 */
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { asyncFs, syncFs } from "../src/platform/Fs.js"
import { MAX_FRONTMATTER_BYTES, parseSkillText, readFrontmatter } from "../src/skills/Frontmatter.js"
import { tempTree } from "./support/tree.js"

const long = "x".repeat(6_000)
const cases: Record<string, string | Buffer> = {
  plain: "---\nname: a\ndescription: A skill.\n---\n# Body\n---\nmore\n",
  bom: "\ufeff---\nname: a\ndescription: With a BOM.\n---\nBody\n",
  crlf: "---\r\nname: a\r\ndescription: CRLF.\r\n---\r\nBody\r\n",
  blankLinesFirst: "\n\n---\nname: a\ndescription: Blank lines first.\n---\nBody\n",
  trailingSpaces: "---  \nname: a\ndescription: Spaces after the delimiters.\n--- \t\nBody\n",
  dashesInside: "---\nname: a\ndescription: |\n  ----\n  not a delimiter\n---x: y\n---\nBody\n",
  longerThanAChunk: `---\nname: a\ndescription: ${long}\n---\nBody\n`,
  closedAtTheEnd: "---\nname: a\ndescription: No newline after the closing line.\n---",
  unicode: "---\nname: a\ndescription: Émoji 🙂 and ünïcödé.\n---\nBödy\n",
  noFrontmatter: "# Just a title\n---\nname: a\n---\n",
  unclosed: "---\nname: a\ndescription: never closed\n",
  // Bytes that are not UTF-8 decode to U+FFFD, three bytes long once encoded again.
  notUtf8: Buffer.from("---\nname: a\ndescription: caf\xe9 \xe9\xe9\n---", "latin1"),
  notUtf8WithBody: Buffer.from("---\nname: a\ndescription: caf\xe9\n---\nBody text\n", "latin1"),
}

describe("reading a SKILL.md's head", () => {
  it.scoped("parses as the whole file does, through both ports, and stops at the closing line", () =>
    Effect.gen(function* () {
      const root = yield* tempTree(
        Object.fromEntries(Object.entries(cases).map(([id, text]) => [`${id}/SKILL.md`, text])),
      )
      for (const [id, content] of Object.entries(cases)) {
        const file = path.join(root, id, "SKILL.md")
        const whole = parseSkillText(file, content.toString("utf8"))
        for (const port of [syncFs, asyncFs]) {
          const head = yield* Effect.promise(() => readFrontmatter(port, file, MAX_FRONTMATTER_BYTES))
          expect(Either.isRight(head), id).toBe(Either.isRight(whole))
          if (Either.isRight(head) && Either.isRight(whole)) {
            expect(head.right.raw, id).toEqual(whole.right.raw)
            expect(head.right.fields, id).toEqual(whole.right.fields)
            expect(head.right.endLine, id).toBe(whole.right.endLine)
            expect(head.right.body, id).toBe("")
          }
          if (Either.isLeft(head) && Either.isLeft(whole))
            expect(head.left.reason, id).toBe(whole.left.reason)
        }
        const head = yield* Effect.promise(() => readFrontmatter(syncFs, file, MAX_FRONTMATTER_BYTES))
        if (Either.isRight(head)) expect(JSON.stringify(head.right).includes("Body")).toBe(false)
      }
      const bytes = yield* Effect.promise(() => fs.stat(path.join(root, "longerThanAChunk", "SKILL.md")))
      expect(bytes.size).toBeGreaterThan(4_096)
    }),
  )
})
