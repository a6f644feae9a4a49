/**
 * The MCP Skills extension (SEP-2640), resources, prompts, completion, subscriptions, live
 * updates and logging, driven over stdio by the SDK's Client.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import * as Schema from "effect/Schema"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { RunningServer } from "../support/server.js"
import {
  CANARY,
  copyFixtures,
  decode,
  eventually,
  listAllSkills,
  request,
  resourceText,
  rpcError,
  startServer,
} from "../support/server.js"

const EXTENSION = "io.modelcontextprotocol/skills"
const PAGE = 3

// What SEP-2640 says an entry is, as a Schema: every listed entry is decoded with it.
const Digest = Schema.String.pipe(Schema.pattern(/^sha256:[0-9a-f]{64}$/))
const SkillUri = Schema.String.pipe(Schema.pattern(/^skill:\/\/[^?#]+\/SKILL\.md$/))
const SkillEntry = Schema.Struct({
  uri: SkillUri,
  frontmatter: Schema.Struct(
    { name: Schema.String, description: Schema.String },
    { key: Schema.String, value: Schema.Unknown },
  ),
  resources: Schema.Array(Schema.Struct({ uri: Schema.String, digest: Digest, size: Schema.NonNegativeInt })),
})
const ListResult = Schema.Struct({
  resultType: Schema.Literal("complete"),
  skills: Schema.Array(SkillEntry),
  nextCursor: Schema.optional(Schema.String),
  ttlMs: Schema.NonNegativeInt,
  cacheScope: Schema.Literal("public", "private"),
})
const GetResult = Schema.Struct({
  resultType: Schema.Literal("complete"),
  skill: SkillEntry,
  ttlMs: Schema.NonNegativeInt,
  cacheScope: Schema.Literal("public", "private"),
})
const DirectoryResult = Schema.Struct({
  resultType: Schema.Literal("complete"),
  resources: Schema.Array(
    Schema.Struct({
      uri: Schema.String,
      name: Schema.String,
      mimeType: Schema.String,
      size: Schema.optional(Schema.Number),
    }),
  ),
  nextCursor: Schema.optional(Schema.String),
})

/** What skill://diagnostics says of the skills left off skills/list. */
const Unpublished = Schema.Struct({
  unpublished: Schema.Array(Schema.Struct({ id: Schema.String, reason: Schema.String })),
})

let dir: string
let server: RunningServer

/** Every file under a folder, `/`-separated, following links that stay inside it. */
const filesUnder = async (root: string): Promise<Array<string>> => {
  const out: Array<string> = []
  const real = await fs.realpath(root)
  const walk = async (folder: string, prefix: string) => {
    for (const entry of (await fs.readdir(folder)).sort()) {
      const full = path.join(folder, entry)
      const target = await fs.realpath(full).catch(() => null)
      if (target === null || !(target === real || target.startsWith(`${real}/`))) continue
      const info = await fs.stat(target)
      if (info.isDirectory()) await walk(full, `${prefix}${entry}/`)
      else out.push(`${prefix}${entry}`)
    }
  }
  await walk(root, "")
  return out
}

/** The folder on disk of a skill path (all fixture skills have folder = name). */
const folderOf = async (skillPath: string) => {
  for (const root of ["valid", "hostile"]) {
    const folder = path.join(dir, root, skillPath)
    if (
      await fs.stat(folder).then(
        () => true,
        () => false,
      )
    )
      return folder
  }
  throw new Error(`no folder for ${skillPath}`)
}

beforeAll(async () => {
  dir = await copyFixtures()
  // A skill over the extension's 512-file limit: served by the tools, left out of skills/list.
  await fs.mkdir(path.join(dir, "valid", "many-files", "data"), { recursive: true })
  await fs.writeFile(
    path.join(dir, "valid", "many-files", "SKILL.md"),
    "---\nname: many-files\ndescription: A skill with more files than the Skills extension allows.\n---\nBody\n",
  )
  await Promise.all(
    Array.from({ length: 512 }, (_, i) =>
      fs.writeFile(path.join(dir, "valid", "many-files", "data", `${i}.txt`), `${i}`),
    ),
  )
  // Blank lines before the frontmatter: served by the tools, but the extension's hosts parse
  // SKILL.md from its first byte.
  await fs.mkdir(path.join(dir, "valid", "blank-first"))
  await fs.writeFile(
    path.join(dir, "valid", "blank-first", "SKILL.md"),
    "\n\n---\nname: blank-first\ndescription: Blank lines before the frontmatter.\n---\nBody\n",
  )
  server = await startServer(
    [
      path.join(dir, "valid"),
      path.join(dir, "hostile"),
      path.join(dir, "shadow"),
      "--page-size",
      String(PAGE),
    ],
    { env: { HOME: path.join(dir, "home") }, capabilities: { extensions: { [EXTENSION]: {} } } },
  )
})

afterAll(async () => {
  await server.close()
  await fs.rm(dir, { recursive: true, force: true })
})

describe("MCP Skills extension", () => {
  it("declares the extension with directoryRead, and the resources capability", () => {
    const capabilities = server.client.getServerCapabilities()
    expect(capabilities?.extensions?.[EXTENSION]).toEqual({ directoryRead: true })
    expect(capabilities?.resources).toEqual({ subscribe: true, listChanged: true })
    expect(capabilities?.logging).toEqual({})
  })

  it("lists every publishable skill across pages, each entry well-formed and complete", async () => {
    const { entries, pages } = await listAllSkills(server, ListResult)
    expect(pages.length).toBeGreaterThan(1)
    for (const page of pages) expect(page.skills.length).toBeLessThanOrEqual(PAGE)
    expect(entries.map((entry) => entry.uri)).toEqual([
      "skill://api-design/SKILL.md",
      "skill://brand-guidelines/SKILL.md",
      "skill://data/csv-analysis/SKILL.md",
      "skill://data/sql-queries/SKILL.md",
      "skill://git-commit-messages/SKILL.md",
      "skill://pdf-processing/SKILL.md",
      "skill://webapp-testing/SKILL.md",
      "skill://oversized/SKILL.md",
      "skill://symlink-escape/SKILL.md",
    ])
    for (const entry of entries) {
      const skillPath = entry.uri.slice("skill://".length, -"/SKILL.md".length)
      expect(skillPath.split("/").at(-1)).toBe(entry.frontmatter.name)
      const folder = await folderOf(skillPath)
      const onDisk = await filesUnder(folder)
      expect(entry.resources.map((resource) => resource.uri)).toEqual(
        onDisk.map((file) => `skill://${skillPath}/${file}`),
      )
      expect(entry.resources.filter((resource) => resource.uri === entry.uri)).toHaveLength(1)
      for (const resource of entry.resources) {
        const file = path.join(folder, resource.uri.slice(`skill://${skillPath}/`.length))
        const sha = execFileSync("sha256sum", [file], { encoding: "utf8" }).split(" ")[0]
        expect(resource.digest).toBe(`sha256:${sha}`)
        expect(resource.size).toBe((await fs.stat(file)).size)
      }
    }
  })

  it("passes the frontmatter through verbatim, every field the author wrote", async () => {
    const { skill } = await request(
      server,
      "skills/get",
      { uri: "skill://pdf-processing/SKILL.md" },
      GetResult,
    )
    expect(skill.frontmatter).toEqual({
      name: "pdf-processing",
      description:
        "Extract text and tables from PDF files, fill PDF forms, and merge or split documents. Use when the user mentions PDFs, forms, or document extraction.",
      license: "Apache-2.0",
      compatibility: "Requires Python 3.10+ with pypdf installed",
      metadata: { author: "skills-mcp examples", version: "1.2" },
      "allowed-tools": "Bash(python:*) Read",
    })
  })

  it("never lists a file behind a link that leaves the skill", async () => {
    const { skill } = await request(
      server,
      "skills/get",
      { uri: "skill://symlink-escape/SKILL.md" },
      GetResult,
    )
    const uris = skill.resources.map((resource) => resource.uri)
    expect(uris).toContain("skill://symlink-escape/references/also-inside.md")
    expect(uris.some((uri) => uri.includes("leak") || uri.includes("outside-dir"))).toBe(false)
  })

  it.each([
    [
      "an unknown skill",
      { uri: "skill://no-such-skill/SKILL.md" },
      "No resource is served at skill://no-such-skill/SKILL.md",
    ],
    [
      "a file that is not SKILL.md",
      { uri: "skill://pdf-processing/references/forms.md" },
      "skill://<skill-path>/SKILL.md",
    ],
    ["another scheme", { uri: "file:///etc/passwd" }, "only skill:// URIs"],
    ["a name breaking the naming rules", { uri: "skill://release-notes/SKILL.md" }, "naming rules"],
    ["a skill over 512 files", { uri: "skill://many-files/SKILL.md" }, "more than 512 files"],
    [
      "a SKILL.md with blank lines first",
      { uri: "skill://blank-first/SKILL.md" },
      "does not begin with '---'",
    ],
    ["missing params", {}, "'uri'"],
  ])("answers skills/get for %s with -32602", async (_label, params, message) => {
    const error = await rpcError(server, "skills/get", params)
    expect(error.code).toBe(-32602)
    expect(error.message).toContain(message)
  })

  it("names the skills left out for their content in skill://diagnostics, once listed", async () => {
    const { pages } = await listAllSkills(server, ListResult)
    for (const page of pages) expect(page.skills.length).toBeLessThanOrEqual(PAGE)
    const document = decode(Schema.parseJson(Unpublished), await resourceText(server, "skill://diagnostics"))
    expect(document.unpublished).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ id: "many-files", reason: "it has more than 512 files" }),
        expect.objectContaining({
          id: "blank-first",
          reason: expect.stringContaining("does not begin with '---'"),
        }),
      ]),
    )
  })

  it("reads directories: direct children, folders as inode/directory, paged", async () => {
    const root = await request(
      server,
      "resources/directory/read",
      { uri: "skill://pdf-processing" },
      DirectoryResult,
    )
    expect(root.resources).toEqual([
      { uri: "skill://pdf-processing/SKILL.md", name: "SKILL.md", mimeType: "text/markdown", size: 817 },
      { uri: "skill://pdf-processing/assets", name: "assets", mimeType: "inode/directory" },
      { uri: "skill://pdf-processing/references", name: "references", mimeType: "inode/directory" },
    ])
    expect(root.nextCursor).toBeDefined()
    const rest = await request(
      server,
      "resources/directory/read",
      { uri: "skill://pdf-processing", cursor: root.nextCursor },
      DirectoryResult,
    )
    expect(rest.resources.map((resource) => resource.name)).toEqual(["scripts"])
    expect(rest.nextCursor).toBeUndefined()
    const nested = await request(
      server,
      "resources/directory/read",
      { uri: "skill://data/csv-analysis/scripts" },
      DirectoryResult,
    )
    expect(nested.resources).toEqual([
      {
        uri: "skill://data/csv-analysis/scripts/profile.py",
        name: "profile.py",
        mimeType: "text/x-python",
        size: 244,
      },
    ])
    // A folder's URI may end with a slash.
    const slashed = await request(
      server,
      "resources/directory/read",
      { uri: "skill://data/csv-analysis/scripts/" },
      DirectoryResult,
    )
    expect(slashed.resources).toEqual(nested.resources)
    const linked = await request(
      server,
      "resources/directory/read",
      { uri: "skill://symlink-escape" },
      DirectoryResult,
    )
    expect(linked.resources.map((resource) => resource.name)).toEqual(["SKILL.md", "references"])
  })

  it.each([
    ["a file", "skill://pdf-processing/SKILL.md", "not a directory resource"],
    ["a missing folder", "skill://pdf-processing/nope", "not a directory resource"],
    ["an unknown skill", "skill://nope", "No resource is served"],
    ["a link out of the skill", "skill://symlink-escape/outside-dir", "outside the skill"],
  ])("answers resources/directory/read for %s with -32602", async (_label, uri, message) => {
    const error = await rpcError(server, "resources/directory/read", { uri })
    expect(error.code).toBe(-32602)
    expect(error.message).toContain(message)
  })
})

describe("resources", () => {
  it("lists SKILL.md of each skill with name and description, and the prompt-xml catalog", async () => {
    const all = []
    let cursor: string | undefined
    do {
      const page = await server.client.listResources(cursor === undefined ? {} : { cursor })
      all.push(...page.resources)
      cursor = page.nextCursor
    } while (cursor !== undefined)
    expect(all[0]).toMatchObject({ uri: "skill://prompt-xml", mimeType: "application/xml" })
    expect(all).toContainEqual(
      expect.objectContaining({
        uri: "skill://pdf-processing/SKILL.md",
        name: "pdf-processing",
        mimeType: "text/markdown",
        description: expect.stringContaining("Extract text"),
      }),
    )
    // A skill whose name breaks the rules is listed at the URI older clients use, by id.
    expect(all).toContainEqual(
      expect.objectContaining({
        uri: "skill://release-notes",
        name: "release-notes",
        title: "Release Notes Writer",
      }),
    )
  })

  it("reads text files as text and binary files as base64 blobs", async () => {
    const skillMd = await server.client.readResource({ uri: "skill://pdf-processing/SKILL.md" })
    expect(skillMd.contents[0]).toMatchObject({
      mimeType: "text/markdown",
      text: expect.stringMatching(/^---\nname: pdf-processing/),
    })
    const logo = await server.client.readResource({ uri: "skill://brand-guidelines/assets/logo.png" })
    const onDisk = await fs.readFile(path.join(dir, "valid", "brand-guidelines", "assets", "logo.png"))
    expect(logo.contents[0]).toEqual({
      uri: "skill://brand-guidelines/assets/logo.png",
      mimeType: "image/png",
      blob: onDisk.toString("base64"),
    })
  })

  it("serves the URIs of older clients: skill://<id> and skill://<id>/_manifest", async () => {
    const byId = await server.client.readResource({ uri: "skill://release-notes" })
    expect(byId.contents[0]).toMatchObject({
      mimeType: "text/markdown",
      text: expect.stringContaining("Release Notes Writer"),
    })
    const parsed: unknown = JSON.parse(await resourceText(server, "skill://pdf-processing/_manifest"))
    expect(parsed).toMatchObject({
      skill: "pdf-processing",
      files: expect.arrayContaining([
        { path: "references/forms.md", size: 341, hash: expect.stringMatching(/^sha256:[0-9a-f]{64}$/) },
      ]),
    })
  })

  it("serves the catalog as <available_skills> XML with each skill's URI", async () => {
    const text = await resourceText(server, "skill://prompt-xml")
    expect(text).toMatch(/^<available_skills>\n/)
    expect(text).toContain("<uri>skill://pdf-processing/SKILL.md</uri>")
    expect(text).toContain("<uri>skill://release-notes</uri>")
  })

  it.each([
    ["an unknown skill", "skill://nope/SKILL.md"],
    ["a link out of the skill", "skill://symlink-escape/references/leak.md"],
    ["a folder link out of the skill", "skill://symlink-escape/outside-dir/secret.txt"],
    ["an encoded parent segment", "skill://pdf-processing/%2e%2e/brand-guidelines/SKILL.md"],
    ["a parent segment", "skill://pdf-processing/../brand-guidelines/SKILL.md"],
    ["an encoded slash", "skill://pdf-processing/references%2f..%2f..%2fSKILL.md"],
    ["another scheme", "file:///etc/passwd"],
    ["a missing file", "skill://pdf-processing/references/nope.md"],
    ["a folder", "skill://pdf-processing/references"],
  ])("answers resources/read of %s with -32602 and nothing from outside", async (_label, uri) => {
    const error = await rpcError(server, "resources/read", { uri })
    expect(error.code).toBe(-32602)
    expect(error.message).not.toContain(CANARY)
  })

  it("offers a resource template whose skill and path complete", async () => {
    const { resourceTemplates } = await server.client.listResourceTemplates()
    expect(resourceTemplates.map((template) => template.uriTemplate)).toEqual(["skill://{+skill}/{+path}"])
    const ref = { type: "ref/resource" as const, uri: "skill://{+skill}/{+path}" }
    const skills = await server.client.complete({ ref, argument: { name: "skill", value: "da" } })
    expect(skills.completion.values).toEqual(["data/csv-analysis", "data/sql-queries"])
    const paths = await server.client.complete({
      ref,
      argument: { name: "path", value: "references/" },
      context: { arguments: { skill: "pdf-processing" } },
    })
    expect(paths.completion.values).toEqual(["references/forms.md"])
    const unknown = await server.client.complete({
      ref: { type: "ref/resource", uri: "other://{x}" },
      argument: { name: "x", value: "" },
    })
    expect(unknown.completion).toEqual({ values: [], total: 0, hasMore: false })
  })
})

describe("prompts", () => {
  it("lists init-skills, skill and one prompt per skill, each with a description", async () => {
    const all = []
    let cursor: string | undefined
    do {
      const page = await server.client.listPrompts(cursor === undefined ? {} : { cursor })
      all.push(...page.prompts)
      cursor = page.nextCursor
    } while (cursor !== undefined)
    expect(all.slice(0, 2).map((prompt) => prompt.name)).toEqual(["init-skills", "skill"])
    expect(all.map((prompt) => prompt.name)).toContain("pdf-processing")
    for (const prompt of all) expect(prompt.description?.length).toBeGreaterThan(0)
  })

  it("embeds SKILL.md as a resource for the assistant", async () => {
    for (const result of [
      await server.client.getPrompt({ name: "skill", arguments: { name: "pdf-processing" } }),
      await server.client.getPrompt({ name: "pdf-processing" }),
    ]) {
      const embedded = result.messages.find((message) => message.content.type === "resource")?.content
      expect(embedded).toMatchObject({
        type: "resource",
        resource: { uri: "skill://pdf-processing/SKILL.md", mimeType: "text/markdown" },
        annotations: { audience: ["assistant"], priority: 1 },
      })
    }
  })

  it("completes skill names, and answers unknown prompts and references without crashing", async () => {
    const names = await server.client.complete({
      ref: { type: "ref/prompt", name: "skill" },
      argument: { name: "name", value: "PD" },
    })
    expect(names.completion.values).toEqual(["pdf-processing"])
    const none = await server.client.complete({
      ref: { type: "ref/prompt", name: "nope" },
      argument: { name: "a", value: "" },
    })
    expect(none.completion.values).toEqual([])
    const error = await rpcError(server, "prompts/get", { name: "skill" })
    expect(error.code).toBe(-32602)
    expect(error.message).toContain("needs the skill's id or name")
  })
})

describe("live updates", () => {
  it("sends resources/updated to a subscriber when the file changes", async () => {
    const uri = "skill://api-design/references/pagination.md"
    await server.client.subscribeResource({ uri })
    await fs.appendFile(path.join(dir, "valid", "api-design", "references", "pagination.md"), "\nMore.\n")
    await eventually(() =>
      expect(server.notifications).toContainEqual(
        expect.objectContaining({ method: "notifications/resources/updated", params: { uri } }),
      ),
    )
    await server.client.unsubscribeResource({ uri })
    const error = await rpcError(server, "resources/subscribe", {
      uri: "skill://symlink-escape/references/leak.md",
    })
    expect(error.code).toBe(-32602)
  })

  it("sends list_changed notifications once a skill is added, and serves it", async () => {
    const before = server.notifications.length
    const folder = path.join(dir, "valid", "added-live")
    await fs.mkdir(folder)
    await fs.writeFile(
      path.join(folder, "SKILL.md"),
      "---\nname: added-live\ndescription: Added while serving.\n---\nHi\n",
    )
    await eventually(() => {
      const methods = server.notifications.slice(before).map((notification) => notification.method)
      expect(methods).toEqual(
        expect.arrayContaining([
          "notifications/tools/list_changed",
          "notifications/prompts/list_changed",
          "notifications/resources/list_changed",
        ]),
      )
    })
    const { skill } = await request(server, "skills/get", { uri: "skill://added-live/SKILL.md" }, GetResult)
    expect(skill.frontmatter.description).toBe("Added while serving.")
  })

  it("forwards log messages at or above the level the client set", async () => {
    // Without the watcher and with --refresh-ms 0, each request re-checks the disk first,
    // so a broken skill is logged (at warning) while that request is handled.
    const root = path.join(dir, "logging-root")
    await fs.mkdir(root)
    const quiet = await startServer([root, "--no-watch", "--refresh-ms", "0"], {
      env: { HOME: path.join(dir, "home") },
    })
    try {
      const error = await rpcError(quiet, "logging/setLevel", { level: "loud" })
      expect(error).toMatchObject({ code: -32602 })
      await quiet.client.setLoggingLevel("error")
      await fs.mkdir(path.join(root, "broken-quiet"))
      await fs.writeFile(path.join(root, "broken-quiet", "SKILL.md"), "---\nname: broken-quiet\n---\n")
      await quiet.client.callTool({ name: "list_skills", arguments: {} })
      await quiet.client.setLoggingLevel("warning")
      await fs.mkdir(path.join(root, "broken-loud"))
      await fs.writeFile(path.join(root, "broken-loud", "SKILL.md"), "---\nname: broken-loud\n---\n")
      await quiet.client.callTool({ name: "list_skills", arguments: {} })
      const messages = quiet.notifications
        .filter((notification) => notification.method === "notifications/message")
        .map((notification) => JSON.stringify(notification.params))
      expect(
        messages.some((message) => message.includes("broken-loud") && message.includes('"warning"')),
      ).toBe(true)
      expect(messages.some((message) => message.includes("broken-quiet"))).toBe(false)
    } finally {
      await quiet.close()
    }
  })
})

describe("catalog placement and tool listing", () => {
  /** A server on the valid fixtures with these options, for a client without the extension. */
  const startOnValid = (...options: Array<string>) =>
    startServer([path.join(dir, "valid"), ...options], { env: { HOME: path.join(dir, "home") } })
  /** The `tools/list` answer as sent (JSON). */
  const toolsListed = async (running: RunningServer) =>
    JSON.stringify(await request(running, "tools/list", {}, Schema.Unknown))

  it("puts the catalog in the instructions by default, within the budget", () => {
    const instructions = server.client.getInstructions() ?? ""
    expect(instructions).toContain("<available_skills>")
    expect(instructions).toContain("<id>pdf-processing</id>")
  })

  it("hides the tools from clients with the Skills extension under --tools auto, and honours --catalog", async () => {
    const auto = await startServer([path.join(dir, "valid"), "--tools", "auto", "--catalog", "tool"], {
      env: { HOME: path.join(dir, "home") },
      capabilities: { extensions: { [EXTENSION]: {} } },
    })
    const plain = await startOnValid("--tools", "auto", "--catalog", "none")
    try {
      expect((await auto.client.listTools()).tools).toEqual([])
      expect(auto.client.getInstructions()).not.toContain("<available_skills>")
      const tools = (await plain.client.listTools()).tools
      expect(tools.map((tool) => tool.name)).toEqual(["list_skills", "get_skill", "read_skill_file"])
      expect(tools[1]?.description).not.toContain("<available_skills>")
    } finally {
      await Promise.all([auto.close(), plain.close()])
    }
  })

  it("tells a client shown no tools how its host loads skills, with their URIs, not to call tools", async () => {
    const env = { HOME: path.join(dir, "home") }
    const host = await startServer([path.join(dir, "valid"), "--tools", "auto"], {
      env,
      capabilities: { extensions: { [EXTENSION]: {} } },
    })
    const never = await startServer([path.join(dir, "valid"), "--tools", "never"], { env })
    const plain = await startServer([path.join(dir, "valid"), "--tools", "auto"], { env })
    try {
      for (const session of [host, never]) {
        const instructions = session.client.getInstructions() ?? ""
        expect(instructions).toContain("your host loads them")
        expect(instructions).toContain("<uri>skill://pdf-processing/SKILL.md</uri>")
        expect(instructions).not.toMatch(/list_skills|get_skill|read_skill_file/)
      }
      expect(plain.client.getInstructions()).toContain("call get_skill with its id")
    } finally {
      await Promise.all([host.close(), never.close(), plain.close()])
    }
  })

  it("keeps the instructions and the whole tools/list within --catalog-budget, pointing to the rest", async () => {
    const budget = 6_500
    const small = await startOnValid("--catalog-budget", String(budget))
    try {
      const instructions = small.client.getInstructions() ?? ""
      expect(instructions.length).toBeLessThanOrEqual(budget)
      expect(instructions).toContain("<id>pdf-processing</id>")
      expect((await toolsListed(small)).length).toBeLessThanOrEqual(budget)
      const description = (await small.client.listTools()).tools[1]?.description ?? ""
      expect(description).toContain("<available_skills>")
      expect(description).toMatch(/\d+ more skills? not shown here: call list_skills with a query/)
    } finally {
      await small.close()
    }
  })

  it("bounds the instructions and tools/list each by its own budget, and says when one is below the fixed text", async () => {
    const [instructionsBudget, toolsBudget] = [1_500, 6_500]
    const apart = await startOnValid(
      "--instructions-budget",
      String(instructionsBudget),
      "--tools-budget",
      String(toolsBudget),
    )
    const below = await startOnValid("--catalog-budget", "3000")
    try {
      const instructions = apart.client.getInstructions() ?? ""
      expect(instructions.length).toBeLessThanOrEqual(instructionsBudget)
      expect(instructions).toContain("<available_skills>")
      const listed = await toolsListed(apart)
      expect(listed.length).toBeLessThanOrEqual(toolsBudget)
      expect(listed).toContain("<available_skills>")

      // 3,000 characters hold the guide and some of the catalog, not the tool definitions alone.
      expect((below.client.getInstructions() ?? "").length).toBeLessThanOrEqual(3_000)
      expect(below.client.getInstructions()).toContain("<available_skills>")
      const whole = await toolsListed(below)
      expect(whole).not.toContain("<available_skills>")
      expect(whole.length).toBeGreaterThan(3_000)
      await eventually(() =>
        expect(below.stderr()).toMatch(
          /The tools\/list budget of 3000 characters \(--tools-budget or --catalog-budget, or their environment variables\) leaves no room for a catalog: the tool definitions alone takes \d+ characters, more than the budget, and is sent whole\./,
        ),
      )
      expect(below.stderr()).not.toContain("The instructions budget")
    } finally {
      await Promise.all([apart.close(), below.close()])
    }
  })
})
