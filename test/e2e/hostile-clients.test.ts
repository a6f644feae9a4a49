/**
 * Hostile clients: malformed JSON-RPC, wrong arguments, 10 MB lines, thousands of requests at
 * once, requests before `initialize`, signals; then the operator's allow/deny lists and the
 * audit trail of every read. Raw lines go to the built bin's stdin, as a broken client would
 * send them; every stdout line must still be JSON-RPC.
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { CallToolResultSchema, ResultSchema } from "@modelcontextprotocol/sdk/types.js"
import * as Schema from "effect/Schema"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { MAX_IN_FLIGHT } from "../../src/mcp/Transport.js"
import {
  BIN,
  callTool,
  copyFixtures,
  eventually,
  initializeLine,
  jsonRpcLines,
  request,
  runRaw,
  startServer,
  toolText,
} from "../support/server.js"

let fixtures: string
let valid: string
let env: Record<string, string>

beforeAll(async () => {
  fixtures = await copyFixtures()
  valid = path.join(fixtures, "valid")
  env = { HOME: path.join(fixtures, "home") }
})

afterAll(async () => {
  await fs.rm(fixtures, { recursive: true, force: true })
})

const INITIALIZED = JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })
const rpc = (id: number | string, method: string, params?: unknown) =>
  JSON.stringify({ jsonrpc: "2.0", id, method, ...(params === undefined ? {} : { params }) })
const tool = (id: number, name: string, args?: unknown) =>
  rpc(id, "tools/call", { name, ...(args === undefined ? {} : { arguments: args }) })

/** Runs the lines after initialize; answers by id (every stdout line must be JSON-RPC). */
const session = async (lines: ReadonlyArray<string>, args: ReadonlyArray<string> = [valid]) => {
  const run = await runRaw(args, [initializeLine(0), INITIALIZED, ...lines], env)
  expect(run.code).toBe(0)
  const messages = jsonRpcLines(run.stdout)
  return { run, messages, byId: new Map(messages.map((message) => [message.id, message])) }
}

describe("malformed JSON-RPC", () => {
  it("answers each broken line with the right error and keeps serving", async () => {
    const { messages, byId } = await session([
      "{not json",
      "42",
      "null",
      JSON.stringify({ id: 1, method: "tools/list" }),
      JSON.stringify({ jsonrpc: "2.0", id: 2, method: 7 }),
      JSON.stringify([{ jsonrpc: "2.0", id: 3, method: "tools/list" }]),
      rpc(4, "no/such/method"),
      JSON.stringify({ jsonrpc: "2.0", method: "notifications/no-such-notification" }),
      JSON.stringify({ jsonrpc: "2.0", id: 999, result: {} }),
      rpc(5, "tools/call", { arguments: {} }),
      rpc(6, "resources/read", { uri: 5 }),
      rpc(7, "tools/list"),
    ])
    const errors = messages.filter((message) => message.id === null).map((message) => message.error)
    expect(errors).toContainEqual(expect.objectContaining({ code: -32700 }))
    expect(
      errors.filter((error) => (error as { code: number }).code === -32600).length,
    ).toBeGreaterThanOrEqual(3)
    for (const id of [1, 2, 3]) {
      if (byId.has(id)) expect(byId.get(id)).toMatchObject({ error: { code: -32600 } })
    }
    expect(byId.get(4)).toMatchObject({ error: { code: -32601 } })
    expect(byId.get(5)).toMatchObject({ error: { code: -32602 } })
    expect(byId.get(6)).toMatchObject({ error: { code: -32602 } })
    expect(byId.get(7)).toMatchObject({ result: { tools: expect.any(Array) } })
    expect(byId.has(999)).toBe(false)
  })

  it("answers wrong, missing and extra tool arguments with an isError result naming the argument", async () => {
    const { byId } = await session([
      tool(1, "get_skill", { id: 5 }),
      tool(2, "get_skill", {}),
      tool(3, "get_skill"),
      tool(4, "get_skill", { id: "pdf-processing", extra: true }),
      tool(5, "read_skill_file", { id: "pdf-processing", path: ["SKILL.md"] }),
      tool(6, "list_skills", { limit: "ten" }),
      tool(7, "no_such_tool", {}),
      tool(8, "get_skill", { id: "pdf-processing" }),
    ])
    const result = (id: number) => CallToolResultSchema.parse(byId.get(id)?.result)
    for (const [id, argument] of [
      [1, "'id'"],
      [2, "'id'"],
      [3, "'id'"],
      [4, "'extra'"],
      [5, "'path'"],
      [6, "'limit'"],
      [7, "no tool 'no_such_tool'"],
    ] as const) {
      expect(result(id).isError).toBe(true)
      expect(toolText(result(id))).toContain(argument)
    }
    expect(result(8).isError).toBeUndefined()
  })
})

describe("oversized input", () => {
  it("answers a 10 MB request with an error carrying its id, then serves the next one", async () => {
    const huge = rpc(1, "tools/call", { name: "get_skill", arguments: { id: "x".repeat(10 * 1024 * 1024) } })
    const garbage = "y".repeat(10 * 1024 * 1024)
    const { run, byId, messages } = await session([
      huge,
      garbage,
      tool(2, "get_skill", { id: "pdf-processing" }),
    ])
    expect(byId.get(1)).toMatchObject({ error: { code: -32600 } })
    expect(JSON.stringify(byId.get(1)).length).toBeLessThan(1_000)
    expect(messages.filter((message) => message.id === null)).toHaveLength(1)
    expect(JSON.stringify(byId.get(2))).toContain("# PDF processing")
    expect(run.stdout.length).toBeLessThan(200_000)
  })

  it("answers the SDK client's oversized request (id after params) with an error it receives", async () => {
    const server = await startServer([valid, "--refresh-ms", "0"], { env })
    try {
      // The SDK writes `id` last; the request must fail with the size error, not time out.
      const oversized = server.client.callTool(
        { name: "get_skill", arguments: { id: "x".repeat(1_200_000) } },
        undefined,
        { timeout: 15_000 },
      )
      await expect(oversized).rejects.toMatchObject({
        code: -32600,
        message: expect.stringContaining("Message too large"),
      })
      const next = await server.client.callTool({ name: "get_skill", arguments: { id: "pdf-processing" } })
      expect(next.isError).toBeUndefined()
      expect(server.protocolErrors).toEqual([])
    } finally {
      await server.close()
    }
  })

  it("refuses a 900 KB argument (under the line limit) without repeating it", async () => {
    const { byId } = await session([
      tool(1, "read_skill_file", { id: "pdf-processing", path: "a".repeat(900_000) }),
      rpc(2, "resources/read", { uri: `skill://pdf-processing/${"b".repeat(900_000)}` }),
    ])
    expect(JSON.stringify(byId.get(1))).toContain("longer than 4096 characters")
    expect(JSON.stringify(byId.get(1)).length).toBeLessThan(2_000)
    expect(byId.get(2)).toMatchObject({ error: { code: -32602 } })
    expect(JSON.stringify(byId.get(2)).length).toBeLessThan(2_000)
  })
})

describe("long arguments", () => {
  it("refuses a prompt argument or completion value longer than any skill name, unread", async () => {
    const { byId } = await session([
      rpc(1, "prompts/get", { name: "skill", arguments: { name: "q".repeat(200_000) } }),
      rpc(2, "completion/complete", {
        ref: { type: "ref/prompt", name: "skill" },
        argument: { name: "name", value: "v".repeat(200_000) },
      }),
      tool(3, "get_skill", { id: "pdf-processing" }),
    ])
    expect(byId.get(1)).toMatchObject({ error: { code: -32602, message: expect.stringContaining("1000") } })
    expect(byId.get(2)).toMatchObject({ error: { code: -32602 } })
    expect(JSON.stringify(byId.get(3))).toContain("# PDF processing")
  })
})

describe("echoes", () => {
  it("repeats at most 120 characters of any argument in a refusal", async () => {
    // Under each argument's own length cap (longer ones are refused without an echo).
    const long = (letter: string) => letter.repeat(900)
    const { byId } = await session([
      tool(1, "get_skill", { id: long("a") }),
      tool(2, "read_skill_file", { id: "pdf-processing", path: long("b") }),
      tool(3, long("c"), {}),
      rpc(4, "prompts/get", { name: long("d") }),
      rpc(5, long("e")),
      rpc(6, "resources/read", { uri: `skill://pdf-processing/${long("f")}` }),
      rpc(7, "skills/get", { uri: `skill://${long("g")}/SKILL.md` }),
      tool(8, "list_skills", { limit: long("h") }),
    ])
    for (const [id, letter] of [...["a", "b", "c", "d", "e", "f", "g", "h"].entries()].map(
      ([index, letter]) => [index + 1, letter] as const,
    )) {
      const answer = JSON.stringify(byId.get(id))
      expect(answer, `request ${id}`).toMatch(/error|isError/)
      expect(answer, `request ${id}`).not.toContain(letter.repeat(121))
    }
  })
})

describe("load", () => {
  it("answers 1,000 requests sent at once, each exactly once", async () => {
    const count = 1_000
    const lines = Array.from({ length: count }, (_, i) =>
      i % 3 === 0
        ? tool(i + 1, "get_skill", { id: "pdf-processing" })
        : i % 3 === 1
          ? tool(i + 1, "read_skill_file", { id: "pdf-processing", path: "references/forms.md" })
          : rpc(i + 1, "resources/read", { uri: "skill://pdf-processing/SKILL.md" }),
    )
    const { messages } = await session(lines)
    const ids = messages.map((message) => message.id).filter((id) => typeof id === "number" && id > 0)
    expect(ids).toHaveLength(count)
    expect(new Set(ids).size).toBe(count)
    expect(messages.some((message) => "error" in message && message.id !== 0)).toBe(false)
  })
})

describe("a client that stops reading", () => {
  // A skill holding a file of about 1 MiB: each resources/read answer is that large.
  const data = "0123456789".repeat(100_000)
  let root: string
  beforeAll(async () => {
    root = path.join(fixtures, "big-answers")
    await fs.mkdir(path.join(root, "big"), { recursive: true })
    await fs.writeFile(
      path.join(root, "big", "SKILL.md"),
      "---\nname: big\ndescription: Large data.\n---\nBig.\n",
    )
    await fs.writeFile(path.join(root, "big", "data.txt"), data)
  })

  it("stops taking requests while its answers are unread, then delivers every one in full", async () => {
    const count = 100
    // Requests padded with white space (valid JSON) to 8 KB each: 800 KB of input in all.
    const padded = (line: string) => `${line.slice(0, -1)}${" ".repeat(8_000)}}\n`
    const requests = Array.from({ length: count }, (_, i) =>
      padded(rpc(i + 1, "resources/read", { uri: "skill://big/data.txt" })),
    )
    const child = spawn(process.execPath, [BIN, root], { env: { PATH: process.env.PATH ?? "", ...env } })
    let stderr = ""
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8")
    })
    const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)))
    // Every request written and stdin closed; stdout is not read yet.
    child.stdin.write(`${initializeLine(0)}\n${INITIALIZED}\n`)
    for (const request of requests) child.stdin.write(request)
    child.stdin.end()
    const input = requests.join("").length
    const handled = () => stderr.split("\n").filter((line) => line.includes('"tool":"resources/read"')).length
    // Once the first answers are out of the server's hands, a while for it to take more.
    await eventually(() => expect(handled()).toBeGreaterThan(0))
    await new Promise((resolve) => setTimeout(resolve, 1_500))
    // It took none: at most the requests in flight at once were read, most of the input still
    // waits in the pipe, and the server is still up.
    expect(handled()).toBeLessThanOrEqual(MAX_IN_FLIGHT)
    expect(child.stdin.writableLength).toBeGreaterThan(input / 2)
    expect(child.exitCode).toBeNull()
    // Now the client reads: every answer arrives, in full, and the server exits at the end.
    let stdout = ""
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString("utf8")
    })
    expect(await exited).toBe(0)
    const messages = jsonRpcLines(stdout)
    const answers = messages.filter((message) => typeof message.id === "number" && message.id > 0)
    expect(answers.map((message) => message.id).sort((a, b) => Number(a) - Number(b))).toEqual(
      Array.from({ length: count }, (_, i) => i + 1),
    )
    for (const answer of answers) {
      expect(answer).toMatchObject({ result: { contents: [{ uri: "skill://big/data.txt", text: data }] } })
    }
    expect(stderr).not.toContain("abandoned")
  }, 90_000)

  it("gives up on answers never read once the input has ended, and says so on stderr", async () => {
    const reads = [1, 2, 3].map((id) => rpc(id, "resources/read", { uri: "skill://big/data.txt" }))
    const child = spawn(process.execPath, [BIN, root], { env: { PATH: process.env.PATH ?? "", ...env } })
    let stderr = ""
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8")
    })
    const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)))
    // stdout is never read.
    child.stdin.end([initializeLine(0), INITIALIZED, ...reads].map((line) => `${line}\n`).join(""))
    expect(await exited).toBe(0)
    expect(stderr).toMatch(/answer\(s\) the client did not read were abandoned/)
  })
})

describe("lifecycle", () => {
  it("refuses requests before initialize (ping excepted), then serves normally", async () => {
    const run = await runRaw(
      [valid],
      [
        rpc(1, "tools/list"),
        tool(2, "get_skill", { id: "pdf-processing" }),
        rpc(3, "ping"),
        initializeLine(0),
        INITIALIZED,
        rpc(4, "tools/list"),
      ],
      env,
    )
    const byId = new Map(jsonRpcLines(run.stdout).map((message) => [message.id, message]))
    expect(byId.get(1)).toMatchObject({
      error: { code: -32600, message: expect.stringContaining("initialize") },
    })
    expect(byId.get(2)).toMatchObject({ error: { code: -32600 } })
    expect(byId.get(3)).toMatchObject({ result: {} })
    expect(byId.get(4)).toMatchObject({ result: { tools: expect.any(Array) } })
  })

  it("exits 0 on SIGTERM, with only JSON-RPC on stdout", async () => {
    const child = spawn(process.execPath, [BIN, valid], { env: { PATH: process.env.PATH ?? "", ...env } })
    let stdout = ""
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString("utf8")
    })
    const answered = new Promise<void>((resolve) => {
      child.stdout.on("data", () => {
        if (stdout.includes('"id":0')) resolve()
      })
    })
    child.stdin.write(`${initializeLine(0)}\n${INITIALIZED}\n`)
    await answered
    const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)))
    child.kill("SIGTERM")
    expect(await exited).toBe(0)
    expect(jsonRpcLines(stdout).length).toBe(1)
  })
})

describe("allow and deny lists", () => {
  it("makes denied skills invisible on every surface", async () => {
    const server = await startServer([valid, "--deny", "pdf-*", "--refresh-ms", "0"], { env })
    try {
      const everything = [
        server.client.getInstructions() ?? "",
        JSON.stringify(await server.client.listTools()),
        toolText(await callTool(server, "list_skills", { limit: 100 })),
        toolText(await callTool(server, "list_skills", { query: "pdf" })),
        JSON.stringify(await request(server, "skills/list", {}, Schema.Unknown)),
        JSON.stringify(await server.client.listResources()),
        JSON.stringify(await server.client.listPrompts()),
        JSON.stringify(
          await server.client.complete({
            ref: { type: "ref/prompt", name: "skill" },
            argument: { name: "name", value: "p" },
          }),
        ),
        JSON.stringify(await server.client.readResource({ uri: "skill://prompt-xml" })),
      ].join("\n")
      expect(everything).not.toContain("pdf-processing")
      const denied = await callTool(server, "get_skill", { id: "pdf-processing" })
      expect(denied.isError).toBe(true)
      expect(toolText(denied)).not.toContain("Closest ids: 'pdf-processing'")
      await expect(server.client.readResource({ uri: "skill://pdf-processing/SKILL.md" })).rejects.toThrow()
      await expect(server.client.getPrompt({ name: "pdf-processing" })).rejects.toThrow()
      expect((await callTool(server, "get_skill", { id: "git-commit-messages" })).isError).toBeUndefined()
    } finally {
      await server.close()
    }
  })

  it("leaves out a skill folder inside a denied skill's, reached by a link of a permitted name", async () => {
    const inside = path.join(valid, "pdf-processing", "examples")
    await fs.mkdir(inside)
    await fs.writeFile(
      path.join(inside, "SKILL.md"),
      "---\nname: examples\ndescription: Files of the denied skill.\n---\nBody.\n",
    )
    await fs.symlink("pdf-processing/examples", path.join(valid, "examples"))
    const server = await startServer([valid, "--deny", "pdf-*", "--refresh-ms", "0"], { env })
    try {
      const listed = (await callTool(server, "list_skills", { limit: 100 })).structuredContent as {
        skills: Array<{ id: string }>
      }
      expect(listed.skills.map((skill) => skill.id)).not.toContain("examples")
      expect((await callTool(server, "get_skill", { id: "examples" })).isError).toBe(true)
      // Nor is it named as nested in another skill: that would tell of the denied one.
      expect(JSON.stringify(await server.client.readResource({ uri: "skill://diagnostics" }))).not.toContain(
        "examples",
      )
    } finally {
      await server.close()
      await fs.rm(path.join(valid, "examples"))
      await fs.rm(inside, { recursive: true })
    }
  })

  it("serves only allowed skills when SKILLS_MCP_ALLOW is set, and deny wins over allow", async () => {
    const server = await startServer([valid, "--deny", "*-messages", "--refresh-ms", "0"], {
      env: { ...env, SKILLS_MCP_ALLOW: "pdf-*,git-*" },
    })
    try {
      const listed = (await callTool(server, "list_skills", { limit: 100 })).structuredContent as {
        skills: Array<{ id: string }>
      }
      expect(listed.skills.map((skill) => skill.id)).toEqual(["pdf-processing"])
    } finally {
      await server.close()
    }
  })

  it("refuses an invalid pattern at start-up with exit code 2", async () => {
    const run = await runRaw([valid, "--allow", "team/*"], [], env)
    expect(run.code).toBe(2)
    expect(run.stderr).toContain("Invalid pattern 'team/*' in option --allow")
    expect(run.stdout).toBe("")
  })
})

describe("audit log", () => {
  it("records resource reads, directory reads, skills/get and prompt gets with the client's name", async () => {
    const server = await startServer([valid, "--refresh-ms", "0"], { env, clientName: "audited-client" })
    try {
      await server.client.readResource({ uri: "skill://pdf-processing/SKILL.md" })
      await server.client.request(
        { method: "resources/directory/read", params: { uri: "skill://pdf-processing/references" } },
        ResultSchema,
      )
      await server.client.request(
        { method: "skills/get", params: { uri: "skill://pdf-processing/SKILL.md" } },
        ResultSchema,
      )
      await server.client.getPrompt({ name: "skill", arguments: { name: "pdf-processing" } })
      await expect(server.client.readResource({ uri: "skill://pdf-processing/../x" })).rejects.toThrow()
      await server.client.callTool({ name: "get_skill", arguments: { id: "pdf-processing" } })
      await server.client.complete({
        ref: { type: "ref/resource", uri: "skill://{+skill}/{+path}" },
        argument: { name: "path", value: "ref" },
        context: { arguments: { skill: "pdf-processing" } },
      })
      await server.client.subscribeResource({ uri: "skill://pdf-processing/SKILL.md" })
      // A second initialize (another name) is refused: the audit keeps the first name.
      await server.transport.send({
        jsonrpc: "2.0",
        id: "again",
        method: "initialize",
        params: {
          protocolVersion: "2025-06-18",
          capabilities: {},
          clientInfo: { name: "impostor", version: "1" },
        },
      })
      await eventually(() =>
        expect(server.received.map((line) => JSON.parse(line) as unknown)).toContainEqual(
          expect.objectContaining({ id: "again", error: expect.objectContaining({ code: -32600 }) }),
        ),
      )
      await server.client.callTool({ name: "list_skills", arguments: {} })
      const audit = () =>
        server
          .stderr()
          .split("\n")
          .filter((line) => line.includes('"audit":true'))
          .map((line) => JSON.parse(line) as Record<string, unknown>)
      const tools = [
        "resources/read",
        "resources/directory/read",
        "skills/get",
        "prompts/get",
        "resources/read",
        "get_skill",
        "completion/complete",
        "resources/subscribe",
        "list_skills",
      ]
      await eventually(() => expect(audit()).toHaveLength(tools.length))
      const records = audit()
      expect(records.map((record) => record.tool)).toEqual(tools)
      for (const record of records) expect(record.client).toBe("audited-client")
      expect(records[0]).toMatchObject({ uri: "skill://pdf-processing/SKILL.md", outcome: "ok" })
      expect(records[3]).toMatchObject({ uri: "skill pdf-processing", outcome: "ok" })
      expect(records[4]).toMatchObject({ outcome: "UnknownUri" })
    } finally {
      await server.close()
    }
  })
})
