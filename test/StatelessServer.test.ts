/**
 * Over HTTP every request gets a server of its own, made from what all requests share
 * (`makeServerContext`, made once per process): each caller's catalog view and runner, the
 * instructions of each snapshot. What differs per request (the caller, the address, a client
 * name an `initialize` gave) must stay with its request.
 */
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js"
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js"
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { Caller } from "../src/Access.js"
import { idFilter } from "../src/Access.js"
import type { AuditRecord } from "../src/AuditLog.js"
import { AuditLog } from "../src/AuditLog.js"
import { Catalog } from "../src/catalog/Catalog.js"
import { makeServerContext, statelessServer } from "../src/mcp/Server.js"
import { servicesFor } from "./support/layers.js"
import { skillMd, tempTree } from "./support/tree.js"

const TREE = {
  "pdf/SKILL.md": skillMd("pdf", "Fill and merge PDF forms."),
  "secret-plan/SKILL.md": skillMd("secret-plan", "The quarterly roadmap."),
}
const alice: Caller = { name: "alice", sees: idFilter(["pdf"], []), policy: "allow pdf" }

/** Services over `root` as `serve --http` has them, auditing into `records`. */
const httpServices = (root: string, records: Array<AuditRecord>) =>
  Layer.merge(
    servicesFor([root], { watch: false, http: { host: "127.0.0.1", port: 0 }, refreshIntervalMs: 0 }),
    Layer.succeed(AuditLog, { record: (record) => Effect.sync(() => void records.push(record)) }),
  )

/** One raw JSON-RPC request to a server, as a POST without `initialize` brings it; its answer. */
const rawRequest = async (server: ReturnType<typeof statelessServer>["server"], message: JSONRPCMessage) => {
  const [serverSide, clientSide] = InMemoryTransport.createLinkedPair()
  const answer = new Promise<JSONRPCMessage>((resolve) => {
    clientSide.onmessage = resolve
  })
  await server.connect(serverSide)
  await clientSide.start()
  await clientSide.send(message)
  const answered = await answer
  await server.close()
  return answered
}

/** A client session (initialize, then `ask`) with a server; what `ask` returned, and the instructions. */
const session = async <A>(
  server: ReturnType<typeof statelessServer>["server"],
  name: string,
  ask: (client: Client) => Promise<A>,
) => {
  const [serverSide, clientSide] = InMemoryTransport.createLinkedPair()
  const client = new Client({ name, version: "1.0.0" })
  await server.connect(serverSide)
  await client.connect(clientSide)
  try {
    return { answer: await ask(client), instructions: client.getInstructions() ?? "" }
  } finally {
    await client.close()
  }
}

const getSkill = (client: Client, id: string) =>
  client
    .callTool({ name: "get_skill", arguments: { id } })
    .then((result) => CallToolResultSchema.parse(result))

describe("a server per request, from one shared context", () => {
  it.scoped("keeps each request's caller, address and client to its own answers and audit records", () =>
    Effect.gen(function* () {
      const root = yield* tempTree(TREE)
      const records: Array<AuditRecord> = []
      yield* Effect.gen(function* () {
        const context = yield* makeServerContext()
        const asked = yield* Effect.promise(async () => {
          // Alice's request initializes (a client name) and may not see secret-plan.
          const first = await session(
            statelessServer(context, { remote: "10.0.0.1:1", caller: alice }).server,
            "alice-agent",
            (client) => getSkill(client, "secret-plan"),
          )
          // The next request, without initialize, from no authenticated caller, sees everything.
          const second = await rawRequest(statelessServer(context, { remote: "10.0.0.2:2" }).server, {
            jsonrpc: "2.0",
            id: 7,
            method: "tools/call",
            params: { name: "get_skill", arguments: { id: "secret-plan" } },
          })
          // And alice again, with her own view (made once, then reused).
          const third = await session(
            statelessServer(context, { remote: "10.0.0.3:3", caller: alice }).server,
            "alice-agent-2",
            (client) => getSkill(client, "secret-plan"),
          )
          return { first: first.answer, second, third: third.answer }
        })
        expect(asked.first.isError).toBe(true)
        expect(JSON.stringify(asked.second)).toContain("The quarterly roadmap.")
        expect(JSON.stringify(asked.second)).not.toContain('"isError":true')
        expect(asked.third.isError).toBe(true)
      }).pipe(Effect.provide(httpServices(root, records)))
      const calls = records
        .filter((record) => record.tool === "get_skill")
        .map(({ remote, caller, client, outcome }) => ({ remote, caller, client, outcome }))
      expect(calls).toEqual([
        { remote: "10.0.0.1:1", caller: "alice", client: "alice-agent", outcome: "SkillNotFound" },
        { remote: "10.0.0.2:2", caller: undefined, client: undefined, outcome: "ok" },
        { remote: "10.0.0.3:3", caller: "alice", client: "alice-agent-2", outcome: "SkillNotFound" },
      ])
    }),
  )

  it.scoped("gives each request's initialize the catalog as it is then, for its caller", () =>
    Effect.gen(function* () {
      const root = yield* tempTree(TREE)
      yield* Effect.gen(function* () {
        const context = yield* makeServerContext()
        const instructions = (caller?: Caller) =>
          Effect.promise(() =>
            session(
              statelessServer(context, { remote: "127.0.0.1:1", caller }).server,
              "agent",
              async () => undefined,
            ).then((done) => done.instructions),
          )
        const before = yield* instructions()
        expect(before).toContain("secret-plan")
        expect(before).not.toContain("added-later")
        expect(yield* instructions(alice)).not.toContain("secret-plan")
        yield* Effect.promise(async () => {
          await fs.mkdir(path.join(root, "added-later"))
          await fs.writeFile(path.join(root, "added-later", "SKILL.md"), skillMd("added-later", "New."))
        })
        yield* (yield* Catalog).refresh
        expect(yield* instructions()).toContain("added-later")
        expect(yield* instructions(alice)).not.toContain("added-later")
      }).pipe(Effect.provide(httpServices(root, [])))
    }),
  )
})
