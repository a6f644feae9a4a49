/**
 * Content and format, through the built bin: frontmatter nested too deep is refused as
 * `yaml-invalid` while the other skills are served; read_skill_file sends a file's text once, in
 * parts; files of unknown types are labelled by their bytes; the JSON-RPC errors for a resource
 * that is not served carry `data.uri`.
 */
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import * as Schema from "effect/Schema"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { RunningServer } from "../support/server.js"
import { callTool, request, rpcError, runRaw, startServer, toolText } from "../support/server.js"
import { skillMd, writeTree } from "../support/tree.js"

let dir: string
let server: RunningServer

/** 74 KB of markdown in 1,800 lines. */
const GUIDE = Array.from({ length: 1_800 }, (_, index) => `line ${index + 1} ${"x".repeat(30)}\n`).join("")
/** 5,000 lines, about 190 KB: three parts. */
const LONG = Array.from({ length: 5_000 }, (_, index) => `row ${index + 1} ${"y".repeat(30)}\n`).join("")
const SCRIPT = "#!/usr/bin/env python3\nprint('fill the form')\n"
const DEEP = `---\nname: deep\ndescription: Nested too deep.\nx: ${"[".repeat(100_000)}${"]".repeat(100_000)}\n---\nbody\n`

beforeAll(async () => {
  dir = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "skills-mcp-content-")))
  await writeTree(dir, {
    "main/pdf/SKILL.md": skillMd("pdf", "Work with PDF files."),
    "main/pdf/references/guide.md": GUIDE,
    "main/pdf/references/long.txt": LONG,
    "main/pdf/references/graph.dot": "digraph { a -> b }\n",
    "main/pdf/references/escape.md": { symlink: "../../../outside.txt" },
    "main/pdf/scripts/fill": SCRIPT,
    "main/pdf/assets/blob.xyz": Buffer.from([0x89, 0x00, 0x01, 0xff, 0x00, 0x42]),
    "main/deep/SKILL.md": DEEP,
    // Served through the tools, not over the Skills extension (its name breaks the naming rules).
    "extra/notes/SKILL.md": skillMd("Notes Writer", "Write notes."),
    "outside.txt": "outside every root\n",
    "home/.keep": "",
  })
  server = await startServer([path.join(dir, "main"), path.join(dir, "extra"), "--refresh-ms", "0"], {
    env: { HOME: path.join(dir, "home") },
  })
  // The SDK client validates structuredContent against each tool's outputSchema once listed.
  await server.client.listTools()
})

afterAll(async () => {
  await server.close()
  await fs.rm(dir, { recursive: true, force: true })
})

/** A resource read whole (its contents as sent), and a folder listing's entries. */
const ReadResult = Schema.Struct({ contents: Schema.Array(Schema.Unknown) })
const Listing = Schema.Struct({
  resources: Schema.Array(Schema.Struct({ name: Schema.String, mimeType: Schema.String })),
})

describe("frontmatter nested too deep", () => {
  it("is a yaml-invalid error in validate, naming the limit and the line", async () => {
    const run = await runRaw(["validate", path.join(dir, "main")], [], { HOME: path.join(dir, "home") })
    expect(run.code).toBe(1)
    expect(run.stdout).toContain(
      "deep/SKILL.md:4: error yaml-invalid: YAML error: lists and maps are nested more than 64 levels deep",
    )
    expect(run.stdout).toMatch(/FAILED: 2 skills checked in .*: 1 error, 0 warnings \(1 clean\)\.\n$/)
  })

  it("leaves that skill out and serves the others", async () => {
    const listed = await callTool(server, "list_skills", {})
    const ids = (listed.structuredContent as { skills: Array<{ id: string }> }).skills.map(
      (skill) => skill.id,
    )
    expect(ids.sort()).toEqual(["notes", "pdf"])
    expect(toolText(await callTool(server, "get_skill", { id: "pdf" }))).toContain("# pdf")
  })
})

describe("read_skill_file", () => {
  it("answers a 74 KB file with its text once; the structured result is its metadata", async () => {
    const result = await callTool(server, "read_skill_file", { id: "pdf", path: "references/guide.md" })
    expect(toolText(result)).toBe(GUIDE)
    expect(result.structuredContent).toEqual({
      id: "pdf",
      path: "references/guide.md",
      type: "file",
      size: GUIDE.length,
      mimeType: "text/markdown",
      startLine: 1,
      endLine: 1_800,
      totalLines: 1_800,
      truncated: false,
    })
    // The whole answer is the file's text (as JSON) and a few hundred characters; it was twice that.
    expect(JSON.stringify(result).length).toBeLessThan(JSON.stringify(GUIDE).length + 1_000)
  })

  it("pages through a long file: each part says how to read on, and the parts make the file", async () => {
    let offset: number | undefined = 1
    let joined = ""
    const ranges: Array<[number, number]> = []
    while (offset !== undefined) {
      const result: CallToolResult = await callTool(server, "read_skill_file", {
        id: "pdf",
        path: "references/long.txt",
        offset,
      })
      const structured = result.structuredContent as {
        startLine: number
        endLine: number
        nextOffset?: number
      }
      ranges.push([structured.startLine, structured.endLine])
      const next: number | undefined = structured.nextOffset
      const note =
        next === undefined
          ? ""
          : `\n[Lines ${offset}-${next - 1} of 5000 shown. To read on, call read_skill_file {"id":"pdf","path":"references/long.txt","offset":${next}}]`
      expect(toolText(result).endsWith(note)).toBe(true)
      joined += toolText(result).slice(0, toolText(result).length - note.length)
      offset = next
    }
    expect(ranges).toEqual([
      [1, 2_000],
      [2_001, 4_000],
      [4_001, 5_000],
    ])
    expect(joined).toBe(LONG)
    const past = await callTool(server, "read_skill_file", {
      id: "pdf",
      path: "references/long.txt",
      offset: 5_001,
    })
    expect(past.isError).toBe(true)
    expect(toolText(past)).toContain(
      "line 5001 is past the end of 'references/long.txt', which has 5000 lines",
    )
  })
})

describe("MIME types", () => {
  it("labels a text file of unknown type text/plain, and binary bytes application/octet-stream", async () => {
    const script = await callTool(server, "read_skill_file", { id: "pdf", path: "scripts/fill" })
    expect(toolText(script)).toBe(SCRIPT)
    expect(script.structuredContent).toMatchObject({ mimeType: "text/plain" })

    const read = async (uri: string) =>
      (await request(server, "resources/read", { uri }, ReadResult)).contents
    expect(await read("skill://pdf/scripts/fill")).toEqual([
      { uri: "skill://pdf/scripts/fill", mimeType: "text/plain", text: SCRIPT },
    ])
    expect(await read("skill://pdf/references/graph.dot")).toMatchObject([{ mimeType: "text/vnd.graphviz" }])
    expect(await read("skill://pdf/assets/blob.xyz")).toEqual([
      { uri: "skill://pdf/assets/blob.xyz", mimeType: "application/octet-stream", blob: "iQAB/wBC" },
    ])
    const binary = await callTool(server, "read_skill_file", { id: "pdf", path: "assets/blob.xyz" })
    expect(toolText(binary)).toContain("is a binary file (application/octet-stream, 6 bytes)")

    // A folder listing goes by the extension alone (it does not read the files).
    const listing = (
      await request(server, "resources/directory/read", { uri: "skill://pdf/references" }, Listing)
    ).resources
    expect(listing.find((entry) => entry.name === "graph.dot")?.mimeType).toBe("text/vnd.graphviz")
  })
})

describe("errors for a resource that is not served", () => {
  it.each([
    ["resources/read", "an unknown skill", "skill://nothing-here/SKILL.md"],
    ["resources/read", "a missing file", "skill://pdf/references/missing.md"],
    ["resources/read", "a link out of the skill", "skill://pdf/references/escape.md"],
    ["resources/directory/read", "an unknown folder", "skill://nothing-here/references"],
    ["resources/subscribe", "an unknown skill", "skill://nothing-here/SKILL.md"],
    ["skills/get", "an unknown skill", "skill://nothing-here/SKILL.md"],
    ["skills/get", "a skill the extension does not serve", "skill://notes/SKILL.md"],
  ])("%s of %s is -32602 with data.uri", async (method, _label, uri) => {
    const error = await rpcError(server, method, { uri })
    expect(error.code).toBe(-32602)
    expect(error.data).toEqual({ uri })
  })

  it("gives no data for a request that is wrong in another way, or a URI too long to repeat", async () => {
    const folder = await rpcError(server, "resources/read", { uri: "skill://pdf/references" })
    expect(folder.code).toBe(-32602)
    expect(folder.message).toContain("is a folder")
    expect(folder.data).toBeUndefined()
    // A refusal repeats at most 120 characters of a client's value.
    const long = await rpcError(server, "resources/read", { uri: `skill://pdf/${"a".repeat(200)}.md` })
    expect(long.code).toBe(-32602)
    expect(long.data).toBeUndefined()
  })
})
