/**
 * Scale-out (issue 33): three replicas of `serve --http` on one skills folder behind a real load
 * balancer (HAProxy, round robin, health checks on /readyz, retries on another replica). An MCP
 * client's requests spread over the replicas and every answer is the same; a replica killed
 * during a load run makes no request answer wrongly (each is right or fails with an error), and
 * the two left carry on.
 */
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { RunningHaproxy } from "../support/haproxy.js"
import { ensureHaproxy, freePort, startHaproxy } from "../support/haproxy.js"
import type { HttpServer } from "../support/http.js"
import { startHttpServer, whenReady } from "../support/http.js"
import { copyFixtures, toolText, VALID_SKILL_IDS } from "../support/server.js"

/** One kind of request, and its answer reduced to a string to compare. */
interface Operation {
  readonly key: string
  readonly run: (client: Client) => Promise<string>
}

const callTool = async (client: Client, name: string, args: Record<string, unknown>) => {
  const result = CallToolResultSchema.parse(await client.callTool({ name, arguments: args }))
  return JSON.stringify({ isError: result.isError === true, text: toolText(result) })
}

const OPERATIONS: ReadonlyArray<Operation> = [
  { key: "list_skills", run: (client) => callTool(client, "list_skills", {}) },
  ...VALID_SKILL_IDS.flatMap(
    (id): Array<Operation> => [
      { key: `get_skill ${id}`, run: (client) => callTool(client, "get_skill", { id }) },
      {
        key: `resources/read ${id}`,
        run: async (client) =>
          JSON.stringify((await client.readResource({ uri: `skill://${id}/SKILL.md` })).contents),
      },
    ],
  ),
]

/** How many audit records (one per tool call or resource read) a replica wrote so far. */
const audited = (replica: HttpServer) =>
  replica
    .stderr()
    .split("\n")
    .filter((line) => line.includes('"audit":true')).length

describe("three replicas behind HAProxy", () => {
  let fixtures: string
  let replicas: Array<HttpServer> = []
  let proxy: RunningHaproxy | undefined
  const clients: Array<Client> = []
  /** Each operation's answer, as the replicas gave it before any was killed. */
  const expected = new Map<string, string>()

  const connect = async (name: string) => {
    if (proxy === undefined) throw new Error("HAProxy is not running")
    const client = new Client({ name, version: "1.0.0" })
    await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${proxy.port}/mcp`)))
    clients.push(client)
    return client
  }

  beforeAll(async () => {
    const haproxy = ensureHaproxy()
    fixtures = await copyFixtures()
    // One skills folder for all; each must accept the Host the clients send, the proxy's (a bare
    // name is allowed with any port: the proxy's is chosen only when it starts).
    const started = await Promise.allSettled(
      [0, 1, 2].map(() => startHttpServer([path.join(fixtures, "valid"), "--allowed-hosts", "127.0.0.1"])),
    )
    // Kept before any failure is thrown, so that afterAll stops those that did start.
    replicas = started.flatMap((outcome) => (outcome.status === "fulfilled" ? [outcome.value] : []))
    for (const outcome of started) if (outcome.status === "rejected") throw outcome.reason
    await Promise.all(replicas.map(whenReady))
    // A free port is free until someone takes it (tests run in parallel): one more try if so.
    const backends = replicas.map((replica) => replica.port)
    proxy = await startHaproxy(haproxy, await freePort(), backends).catch(async () =>
      startHaproxy(haproxy, await freePort(), backends),
    )
  }, 180_000)

  afterAll(async () => {
    await Promise.allSettled(clients.map((client) => client.close()))
    await proxy?.stop()
    await Promise.allSettled(replicas.map((replica) => replica.stop()))
    if (fixtures !== undefined) await fs.rm(fixtures, { recursive: true, force: true })
  })

  it("spreads an MCP client's requests over the three replicas, with the same answers from each", async () => {
    const client = await connect("replicas-spread")
    const before = replicas.map(audited)
    for (let round = 0; round < 3; round++) {
      for (const operation of OPERATIONS) {
        const answer = await operation.run(client)
        const first = expected.get(operation.key)
        if (first === undefined) expected.set(operation.key, answer)
        else expect(answer, operation.key).toBe(first)
      }
    }
    const served = replicas.map((replica, index) => audited(replica) - (before[index] ?? 0))
    for (const count of served) expect(count).toBeGreaterThan(0)
    expect(served.reduce((sum, count) => sum + count, 0)).toBe(3 * OPERATIONS.length)
    expect(JSON.parse(expected.get("get_skill pdf-processing") ?? "{}")).toMatchObject({ isError: false })
  })

  it("answers right or fails cleanly while a replica is killed under load, and the rest carry on", async () => {
    expect(expected.size).toBe(OPERATIONS.length)
    const [first, killed, third] = replicas
    if (first === undefined || killed === undefined || third === undefined) throw new Error("no replicas")
    const CLIENTS = 8
    const EACH = 20
    const KILL_AFTER = Math.floor((CLIENTS * EACH) / 3)
    const loaders = await Promise.all(
      Array.from({ length: CLIENTS }, (_, index) => connect(`replicas-load-${index}`)),
    )
    const killedBefore = audited(killed)
    let completed = 0
    const wrong: Array<string> = []
    const failed: Array<string> = []
    let right = 0
    await Promise.all(
      loaders.map(async (client, index) => {
        for (let step = 0; step < EACH; step++) {
          const operation = OPERATIONS[(index * 5 + step) % OPERATIONS.length]
          if (operation === undefined) throw new Error("no operation")
          try {
            const answer = await operation.run(client)
            if (answer === expected.get(operation.key)) right++
            else wrong.push(`${operation.key}: ${answer.slice(0, 300)}`)
          } catch (error) {
            failed.push(error instanceof Error ? error.message : String(error))
          }
          // Midway, with every client's requests in flight: no drain, no goodbye.
          if (++completed === KILL_AFTER) killed.child.kill("SIGKILL")
        }
      }),
    )
    expect(wrong).toEqual([])
    expect(right + failed.length).toBe(CLIENTS * EACH)
    expect(right).toBeGreaterThan(0)
    expect(await killed.exited).toBe(null)
    // It was serving its share of the load when it was killed.
    expect(audited(killed)).toBeGreaterThan(killedBefore)

    // After the kill, every request succeeds, answered by the two replicas left.
    const before = [first, third].map(audited)
    const after = await connect("replicas-after-kill")
    for (let round = 0; round < 2; round++) {
      for (const operation of OPERATIONS) expect(await operation.run(after)).toBe(expected.get(operation.key))
    }
    expect(audited(first)).toBeGreaterThan(before[0] ?? 0)
    expect(audited(third)).toBeGreaterThan(before[1] ?? 0)
  })
})
