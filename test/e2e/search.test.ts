/**
 * Search through the built server: words only a SKILL.md body holds, other forms of a word, the
 * same ranking on list_skills, skills/list {query} and completion, and the structured result
 * saying how much was searched.
 */
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import * as Schema from "effect/Schema"
import { afterEach, describe, expect, it } from "vitest"
import { ListSkillsResult } from "../../src/mcp/tools.js"
import type { RunningServer } from "../support/server.js"
import { callTool, decode, eventually, request, rpcError, startServer } from "../support/server.js"
import { skillMd } from "../support/tree.js"

const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup()
})

const SKILLS: Record<string, readonly [string, string]> = {
  "test-driven-development": [
    "Use when implementing any feature or bugfix, before writing implementation code.",
    "# Test-Driven Development (TDD)\n\nWrite the test first. Watch it fail. Red, green, refactor.\n",
  ],
  "systematic-debugging": [
    "Use when encountering any bug, test failure, or unexpected behavior, before proposing fixes.",
    "# Systematic Debugging\n\nFind the root cause before attempting fixes. Read error messages and test failures carefully.\n",
  ],
  "release-notes": ["Write release notes from commits.", "# Release notes\n\nGroup the commits by kind.\n"],
}

const setUp = async () => {
  const root = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "skills-mcp-search-")))
  for (const [id, [description, body]] of Object.entries(SKILLS)) {
    await fs.mkdir(path.join(root, id))
    await fs.writeFile(path.join(root, id, "SKILL.md"), skillMd(id, description, body))
  }
  const server = await startServer([root], { env: { HOME: root } })
  cleanups.push(async () => {
    await server.close()
    await fs.rm(root, { recursive: true, force: true })
  })
  return { root, server }
}

const search = async (server: RunningServer, query: string) =>
  decode(
    ListSkillsResult,
    (await callTool(server, "list_skills", { query })).structuredContent,
    "list_skills",
  )

/** Waits until every body is indexed (they are read in the background after start-up). */
const bodiesIndexed = (server: RunningServer) =>
  eventually(async () => {
    const { searched } = await search(server, "anything")
    expect(searched?.bodies).toBe(searched?.skills)
  })

const Entries = Schema.Struct({
  skills: Schema.Array(Schema.Struct({ uri: Schema.String })),
  nextCursor: Schema.optional(Schema.String),
})
const Completion = Schema.Struct({ completion: Schema.Struct({ values: Schema.Array(Schema.String) }) })

describe("search", () => {
  it("finds skills by words only their bodies hold, and by other forms of their words", async () => {
    const { server } = await setUp()
    await bodiesIndexed(server)
    const tdd = await search(server, "tdd")
    expect(tdd.skills.map((skill) => skill.id)).toEqual(["test-driven-development"])
    expect(tdd.searched).toEqual({ skills: 3, bodies: 3 })
    expect((await search(server, "write the tests first, red green refactor")).skills[0]?.id).toBe(
      "test-driven-development",
    )
    expect(
      (await search(server, "my tests keep failing and I cannot find the root cause")).skills[0]?.id,
    ).toBe("systematic-debugging")
  })

  it("ranks alike on skills/list {query} and in completion, and follows an edited body", async () => {
    const { root, server } = await setUp()
    await bodiesIndexed(server)
    const listed = await request(server, "skills/list", { query: "root cause" }, Entries)
    expect(listed.skills.map((entry) => entry.uri)[0]).toBe("skill://systematic-debugging/SKILL.md")
    // Without a query, skills/list is the catalog in order, as before.
    expect((await request(server, "skills/list", {}, Entries)).skills).toHaveLength(3)
    const error = await rpcError(server, "skills/list", { query: "x".repeat(1_001) })
    expect(error.code).toBe(-32602)

    const completed = await request(
      server,
      "completion/complete",
      { ref: { type: "ref/prompt", name: "skill" }, argument: { name: "name", value: "tdd" } },
      Completion,
    )
    expect(completed.completion.values).toEqual(["test-driven-development"])

    await fs.writeFile(
      path.join(root, "release-notes", "SKILL.md"),
      skillMd(
        "release-notes",
        "Write release notes from commits.",
        "# Release notes\n\nMention the changelog.\n",
      ),
    )
    await eventually(async () => {
      const found = await search(server, "changelog")
      expect(found.searched?.bodies).toBe(3)
      expect(found.skills.map((skill) => skill.id)).toEqual(["release-notes"])
    })
  })
})
