/**
 * `serve --http --auth FILE`: bearer tokens (static, JWT) on every POST to /mcp, 401 with
 * `WWW-Authenticate` and the RFC 9728 document otherwise, the file read again when it changes,
 * and the usage errors of the HTTP options.
 */
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { ResultSchema } from "@modelcontextprotocol/sdk/types.js"
import * as Schema from "effect/Schema"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { HttpAnswer, HttpServer } from "../support/http.js"
import { MCP_HEADERS, rpc, send, startHttpServer, whenReady } from "../support/http.js"
import type { SigningKey } from "../support/jwt.js"
import { AUDIENCE, ISSUER, makeSigningKey, serveJwks, sha256, signJwt } from "../support/jwt.js"
import { copyFixtures, decode, eventually, runRaw } from "../support/server.js"

const ALICE = "alice-static-token-1"
const BOB = "bob-static-token-2"

/** An auth file: static tokens by name, and a jwt section whose keys are at `jwks`. */
const authYaml = (tokens: Readonly<Record<string, string>>, jwks: string) => `
tokens:
${Object.entries(tokens)
  .map(([name, token]) => `  - { name: ${name}, sha256: "${sha256(token)}", groups: [design] }`)
  .join("\n")}
groups:
  design: { allow: ["*"] }
jwt:
  issuer: "${ISSUER}"
  jwks: "${jwks}"
  audience: "${AUDIENCE}"
  groups_claim: groups
`

/**
 * The built server on a copy of fixtures/valid with `--auth <dir>/auth.yaml`, once the files given
 * are written in a fresh `dir`; `stop` ends it and removes both folders.
 */
const startWithAuth = async (files: Readonly<Record<string, string>>) => {
  const fixtures = await copyFixtures()
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "skills-mcp-auth-"))
  for (const [name, text] of Object.entries(files)) await fs.writeFile(path.join(dir, name), text)
  const server = await startHttpServer(["--auth", path.join(dir, "auth.yaml"), path.join(fixtures, "valid")])
  await whenReady(server)
  const stop = async () => {
    await server.stop()
    await fs.rm(fixtures, { recursive: true, force: true })
    await fs.rm(dir, { recursive: true, force: true })
  }
  return { server, dir, stop }
}

/** POST /mcp tools/list with this Authorization header (none when undefined). */
const toolsList = (server: HttpServer, authorization?: string): Promise<HttpAnswer> =>
  send(server.port, {
    method: "POST",
    path: "/mcp",
    headers: { ...MCP_HEADERS, ...(authorization === undefined ? {} : { authorization }) },
    body: rpc("tools/list"),
  })

/** Where the 401 points: the RFC 9728 document of the resource (the JWT audience), path-suffixed. */
const METADATA_URL = "https://skills.test.example/.well-known/oauth-protected-resource/mcp"

/** A refusal: 401, a JSON-RPC error body, and the challenge naming the metadata document. */
const expectUnauthorized = (answer: HttpAnswer, invalid: boolean) => {
  expect(answer.status).toBe(401)
  expect(JSON.parse(answer.body)).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32000 } })
  expect(answer.headers["www-authenticate"]).toBe(
    `Bearer ${invalid ? 'error="invalid_token", ' : ""}resource_metadata="${METADATA_URL}"`,
  )
}

describe("serve --http --auth", () => {
  let dir: string
  let key: SigningKey
  let server: HttpServer
  let stop: () => Promise<void>

  beforeAll(async () => {
    key = await makeSigningKey()
    ;({ server, dir, stop } = await startWithAuth({
      "jwks.json": JSON.stringify(key.jwks),
      "auth.yaml": authYaml({ alice: ALICE }, "jwks.json"),
    }))
  })

  afterAll(async () => stop?.())

  it("answers a request without a token 401, names the metadata document, and serves it", async () => {
    expectUnauthorized(await toolsList(server), false)
    for (const suffix of ["", "/mcp"]) {
      const answer = await send(server.port, { path: `/.well-known/oauth-protected-resource${suffix}` })
      expect(answer.status).toBe(200)
      expect(answer.headers["content-type"]).toBe("application/json")
      expect(JSON.parse(answer.body)).toEqual({
        resource: AUDIENCE,
        authorization_servers: [ISSUER],
        bearer_methods_supported: ["header"],
      })
    }
    // Health and readiness need no token.
    expect((await send(server.port, { path: "/healthz" })).status).toBe(200)
    expect((await send(server.port, { path: "/readyz" })).status).toBe(200)
  })

  it("serves a static token's requests, through the SDK's client too; refuses a wrong one", async () => {
    expect((await toolsList(server, `Bearer ${ALICE}`)).status).toBe(200)
    const client = new Client({ name: "auth-e2e", version: "1.0.0" })
    await client.connect(
      new StreamableHTTPClientTransport(new URL(server.url), {
        requestInit: { headers: { authorization: `Bearer ${ALICE}` } },
      }),
    )
    try {
      const { tools } = await client.listTools()
      expect(tools.map((tool) => tool.name)).toContain("get_skill")
    } finally {
      await client.close()
    }
    expectUnauthorized(await toolsList(server, `Bearer ${ALICE}x`), true)
    expectUnauthorized(await toolsList(server, `Basic ${Buffer.from("alice:x").toString("base64")}`), false)
    // The refusal is logged with why, never with the token, and audited.
    expect(server.stderr()).toContain("Refused a bearer token")
    expect(server.stderr()).toMatch(
      /"audit":true,.*"tool":"POST \/mcp","outcome":"InvalidToken","remote":"127\.0\.0\.1:\d+"/,
    )
    expect(server.stderr()).toMatch(/"tool":"POST \/mcp","outcome":"MissingToken"/)
    expect(server.stderr()).not.toContain(`${ALICE}x`)
  })

  it("audits an authenticated POST the transport refuses before any handler, with its status and caller", async () => {
    const post = (headers: Record<string, string>, body: string) =>
      send(server.port, {
        method: "POST",
        path: "/mcp",
        headers: { ...MCP_HEADERS, authorization: `Bearer ${ALICE}`, ...headers },
        body,
      })
    const refusals: Array<[Record<string, string>, string, number]> = [
      [{}, "{not json", 400],
      [{ accept: "text/html" }, rpc("tools/list"), 406],
      [{ "content-type": "text/plain" }, rpc("tools/list"), 415],
      [{ "mcp-protocol-version": "1999-01-01" }, rpc("tools/list"), 400],
    ]
    for (const [headers, body, status] of refusals) {
      const before = server.stderr().length
      expect((await post(headers, body)).status).toBe(status)
      await eventually(() =>
        expect(server.stderr().slice(before)).toMatch(
          new RegExp(
            `"audit":true,.*"tool":"POST /mcp","outcome":"Refused","status":${status},"remote":"127\\.0\\.0\\.1:\\d+","caller":"alice"`,
          ),
        ),
      )
    }
    const tooLarge = await send(server.port, {
      method: "POST",
      path: "/mcp",
      headers: { ...MCP_HEADERS, authorization: `Bearer ${ALICE}` },
      body: "x".repeat(2 * 1024 * 1024),
    }).catch(() => undefined)
    if (tooLarge !== undefined) expect(tooLarge.status).toBe(413)
    await eventually(() =>
      expect(server.stderr()).toMatch(/"outcome":"Refused","status":413,"remote":"127\.0\.0\.1:\d+"/),
    )
  })

  it("serves a valid JWT's requests; refuses expired, foreign, forged or early ones", async () => {
    const valid = await signJwt(key, { sub: "dana", groups: ["design"] })
    expect((await toolsList(server, `Bearer ${valid}`)).status).toBe(200)
    const other = await makeSigningKey()
    const now = Math.floor(Date.now() / 1000)
    const refused = {
      expired: await signJwt(key, { sub: "d" }, { expiresAt: now - 60 }),
      "wrong audience": await signJwt(key, { sub: "d" }, { audience: "https://other.example/mcp" }),
      "wrong issuer": await signJwt(key, { sub: "d" }, { issuer: "https://evil.example/" }),
      "bad signature": await signJwt(other, { sub: "d" }),
      "not yet valid": await signJwt(key, { sub: "d" }, { notBefore: now + 3600 }),
    }
    for (const [what, jwt] of Object.entries(refused)) {
      const answer = await toolsList(server, `Bearer ${jwt}`)
      expect(answer.status, what).toBe(401)
      expect(answer.headers["www-authenticate"], what).toContain('error="invalid_token"')
    }
  })

  it("reads the file again when it changes: a new token works, a removed one is refused, a broken file keeps the last good", async () => {
    const file = path.join(dir, "auth.yaml")
    // Replaced whole (a new file renamed over it), as editors and deploy tools do.
    await fs.writeFile(`${file}.new`, authYaml({ bob: BOB }, "jwks.json"))
    await fs.rename(`${file}.new`, file)
    await eventually(async () => expect((await toolsList(server, `Bearer ${BOB}`)).status).toBe(200))
    expect((await toolsList(server, `Bearer ${ALICE}`)).status).toBe(401)
    // Written in place, broken: logged, and bob's token still works.
    await fs.writeFile(file, "tokens:\n  - { name: carol, sha256: not-a-digest }\n")
    await eventually(() => expect(server.stderr()).toContain("the last good version stays in force"))
    expect(server.stderr()).toContain("token 'carol': sha256 must be")
    expect((await toolsList(server, `Bearer ${BOB}`)).status).toBe(200)
    for (const token of [ALICE, BOB]) expect(server.stderr()).not.toContain(token)
  })

  it("reads a JWKS file again when it changes (a key rotated)", async () => {
    // The auth file is good again (the last test left it broken, which keeps the keys read with it).
    const reads = () => server.stderr().split("read again").length
    const before = reads()
    await fs.writeFile(path.join(dir, "auth.yaml"), authYaml({ bob: BOB }, "jwks.json"))
    await eventually(() => expect(reads()).toBeGreaterThan(before))
    const rotated = await makeSigningKey("rotated-key")
    const jwt = await signJwt(rotated, { sub: "frank" }, { kid: "rotated-key" })
    expect((await toolsList(server, `Bearer ${jwt}`)).status).toBe(401)
    await fs.writeFile(path.join(dir, "jwks.json"), JSON.stringify(rotated.jwks))
    await eventually(async () => expect((await toolsList(server, `Bearer ${jwt}`)).status).toBe(200))
  })
})

describe("serve --http --auth with a resource under a path", () => {
  it("serves the metadata document at the path its 401 names (the well-known path, then the resource's)", async () => {
    const { server, stop } = await startWithAuth({
      "auth.yaml": `resource: "https://skills.example.com/team/mcp"\ntokens:\n  - { name: alice, sha256: "${sha256(ALICE)}" }\n`,
    })
    try {
      const refused = await toolsList(server)
      expect(refused.status).toBe(401)
      const named = "https://skills.example.com/.well-known/oauth-protected-resource/team/mcp"
      expect(refused.headers["www-authenticate"]).toBe(`Bearer resource_metadata="${named}"`)
      const answer = await send(server.port, { path: new URL(named).pathname })
      expect(answer.status).toBe(200)
      expect(JSON.parse(answer.body)).toMatchObject({ resource: "https://skills.example.com/team/mcp" })
    } finally {
      await stop()
    }
  })
})

describe("serve --http --auth with a JWKS URL, and start-up", () => {
  it("verifies JWTs with the keys of a JWKS URL, listening on every address", async () => {
    const key = await makeSigningKey()
    const jwks = await serveJwks(key.jwks)
    const fixtures = await copyFixtures()
    const file = path.join(fixtures, "auth.yaml")
    await fs.writeFile(file, authYaml({}, jwks.url).replace("tokens:\n", "tokens: []\n"))
    // With --auth, a non-loopback address needs no --no-auth.
    const server = await startHttpServer([
      "--http",
      "0.0.0.0:0",
      "--auth",
      file,
      path.join(fixtures, "valid"),
    ])
    try {
      await whenReady(server)
      const valid = await signJwt(key, { sub: "erin" })
      expect((await toolsList(server, `Bearer ${valid}`)).status).toBe(200)
      expect(jwks.fetches()).toBeGreaterThan(0)
      const forged = await signJwt(await makeSigningKey(), { sub: "erin" })
      expect((await toolsList(server, `Bearer ${forged}`)).status).toBe(401)
      expect((await toolsList(server)).status).toBe(401)
    } finally {
      expect(await server.stop()).toBe(0)
      await jwks.close()
      await fs.rm(fixtures, { recursive: true, force: true })
    }
  })

  it("refuses, with exit code 2 and a reason, a bad auth file and HTTP options without --http", async () => {
    const fixtures = await copyFixtures()
    const file = path.join(fixtures, "auth.yaml")
    await fs.writeFile(file, `tokens:\n  - { name: alice, sha256: "${sha256(ALICE)}", groups: [nope] }\n`)
    const skills = path.join(fixtures, "valid")
    try {
      const cases: ReadonlyArray<readonly [ReadonlyArray<string>, string]> = [
        [["--http", "127.0.0.1:0", "--auth", file], "token 'alice': group 'nope' is not defined"],
        [["--http", "127.0.0.1:0", "--auth", path.join(fixtures, "absent.yaml")], "cannot read it"],
        [["--auth", file], "option --auth applies only to serving over HTTP"],
        [["--no-auth"], "option --no-auth applies only to serving over HTTP"],
        [["--allowed-hosts", "x.example"], "option --allowed-hosts applies only to serving over HTTP"],
        [["--http", "127.0.0.1:0", "--auth", file, "--no-auth"], "contradict each other"],
      ]
      for (const [args, reason] of cases) {
        const run = await runRaw([...args, skills], [])
        expect(run.code, args.join(" ")).toBe(2)
        expect(run.stderr, args.join(" ")).toContain(reason)
        expect(run.stdout).toBe("")
      }
    } finally {
      await fs.rm(fixtures, { recursive: true, force: true })
    }
  })
})

const Listed = Schema.Struct({ skills: Schema.Array(Schema.Struct({ id: Schema.String })) })
const AuditLine = Schema.Struct({ tool: Schema.String, caller: Schema.optional(Schema.String) })

describe("serve --http --auth: each caller's catalog", () => {
  const CAROL = "carol-static-token-3"
  const DAVE = "dave-static-token-4"
  let server: HttpServer
  let stop: () => Promise<void>

  beforeAll(async () => {
    // carol: her own patterns; dave: his group's, less what he is denied.
    ;({ server, stop } = await startWithAuth({
      "auth.yaml": `tokens:
  - { name: carol, sha256: "${sha256(CAROL)}", allow: ["pdf-*", "csv-*"] }
  - { name: dave, sha256: "${sha256(DAVE)}", groups: [writers], deny: ["release-*"] }
groups:
  writers: { allow: ["*-notes", "git-*", "brand-*"] }
`,
    }))
  })

  afterAll(async () => stop?.())

  /** What a caller sees: the catalog in get_skill's description, list_skills, skills/list, and a hidden skill's answers. */
  const seen = async (token: string) => {
    const client = new Client({ name: "callers-e2e", version: "1.0.0" })
    await client.connect(
      new StreamableHTTPClientTransport(new URL(server.url), {
        requestInit: { headers: { authorization: `Bearer ${token}` } },
      }),
    )
    try {
      const { tools } = await client.listTools()
      const description = tools.find((tool) => tool.name === "get_skill")?.description ?? ""
      const listed = await client.callTool({ name: "list_skills", arguments: {} })
      const ids = decode(Listed, listed.structuredContent).skills.map((skill) => skill.id)
      const extension = await client.request({ method: "skills/list", params: {} }, ResultSchema)
      const hidden = await client.callTool({ name: "get_skill", arguments: { id: "api-design" } })
      const missing = await client.callTool({ name: "get_skill", arguments: { id: "no-such-skill" } })
      let read: string
      try {
        await client.readResource({ uri: "skill://api-design/SKILL.md" })
        read = "read"
      } catch (error) {
        read = error instanceof Error ? error.message : String(error)
      }
      return { description, ids, extension, hidden, missing, read }
    } finally {
      await client.close()
    }
  }

  it("shows each caller only the skills its patterns and groups allow; the others answer as missing", async () => {
    const carol = await seen(CAROL)
    expect(carol.ids).toEqual(["csv-analysis", "pdf-processing"])
    expect(carol.description).toContain("<id>pdf-processing</id>")
    expect(carol.description).not.toContain("api-design")
    expect(carol.extension).toMatchObject({ cacheScope: "private" })
    expect(JSON.stringify(carol.extension)).not.toContain("api-design")
    expect(carol.hidden).toMatchObject({ isError: true })
    const text = (result: typeof carol.hidden) =>
      JSON.stringify(result.content).replaceAll("no-such-skill", "api-design")
    expect(text(carol.hidden)).toBe(text(carol.missing))
    expect(carol.read).toContain("No resource is served at skill://api-design/SKILL.md")

    const dave = await seen(DAVE)
    expect(dave.ids).toEqual(["brand-guidelines", "git-commit-messages"])

    // The audit log names the caller of each request.
    const lines = server
      .stderr()
      .split("\n")
      .filter((line) => line.startsWith('{"audit":true'))
      .map((line) => decode(AuditLine, JSON.parse(line)))
    expect(lines.filter((line) => line.caller === "carol").map((line) => line.tool)).toEqual(
      expect.arrayContaining(["tools/list", "list_skills", "skills/list", "get_skill", "resources/read"]),
    )
    expect(lines.some((line) => line.caller === "dave")).toBe(true)
    expect(lines.every((line) => line.caller === "carol" || line.caller === "dave")).toBe(true)
  })
})
