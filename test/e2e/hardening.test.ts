/**
 * Hardening: hostile skill trees and hostile requests against the built server over stdio.
 * Every case asserts the answer's shape; the whole session asserts that the canary secret
 * placed outside the roots never appears in any message and that stdout stayed JSON-RPC.
 * Cases are counted in `cases` and the count is checked at the end, so none is dropped.
 */
import * as fs from "node:fs/promises"
import * as path from "node:path"
import * as Schema from "effect/Schema"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { RunningServer } from "../support/server.js"
import {
  CANARY,
  callTool,
  copyFixtures,
  request,
  rpcError,
  startServer,
  toolText,
} from "../support/server.js"

let dir: string
let server: RunningServer

/** A folder listing's entry names, and a completion's values. */
const Listing = Schema.Struct({ resources: Schema.Array(Schema.Struct({ name: Schema.String })) })
const Completion = Schema.Struct({ completion: Schema.Struct({ values: Schema.Array(Schema.String) }) })

beforeAll(async () => {
  dir = await copyFixtures()
  server = await startServer(
    [path.join(dir, "attack"), path.join(dir, "valid"), "--refresh-ms", "0", "--max-file-bytes", "65536"],
    { env: { HOME: path.join(dir, "home") }, clientName: "hardening-suite" },
  )
  await server.client.listTools()
})

afterAll(async () => {
  await server.close()
  await fs.rm(dir, { recursive: true, force: true })
})

/** A refusal for a path outside the skill: the same words whether or not the target exists. */
const OUTSIDE = "outside the skill"

describe("containment: read_skill_file", () => {
  it.each([
    ["a sibling folder sharing the skill's name as a prefix", "prefix", "../prefix-sibling/notes.md"],
    ["a link into that sibling", "prefix", "references/peek.md"],
    ["backslash separators", "prefix", "..\\prefix-sibling\\notes.md"],
    ["mixed separators", "prefix", "references/..\\..\\prefix-sibling/notes.md"],
    ["a link to the collection above the skill", "loops", "references/up/prefix-sibling/notes.md"],
    ["a link to a file outside every root", "loops", "references/secret.txt"],
    ["`..` after a link that stays inside", "loops", "references/self/../../prefix-sibling/notes.md"],
    ["a dot-dot segment alone", "prefix", ".."],
  ])("refuses %s", async (_case, id, requested) => {
    const result = await callTool(server, "read_skill_file", { id, path: requested })
    expect(result.isError).toBe(true)
    expect(toolText(result)).toContain(OUTSIDE)
  })

  it.each([
    ["an absolute path", "/etc/passwd", "relative"],
    ["a NUL byte", "references/guide.md\u0000.png", "NUL"],
    ["an overlong name", `${"a".repeat(300)}.md`, "255"],
    ["an overlong path", "a/".repeat(3000), "longer than 4096 characters"],
  ])("refuses %s as an invalid argument", async (_case, requested, reason) => {
    const result = await callTool(server, "read_skill_file", { id: "prefix", path: requested })
    expect(result.isError).toBe(true)
    expect(toolText(result)).toContain(reason)
  })

  it("gives the same refusal whether or not the outside file exists", async () => {
    const existing = await callTool(server, "read_skill_file", {
      id: "prefix",
      path: "../prefix-sibling/notes.md",
    })
    const missing = await callTool(server, "read_skill_file", {
      id: "prefix",
      path: "../prefix-sibling/no-such-file.md",
    })
    expect(toolText(missing)).toBe(toolText(existing))
  })

  it("serves a link that stays inside its skill, and lists a looping folder without what leaves", async () => {
    const inside = await callTool(server, "read_skill_file", {
      id: "loops",
      path: "references/self/references/guide.md",
    })
    expect(toolText(inside)).toBe("# Guide inside the loop skill\n")
    const listing = await callTool(server, "read_skill_file", { id: "loops", path: "" })
    const entries = (listing.structuredContent as { entries: Array<{ path: string }> }).entries.map(
      (entry) => entry.path,
    )
    expect(entries).toContain("references/guide.md")
    expect(entries.some((entry) => entry.includes("up") || entry.includes("secret"))).toBe(false)
  })

  it("does not serve a skill folder that is a link out of its root", async () => {
    const result = await callTool(server, "get_skill", { id: "escaped" })
    expect(result.isError).toBe(true)
    const all = await callTool(server, "list_skills", { limit: 100 })
    expect(toolText(all)).not.toContain("escaped")
  })
})

describe("containment: protocol surfaces", () => {
  it.each([
    ["an encoded ../ after the skill", "skill://prefix/..%2fprefix-sibling/notes.md"],
    ["an encoded .. segment", "skill://prefix/%2e%2e/prefix-sibling/notes.md"],
    ["encoded backslashes", "skill://prefix/references%5c..%5c..%5cprefix-sibling%5cnotes.md"],
    ["a link into the sibling folder", "skill://prefix/references/peek.md"],
    ["a folder that is not a skill", "skill://prefix-sibling/notes.md"],
    ["dot-dot as the authority", "skill://../canary/secret.txt"],
    ["a link to a file outside every root", "skill://loops/references/secret.txt"],
    ["a link to the collection", "skill://loops/references/up/prefix/SKILL.md"],
    ["an encoded NUL", "skill://prefix/references/guide.md%00.png"],
    ["another scheme", "file:///etc/passwd"],
    ["a linked skill folder out of the root", "skill://escaped/SKILL.md"],
    ["a URI over the length limit", `skill://prefix/${"a/".repeat(5000)}`],
  ])("resources/read refuses %s with -32602", async (_case, uri) => {
    const error = await rpcError(server, "resources/read", { uri })
    expect(error.code).toBe(-32602)
  })

  it("skills/get refuses a skill reached through a link out of the root", async () => {
    expect((await rpcError(server, "skills/get", { uri: "skill://escaped/SKILL.md" })).code).toBe(-32602)
  })

  it("directory reads and manifests never show what leaves the skill", async () => {
    const loops = await request(
      server,
      "resources/directory/read",
      { uri: "skill://loops/references" },
      Listing,
    )
    const names = loops.resources.map((entry) => entry.name)
    expect(names).toContain("guide.md")
    expect(names).not.toContain("up")
    expect(names).not.toContain("secret.txt")
    const prefix = await request(
      server,
      "resources/directory/read",
      { uri: "skill://prefix/references" },
      Listing,
    )
    expect(prefix.resources.map((entry) => entry.name)).toEqual(["guide.md"])
    const manifest = await request(
      server,
      "resources/read",
      { uri: "skill://loops/_manifest" },
      Schema.Unknown,
    )
    const body = JSON.stringify(manifest)
    expect(body).toContain("references/guide.md")
    expect(body).not.toContain("secret.txt")
    expect(body).not.toContain("references/up")
  })

  it("completion never offers a path that leaves the skill", async () => {
    const { resourceTemplates } = await server.client.listResourceTemplates()
    const template = resourceTemplates[0]?.uriTemplate ?? ""
    expect(template).toBe("skill://{+skill}/{+path}")
    const result = await request(
      server,
      "completion/complete",
      {
        ref: { type: "ref/resource", uri: template },
        argument: { name: "path", value: "references/" },
        context: { arguments: { skill: "loops" } },
      },
      Completion,
    )
    const values = result.completion.values
    // The skill's own files are offered (so the answer is not just empty) and nothing else.
    expect(values).toContain("references/guide.md")
    expect(values.some((value) => value.includes("secret") || value.includes("/up"))).toBe(false)
  })
})

describe("hostile skill trees", () => {
  it.each([
    ["an alias bomb", "alias-bomb", /alias/i],
    ["nesting 20,000 levels deep", "deep-nesting", /nested more than 64 levels deep/],
    ["a !!binary tag", "binary-tag", /tag/i],
    ["duplicate keys", "duplicate-keys", /unique|duplicate/i],
    ["an empty SKILL.md", "empty-skill", /frontmatter/i],
    ["a binary SKILL.md", "binary-skill", /frontmatter/i],
  ])("skips a skill with %s, with the reason on stderr, and serves the rest", async (_case, id, reason) => {
    const result = await callTool(server, "get_skill", { id })
    expect(result.isError).toBe(true)
    const logged = server
      .stderr()
      .split("\n")
      .find((line) => line.includes(`Skipped skill '${id}'`))
    expect(logged).toBeDefined()
    expect(logged).toMatch(reason)
    expect((await callTool(server, "get_skill", { id: "pdf-processing" })).isError).toBeUndefined()
  })

  it("serves a SKILL.md holding bytes that are not UTF-8, replacing them", async () => {
    const result = await callTool(server, "get_skill", { id: "invalid-utf8" })
    expect(result.isError).toBeUndefined()
    expect(toolText(result)).toContain("\uFFFD")
  })

  it("serves Unicode and spaces in folder and file names", async () => {
    const naive = await callTool(server, "read_skill_file", {
      id: "unicode",
      path: "references/naïve guide.md",
    })
    expect(toolText(naive)).toContain("🧪 works.")
    const strasse = await request(
      server,
      "resources/read",
      { uri: "skill://unicode/references/Stra%C3%9Fe.md" },
      Schema.Unknown,
    )
    expect(JSON.stringify(strasse)).toContain("# Straße")
    const spaced = await callTool(server, "get_skill", { id: "spaced folder" })
    expect(toolText(spaced)).toContain("# Spaced")
  })
})

describe("the whole session", () => {
  it("never sent the canary, kept stdout JSON-RPC, and still answers", async () => {
    expect((await callTool(server, "get_skill", { id: "prefix" })).isError).toBeUndefined()
    expect(server.received.length).toBeGreaterThan(50)
    for (const message of server.received) expect(message).not.toContain(CANARY)
    expect(server.protocolErrors).toEqual([])
  })
})
