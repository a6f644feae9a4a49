/**
 * `serve --http`: MCP over stateless Streamable HTTP, driven through the SDK's own client
 * transport and through raw HTTP (health, readiness, Host/Origin checks, limits, shutdown).
 */
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { CallToolResultSchema, ResultSchema } from "@modelcontextprotocol/sdk/types.js"
import * as Schema from "effect/Schema"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { HttpServer } from "../support/http.js"
import { MCP_HEADERS, rpc, send, startHttpServer, whenReady } from "../support/http.js"
import { copyFixtures, decode, runRaw, toolText, VALID_SKILL_IDS } from "../support/server.js"

const SkillsList = Schema.Struct({
  skills: Schema.Array(Schema.Struct({ uri: Schema.String })),
  ttlMs: Schema.Number,
  cacheScope: Schema.Literal("public", "private"),
})
const SkillsGet = Schema.Struct({
  skill: Schema.Struct({ uri: Schema.String, frontmatter: Schema.Struct({ name: Schema.String }) }),
  cacheScope: Schema.Literal("public", "private"),
})
const AuditLine = Schema.parseJson(
  Schema.Struct({
    audit: Schema.Literal(true),
    tool: Schema.String,
    remote: Schema.String,
    outcome: Schema.String,
  }),
)

/** The audit records the server wrote to stderr. */
const auditLines = (stderr: string) =>
  stderr
    .split("\n")
    .filter((line) => line.includes('"audit":true'))
    .map((line) => decode(AuditLine, line, "audit line"))

describe("serve --http", () => {
  let fixtures: string
  let server: HttpServer
  let client: Client

  beforeAll(async () => {
    fixtures = await copyFixtures()
    server = await startHttpServer([path.join(fixtures, "valid")])
    // Requests before the first scan is done are refused (503); a loaded machine scans slowly.
    await whenReady(server)
    client = new Client({ name: "http-e2e", version: "1.0.0" })
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url)))
  })

  afterAll(async () => {
    await client?.close()
    await server?.stop()
    await fs.rm(fixtures, { recursive: true, force: true })
  })

  it("serves tools, resources and the Skills extension to the SDK's client, statelessly", async () => {
    const { tools } = await client.listTools()
    expect(tools.map((tool) => tool.name)).toEqual(["list_skills", "get_skill", "read_skill_file"])
    const listed = CallToolResultSchema.parse(await client.callTool({ name: "list_skills", arguments: {} }))
    for (const id of VALID_SKILL_IDS) expect(toolText(listed)).toContain(id)
    const got = CallToolResultSchema.parse(
      await client.callTool({ name: "get_skill", arguments: { id: "pdf-processing" } }),
    )
    expect(got.isError).not.toBe(true)
    expect(toolText(got)).toContain("pdf")
    const read = await client.readResource({ uri: "skill://pdf-processing/SKILL.md" })
    expect(JSON.stringify(read.contents)).toContain("pdf-processing")
    // Over HTTP the listing does not depend on the caller and nothing is pushed: public, with a freshness.
    const skills = decode(
      SkillsList,
      await client.request({ method: "skills/list", params: {} }, ResultSchema),
    )
    expect(skills.skills.map((entry) => entry.uri)).toContain("skill://pdf-processing/SKILL.md")
    expect(skills.cacheScope).toBe("public")
    expect(skills.ttlMs).toBeGreaterThan(0)
    const skill = decode(
      SkillsGet,
      await client.request(
        { method: "skills/get", params: { uri: "skill://pdf-processing/SKILL.md" } },
        ResultSchema,
      ),
    )
    expect(skill.skill.frontmatter.name).toBe("pdf-processing")
    expect(skill.cacheScope).toBe("public")
    // No session: the server gave none, so any replica could have answered each request.
    expect(client.transport?.sessionId).toBeUndefined()
  })

  it("audits reads with the caller's address, and writes nothing to stdout", async () => {
    await client.readResource({ uri: "skill://release-notes/SKILL.md" })
    const records = auditLines(server.stderr()).filter((record) => record.tool === "resources/read")
    expect(records.length).toBeGreaterThan(0)
    expect(records.at(-1)?.remote).toMatch(/^127\.0\.0\.1:\d+$/)
    expect(server.stdout()).toBe("")
  })

  it("logs a skill left out of skills/list once, not at every request", async () => {
    const root = await fs.mkdtemp(path.join(fixtures, "left-out-"))
    await fs.mkdir(path.join(root, "blank-first"))
    await fs.writeFile(
      path.join(root, "blank-first", "SKILL.md"),
      "\n---\nname: blank-first\ndescription: Frontmatter after a blank line.\n---\nBody.\n",
    )
    const own = await startHttpServer([root])
    const ownClient = new Client({ name: "http-e2e-left-out", version: "1.0.0" })
    try {
      await whenReady(own)
      await ownClient.connect(new StreamableHTTPClientTransport(new URL(own.url)))
      for (let round = 0; round < 3; round++) {
        const listed = decode(
          SkillsList,
          await ownClient.request({ method: "skills/list", params: {} }, ResultSchema),
        )
        expect(listed.skills).toEqual([])
      }
      expect(own.stderr().match(/left out of skills\/list/g)).toHaveLength(1)
    } finally {
      await ownClient.close()
      await own.stop()
    }
  })

  it("shows a skill added on disk (one catalog, kept fresh, for every request)", async () => {
    const dir = path.join(fixtures, "valid", "added-over-http")
    await fs.mkdir(dir)
    await fs.writeFile(
      path.join(dir, "SKILL.md"),
      "---\nname: added-over-http\ndescription: Added while serving.\n---\nBody.\n",
    )
    const uris = async () =>
      decode(
        SkillsList,
        await client.request({ method: "skills/list", params: {} }, ResultSchema),
      ).skills.map((entry) => entry.uri)
    while (!(await uris()).includes("skill://added-over-http/SKILL.md")) {
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  })

  it("answers /healthz and /readyz, 404 elsewhere, 405 for GET /mcp", async () => {
    expect((await send(server.port, { path: "/healthz" })).status).toBe(200)
    expect((await send(server.port, { path: "/readyz" })).status).toBe(200)
    const missing = await send(server.port, { path: "/nowhere" })
    expect(missing.status).toBe(404)
    expect(JSON.parse(missing.body)).toMatchObject({ jsonrpc: "2.0", error: { code: -32000 } })
    const get = await send(server.port, { path: "/mcp" })
    expect(get.status).toBe(405)
    expect(get.headers.allow).toBe("POST")
  })

  it("refuses a foreign Host or Origin with 403 and a JSON-RPC error (DNS rebinding)", async () => {
    const body = rpc("tools/list")
    const badHost = await send(server.port, {
      method: "POST",
      path: "/mcp",
      headers: { ...MCP_HEADERS, host: `rebound.attacker.example:${server.port}` },
      body,
    })
    expect(badHost.status).toBe(403)
    expect(JSON.parse(badHost.body)).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32000 } })
    expect(badHost.body).toContain("Host")
    const badOrigin = await send(server.port, {
      method: "POST",
      path: "/mcp",
      headers: { ...MCP_HEADERS, origin: "https://attacker.example" },
      body,
    })
    expect(badOrigin.status).toBe(403)
    expect(badOrigin.body).toContain("Origin")
    const goodOrigin = await send(server.port, {
      method: "POST",
      path: "/mcp",
      headers: { ...MCP_HEADERS, origin: "http://localhost:5173", host: `localhost:${server.port}` },
      body,
    })
    expect(goodOrigin.status).toBe(200)
    expect(goodOrigin.body).toContain("list_skills")
  })

  it("refuses a body over 1 MiB with 413", async () => {
    const big = Buffer.alloc(2 * 1024 * 1024, 0x20)
    const answer = await send(server.port, {
      method: "POST",
      path: "/mcp",
      headers: { ...MCP_HEADERS },
      body: big,
      // With Expect: 100-continue the refusal comes before the body is sent (without it, a client
      // still sending when the server closes the connection may see a broken pipe first).
      onContinue: (sendBody) => sendBody(),
    })
    expect(answer.status).toBe(413)
    expect(JSON.parse(answer.body)).toMatchObject({ jsonrpc: "2.0", error: { code: -32000 } })
  })

  it("answers 503 with Retry-After past 64 requests in flight", async () => {
    const held: Array<() => void> = []
    let taken!: () => void
    const allTaken = new Promise<void>((resolve) => {
      taken = resolve
    })
    const body = rpc("tools/list")
    const answers = Array.from({ length: 64 }, (_, index) =>
      send(server.port, {
        method: "POST",
        path: "/mcp",
        headers: { ...MCP_HEADERS },
        body: rpc("tools/list", {}, index),
        onContinue: (sendBody) => {
          held.push(sendBody)
          if (held.length === 64) taken()
        },
      }),
    )
    await allTaken
    const refused = await send(server.port, {
      method: "POST",
      path: "/mcp",
      headers: { ...MCP_HEADERS },
      body,
    })
    expect(refused.status).toBe(503)
    expect(refused.headers["retry-after"]).toBe("1")
    for (const sendBody of held) sendBody()
    for (const answer of await Promise.all(answers)) expect(answer.status).toBe(200)
  })
})

describe("serve --http start and stop", () => {
  it("answers /readyz 503 until the first scan is done, then 200; /healthz 200 all along", async () => {
    const root = await fs.mkdtemp(path.join((await import("node:os")).tmpdir(), "skills-mcp-http-"))
    // Enough skills that the first scan outlasts the first request.
    const count = 5_000
    for (let index = 0; index < count; index++) {
      const dir = path.join(root, `skill-${index}`)
      await fs.mkdir(dir)
      await fs.writeFile(
        path.join(dir, "SKILL.md"),
        `---\nname: skill-${index}\ndescription: Skill ${index}.\n---\nBody.\n`,
      )
    }
    const server = await startHttpServer(["--no-watch", root], { SKILLS_MCP_MANIFEST_CACHE: "0" })
    try {
      expect((await send(server.port, { path: "/readyz" })).status).toBe(503)
      expect((await send(server.port, { path: "/healthz" })).status).toBe(200)
      const early = await send(server.port, {
        method: "POST",
        path: "/mcp",
        headers: { ...MCP_HEADERS },
        body: rpc("tools/list"),
      })
      expect(early.status).toBe(503)
      let status = 503
      while (status === 503) {
        await new Promise((resolve) => setTimeout(resolve, 50))
        status = (await send(server.port, { path: "/readyz" })).status
      }
      expect(status).toBe(200)
    } finally {
      expect(await server.stop()).toBe(0)
      await fs.rm(root, { recursive: true, force: true })
    }
  })

  it("on SIGTERM, answers the request in flight, then exits 0", async () => {
    const fixtures = await copyFixtures()
    const server = await startHttpServer([path.join(fixtures, "valid")])
    try {
      let status = 503
      while (status === 503) status = (await send(server.port, { path: "/readyz" })).status
      const answer = await send(server.port, {
        method: "POST",
        path: "/mcp",
        headers: { ...MCP_HEADERS },
        body: rpc("tools/list"),
        // The server holds the request (it said 100 Continue); it is told to stop before the body comes.
        onContinue: (sendBody) => {
          server.child.kill("SIGTERM")
          // The signal is handled before more input is read: the body follows on a later turn.
          setTimeout(sendBody, 200)
        },
      })
      expect(answer.status).toBe(200)
      expect(answer.body).toContain("list_skills")
      expect(await server.exited).toBe(0)
      expect(server.stdout()).toBe("")
    } finally {
      server.child.kill("SIGKILL")
      await fs.rm(fixtures, { recursive: true, force: true })
    }
  })

  it("with --no-auth listens on every address, taking IP addresses and --allowed-hosts names as Host", async () => {
    const fixtures = await copyFixtures()
    const server = await startHttpServer([
      "--http",
      "0.0.0.0:0",
      "--no-auth",
      "--allowed-hosts",
      "skills.example.com",
      path.join(fixtures, "valid"),
    ])
    try {
      expect(server.url).toMatch(/^http:\/\/0\.0\.0\.0:\d+\/mcp$/)
      const status = (host: string) =>
        send(server.port, { path: "/healthz", headers: { host } }).then((a) => a.status)
      expect(await status(`127.0.0.1:${server.port}`)).toBe(200)
      expect(await status(`10.1.2.3:${server.port}`)).toBe(200)
      expect(await status("skills.example.com")).toBe(200)
      expect(await status(`rebound.attacker.example:${server.port}`)).toBe(403)
    } finally {
      expect(await server.stop()).toBe(0)
      await fs.rm(fixtures, { recursive: true, force: true })
    }
  })

  it("refuses a non-loopback address without --no-auth, exit code 2, and says why", async () => {
    const fixtures = await copyFixtures()
    try {
      const run = await runRaw(["--http", "0.0.0.0:0", path.join(fixtures, "valid")], [])
      expect(run.code).toBe(2)
      expect(run.stderr).toContain("not a loopback address")
      expect(run.stderr).toContain("--no-auth")
      expect(run.stdout).toBe("")
    } finally {
      await fs.rm(fixtures, { recursive: true, force: true })
    }
  })
})
