/**
 * The built server, driven over stdio by the MCP SDK's Client as an editor would.
 */
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { RunningServer } from "../support/server.js"
import {
  CANARY,
  callTool,
  copyFixtures,
  eventually,
  initializeLine,
  jsonRpcLines,
  runRaw,
  startServer,
  toolText,
  VALID_SKILL_IDS,
} from "../support/server.js"

let dir: string
let server: RunningServer

/** Tool calls made through `call`, to check that each has exactly one audit line. */
const calls: Array<{ name: string; args: Record<string, unknown> }> = []

const call = (name: string, args: Record<string, unknown>) => {
  calls.push({ name, args })
  return callTool(server, name, args)
}

/** `count` raw JSON-RPC lines calling the tool `name`, with ids 1 to `count`. */
const toolCallLines = (count: number, name: string, args: (index: number) => Record<string, unknown>) =>
  Array.from({ length: count }, (_, i) =>
    JSON.stringify({ jsonrpc: "2.0", id: i + 1, method: "tools/call", params: { name, arguments: args(i) } }),
  )

beforeAll(async () => {
  dir = await copyFixtures()
  server = await startServer(
    [
      "--skills-dir",
      path.join(dir, "valid"),
      "--skills-dir",
      path.join(dir, "hostile"),
      path.join(dir, "shadow"),
      "--max-file-bytes",
      "16384",
      "--refresh-ms",
      "0",
    ],
    { env: { HOME: path.join(dir, "home") } },
  )
  // The SDK client validates structuredContent against each tool's outputSchema once listed.
  await server.client.listTools()
})

afterAll(async () => {
  await server.close()
  await fs.rm(dir, { recursive: true, force: true })
})

describe("skills-mcp over stdio", () => {
  it("lists three read-only tools with output schemas and the catalog in get_skill's description", async () => {
    const { tools } = await server.client.listTools()
    expect(tools.map((tool) => tool.name)).toEqual(["list_skills", "get_skill", "read_skill_file"])
    for (const tool of tools) {
      expect(tool.annotations?.readOnlyHint).toBe(true)
      expect(tool.outputSchema?.type).toBe("object")
      expect(tool.inputSchema.type).toBe("object")
    }
    const description = tools[1]?.description ?? ""
    expect(description).toContain("<available_skills>")
    expect(description).toContain("<id>pdf-processing</id>")
    expect(description).toContain("<name>Release Notes Writer</name>")
    expect(server.client.getInstructions()).toContain("get_skill")
  })

  it("list_skills returns every servable skill, first root first, and leaves malformed ones out", async () => {
    const result = await call("list_skills", {})
    const structured = result.structuredContent as { skills: Array<{ id: string; description: string }> }
    expect(structured.skills.map((skill) => skill.id)).toEqual([
      ...VALID_SKILL_IDS,
      "oversized",
      "symlink-escape",
    ])
    expect(structured.skills.find((skill) => skill.id === "pdf-processing")?.description).toContain(
      "Extract text",
    )
    expect(toolText(result)).toContain("10 skills")
    const query = await call("list_skills", { query: "PDF forms" })
    expect((query.structuredContent as { skills: Array<{ id: string }> }).skills.map((s) => s.id)).toEqual([
      "pdf-processing",
    ])
  })

  it("logs skipped skills (with the reason) and shadowed ones (with both paths) on stderr", () => {
    const log = server.stderr()
    for (const id of [
      "malformed-yaml",
      "missing-description",
      "no-frontmatter",
      "unclosed-frontmatter",
      "yaml-tags",
    ]) {
      expect(log).toContain(`Skipped skill '${id}'`)
    }
    expect(log).toContain("missing required field 'description'")
    expect(log).toContain(`${path.join(dir, "shadow", "pdf-processing", "SKILL.md")} is shadowed by`)
  })

  it("get_skill returns the body, absolute paths, and starts its text with the base directory", async () => {
    const result = await call("get_skill", { id: "pdf-processing" })
    const base = path.join(dir, "valid", "pdf-processing")
    expect(result.isError).toBeFalsy()
    expect(result.structuredContent).toMatchObject({
      id: "pdf-processing",
      name: "pdf-processing",
      path: path.join(base, "SKILL.md"),
      baseDir: base,
    })
    expect((result.structuredContent as { content: string }).content).toMatch(/^# PDF processing/)
    expect(toolText(result).split("\n")[0]).toBe(`Base directory: ${base}`)
  })

  it("get_skill finds a skill by its human-readable name and reads a CRLF SKILL.md", async () => {
    const byName = await call("get_skill", { id: "Release Notes Writer" })
    expect(byName.structuredContent).toMatchObject({ id: "release-notes", name: "Release Notes Writer" })
    const crlf = await call("get_skill", { id: "git-commit-messages" })
    expect((crlf.structuredContent as { content: string }).content).toMatch(/^# Commit messages\r\n/)
  })

  it("read_skill_file reads files and lists folders", async () => {
    const file = await call("read_skill_file", { id: "pdf-processing", path: "references/forms.md" })
    expect(toolText(file)).toMatch(/^# Filling PDF forms/)
    expect(file.structuredContent).toMatchObject({
      type: "file",
      path: "references/forms.md",
      mimeType: "text/markdown",
    })
    const listing = await call("read_skill_file", { id: "pdf-processing", path: "" })
    const entries = (listing.structuredContent as { entries: Array<{ path: string }> }).entries.map(
      (e) => e.path,
    )
    expect(entries).toEqual([
      "SKILL.md",
      "assets",
      "assets/form-template.pdf",
      "references",
      "references/forms.md",
      "scripts",
      "scripts/extract_text.py",
    ])
    const inside = await call("read_skill_file", { id: "symlink-escape", path: "references/also-inside.md" })
    expect(toolText(inside)).toBe("# Inside\n")
  })

  it.each([
    [
      "an unknown skill",
      "get_skill",
      { id: "pdf-procesing" },
      "Skill 'pdf-procesing' not found. Closest ids: 'pdf-processing'",
    ],
    [
      "a malformed (skipped) skill",
      "get_skill",
      { id: "malformed-yaml" },
      "Skill 'malformed-yaml' not found",
    ],
    [
      "a ../ path",
      "read_skill_file",
      { id: "pdf-processing", path: "../brand-guidelines/SKILL.md" },
      "outside the skill",
    ],
    [
      "a symlink out of the skill",
      "read_skill_file",
      { id: "symlink-escape", path: "references/leak.md" },
      "outside the skill",
    ],
    [
      "a symlinked folder out of the skill",
      "read_skill_file",
      { id: "symlink-escape", path: "outside-dir/secret.txt" },
      "outside the skill",
    ],
    [
      "an oversized file",
      "read_skill_file",
      { id: "oversized", path: "references/huge.log" },
      "over the 16384-byte limit",
    ],
    [
      "a binary file",
      "read_skill_file",
      { id: "brand-guidelines", path: "assets/logo.png" },
      "binary file (image/png",
    ],
    [
      "a missing file",
      "read_skill_file",
      { id: "pdf-processing", path: "references/nope.md" },
      "No file or folder 'references/nope.md'",
    ],
    ["a wrong argument type", "get_skill", { id: 42 }, "Invalid argument 'id'"],
    ["a missing argument", "get_skill", {}, "Invalid argument 'id'"],
    ["an unexpected argument", "list_skills", { colour: "red" }, "Invalid argument 'colour'"],
    ["an unknown tool", "delete_everything", {}, "no tool 'delete_everything'"],
  ])("answers %s with an isError result", async (_label, tool, args, message) => {
    const result = await call(tool, args)
    expect(result.isError).toBe(true)
    expect(toolText(result)).toContain(message)
    expect(JSON.stringify(result)).not.toContain(CANARY)
  })

  it("shows a skill added, edited or removed on disk on the next call, without a restart", async () => {
    const added = path.join(dir, "valid", "fresh-skill")
    await fs.mkdir(added)
    await fs.writeFile(
      path.join(added, "SKILL.md"),
      "---\nname: fresh-skill\ndescription: Added while running.\n---\nNew.\n",
    )
    const afterAdd = await call("get_skill", { id: "fresh-skill" })
    expect(afterAdd.structuredContent).toMatchObject({
      description: "Added while running.",
      content: "New.\n",
    })

    const skillFile = path.join(dir, "valid", "webapp-testing", "SKILL.md")
    const original = await fs.readFile(skillFile, "utf8")
    // Listed once before the edit: the line kept for the old skill must not come back.
    const before = await call("list_skills", { query: "webapp" })
    expect(JSON.stringify(before.content)).not.toContain("Edited description.")
    await fs.writeFile(skillFile, original.replace(/^description: .*$/m, "description: Edited description."))
    const listed = await call("list_skills", { query: "webapp" })
    expect(
      (listed.structuredContent as { skills: Array<{ description: string }> }).skills[0]?.description,
    ).toBe("Edited description.")
    expect(JSON.stringify(listed.content)).toContain("- webapp-testing: Edited description.")

    await fs.rm(added, { recursive: true })
    const afterRemove = await call("get_skill", { id: "fresh-skill" })
    expect(afterRemove.isError).toBe(true)
  })

  it("writes one JSON audit line per tool call on stderr", async () => {
    interface Audit {
      readonly tool: string
    }
    const isToolAudit = (audit: Audit) => !audit.tool.includes("/") // not a protocol method
    // stderr and stdout are two pipes: the last call's line may arrive after its answer.
    const audits = await eventually(() => {
      const lines = server
        .stderr()
        .split("\n")
        .filter((line) => line.startsWith('{"audit"'))
        .map((line) => JSON.parse(line) as Audit)
      expect(lines.filter(isToolAudit).length).toBeGreaterThanOrEqual(calls.length)
      return lines
    })
    expect(audits).toContainEqual(
      expect.objectContaining({ tool: "read_skill_file", skill: "symlink-escape", outcome: "PathEscape" }),
    )
    expect(audits).toContainEqual(
      expect.objectContaining({ tool: "get_skill", skill: "pdf-processing", outcome: "ok" }),
    )
    // A skill asked for by its name is recorded under its id; a file read names its path.
    expect(audits).toContainEqual(
      expect.objectContaining({ tool: "get_skill", skill: "release-notes", outcome: "ok" }),
    )
    expect(audits).toContainEqual(
      expect.objectContaining({
        tool: "read_skill_file",
        skill: "pdf-processing",
        path: "references/forms.md",
        outcome: "ok",
      }),
    )
    // Exactly one line per tool call, in the order of the calls.
    expect(audits.filter(isToolAudit).map((audit) => audit.tool)).toEqual(calls.map((c) => c.name))
    for (const audit of audits)
      expect(audit).toMatchObject({
        time: expect.any(String),
        durationMs: expect.any(Number),
        outcome: expect.any(String),
        client: "skills-mcp-e2e",
      })
  })

  it("serves the init-skills prompt", async () => {
    const { prompts } = await server.client.listPrompts()
    expect(prompts.map((prompt) => prompt.name)).toContain("init-skills")
    const prompt = await server.client.getPrompt({ name: "init-skills" })
    const message = prompt.messages[0]?.content
    expect(message?.type === "text" && message.text).toContain("<skills-mcp-instructions>")
  })

  it("kept stdout pure JSON-RPC for the whole session", () => {
    expect(server.protocolErrors).toEqual([])
  })
})

describe("the process", () => {
  it("answers every request piped in, then exits 0 when stdin closes, with only JSON-RPC on stdout", async () => {
    const fixtures = await copyFixtures()
    try {
      const lines = [
        initializeLine(0),
        JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
        ...Array.from({ length: 20 }, (_, i) =>
          JSON.stringify({
            jsonrpc: "2.0",
            id: i + 1,
            method: "tools/call",
            params: { name: "get_skill", arguments: { id: "pdf-processing" } },
          }),
        ),
        JSON.stringify({ jsonrpc: "2.0", id: 99, method: "no/such/method" }),
        "this line is not JSON",
      ]
      const run = await runRaw([path.join(fixtures, "valid")], lines, { HOME: path.join(fixtures, "home") })
      expect(run.code).toBe(0)
      const messages = jsonRpcLines(run.stdout)
      const ids = messages.map((message) => message.id).filter((id) => id !== null)
      expect(new Set(ids)).toEqual(new Set([0, ...Array.from({ length: 20 }, (_, i) => i + 1), 99]))
      expect(messages.find((message) => message.id === 99)).toMatchObject({ error: { code: -32601 } })
      expect(messages.find((message) => message.id === null)).toMatchObject({ error: { code: -32700 } })
      expect(run.stderr).toContain("Skills roots:")
    } finally {
      await fs.rm(fixtures, { recursive: true, force: true })
    }
  })

  it("has written every audit line when it exits right after its last answer", async () => {
    const fixtures = await copyFixtures()
    try {
      const calls = toolCallLines(50, "get_skill", (i) => ({
        id: i % 2 === 0 ? "pdf-processing" : "no-such-skill",
      }))
      const lines = [
        initializeLine(0),
        JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
        ...calls,
      ]
      // stdin closes after the last call: the process exits as soon as it has answered them all.
      const run = await runRaw([path.join(fixtures, "valid")], lines, { HOME: path.join(fixtures, "home") })
      expect(run.code).toBe(0)
      const audits = run.stderr
        .split("\n")
        .filter((line) => line.startsWith('{"audit"'))
        .map((line) => JSON.parse(line) as { tool: string; outcome: string })
      expect(audits.map((audit) => `${audit.tool} ${audit.outcome}`).sort()).toEqual(
        [
          ...Array.from({ length: 25 }, () => "get_skill ok"),
          ...Array.from({ length: 25 }, () => "get_skill SkillNotFound"),
        ].sort(),
      )
    } finally {
      await fs.rm(fixtures, { recursive: true, force: true })
    }
  })

  it("keeps answering, and exits when stdin closes, after the reader of stderr has gone", async () => {
    const fixtures = await copyFixtures()
    try {
      // Each call writes an audit line to stderr, and the hostile skills log warnings.
      const calls = toolCallLines(50, "read_skill_file", () => ({ id: "pdf-processing", path: "../escape" }))
      const lines = [
        initializeLine(0),
        JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
        ...calls,
      ]
      const roots = [path.join(fixtures, "valid"), path.join(fixtures, "hostile")]
      const run = await runRaw(roots, lines, { HOME: path.join(fixtures, "home") }, { closeStderr: true })
      expect(run.code).toBe(0)
      const ids = jsonRpcLines(run.stdout).map((message) => message.id)
      expect(ids).toEqual(expect.arrayContaining([0, ...Array.from({ length: 50 }, (_, i) => i + 1)]))
    } finally {
      await fs.rm(fixtures, { recursive: true, force: true })
    }
  })

  it("exits with a clear message and code 2 when an explicit folder does not exist", async () => {
    const run = await runRaw(["--skills-dir", "/no/such/skills/folder"], [])
    expect(run.code).toBe(2)
    expect(run.stdout).toBe("")
    expect(run.stderr).toContain("Skills folder '/no/such/skills/folder'")
  })

  it("prints the usage guide for AGENTS.md", async () => {
    const xml = await runRaw(["instructions"], [])
    expect(xml.stdout).toMatch(/^<skills-mcp-instructions>\n/)
    const plain = await runRaw(["instructions", "--no-xml"], [])
    expect(plain.stdout).not.toContain("<skills-mcp-instructions>")
    expect(plain.stdout).toContain("get_skill")
  })
})
