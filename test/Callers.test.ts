import * as fs from "node:fs/promises"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js"
import { McpError, ResultSchema } from "@modelcontextprotocol/sdk/types.js"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { Caller } from "../src/Access.js"
import { idFilter } from "../src/Access.js"
import type { AuditRecord } from "../src/AuditLog.js"
import { AuditLog } from "../src/AuditLog.js"
import { Catalog } from "../src/catalog/Catalog.js"
import { makeServer } from "../src/mcp/Server.js"
import { servicesFor } from "./support/layers.js"
import { skillMd, tempTree } from "./support/tree.js"

// Per-caller catalogs (issue 33): over HTTP with --auth, a caller sees only the skills its policy
// permits, on every surface, and a skill it may not see answers exactly like a missing one. So
// every answer to a caller who may not see `secret-*` must equal the answer of a server whose
// folder has no `secret-*` skill at all (but for the cache scope, which is the caller's own).

const VISIBLE = {
  "pdf/SKILL.md": skillMd("pdf", "Fill and merge PDF forms.", "# PDF\n\nSee [forms](references/forms.md).\n"),
  "pdf/references/forms.md": "forms\n",
  "docx-tools/SKILL.md": skillMd("docx-tools", "Edit Word documents and their roadmap tables."),
  "canvas-art/SKILL.md": skillMd("canvas-art", "Draw posters on a canvas."),
  // A visible problem stays in the caller's diagnostics.
  "docx-broken/SKILL.md": "no frontmatter here\n",
}
const HIDDEN = {
  "secret-plan/SKILL.md": skillMd(
    "secret-plan",
    "The quarterly roadmap, in PDF.",
    "# Roadmap\n\npdf forms\n",
  ),
  "secret-plan/notes.md": "do not tell\n",
  "secret-broken/SKILL.md": "---\nname: [unclosed\n---\n",
  // Shadowed by secret-plan (the same id, a later root would shadow; here a nested group).
}
const alice: Caller = {
  name: "alice",
  sees: idFilter(["pdf", "docx*", "canvas-*"], []),
  policy: "allow pdf,docx*,canvas-*",
}

/** Every surface a caller reaches, each answer kept as JSON (errors as their code and message). */
const surfaces = async (client: Client) => {
  const settle = async (ask: () => Promise<unknown>) => {
    try {
      return await ask()
    } catch (error) {
      if (error instanceof McpError) return { error: { code: error.code, message: error.message } }
      throw error
    }
  }
  const call = (name: string, args: Record<string, unknown>) =>
    settle(() => client.callTool({ name, arguments: args }))
  const ask = (method: string, params: Record<string, unknown>) =>
    settle(() => client.request({ method, params }, ResultSchema))
  const complete = (value: string) =>
    settle(() =>
      client.complete({ ref: { type: "ref/prompt", name: "skill" }, argument: { name: "name", value } }),
    )
  return {
    instructions: client.getInstructions(),
    tools: await settle(() => client.listTools()),
    list: await call("list_skills", {}),
    search: await call("list_skills", { query: "roadmap pdf" }),
    searchHidden: await call("list_skills", { query: "secret plan" }),
    getHidden: await call("get_skill", { id: "secret-plan" }),
    getByName: await call("get_skill", { id: "Secret-Plan" }),
    getShown: await call("get_skill", { id: "pdf" }),
    fileHidden: await call("read_skill_file", { id: "secret-plan", path: "notes.md" }),
    resources: await settle(() => client.listResources()),
    templates: await settle(() => client.listResourceTemplates()),
    readHidden: await ask("resources/read", { uri: "skill://secret-plan/SKILL.md" }),
    readHiddenFile: await ask("resources/read", { uri: "skill://secret-plan/notes.md" }),
    readShown: await ask("resources/read", { uri: "skill://pdf/references/forms.md" }),
    diagnostics: await ask("resources/read", { uri: "skill://diagnostics" }),
    directoryHidden: await ask("resources/directory/read", { uri: "skill://secret-plan/" }),
    directoryShown: await ask("resources/directory/read", { uri: "skill://pdf/" }),
    prompts: await settle(() => client.listPrompts()),
    promptHidden: await ask("prompts/get", { name: "skill", arguments: { name: "secret-plan" } }),
    promptOfHidden: await ask("prompts/get", { name: "secret-plan" }),
    completeS: await complete("s"),
    completeSkillPath: await settle(() =>
      client.complete({
        ref: { type: "ref/resource", uri: "skill://{+skill}/{+path}" },
        argument: { name: "skill", value: "s" },
      }),
    ),
    completeHiddenFile: await settle(() =>
      client.complete({
        ref: { type: "ref/resource", uri: "skill://{+skill}/{+path}" },
        argument: { name: "path", value: "n" },
        context: { arguments: { skill: "secret-plan" } },
      }),
    ),
    completeP: await complete("p"),
    skillsList: await ask("skills/list", {}),
    skillsSearch: await ask("skills/list", { query: "roadmap" }),
    skillsGetHidden: await ask("skills/get", { uri: "skill://secret-plan/SKILL.md" }),
    skillsGetShown: await ask("skills/get", { uri: "skill://pdf/SKILL.md" }),
  }
}

/** The answers of a stateless server (as over HTTP) for `caller`, and what it audited. */
const answers = (root: string, caller: Caller | undefined) =>
  Effect.gen(function* () {
    const records: Array<AuditRecord> = []
    const audit = Layer.succeed(AuditLog, {
      record: (record) => Effect.sync(() => void records.push(record)),
    })
    return yield* Effect.gen(function* () {
      // Every body in the search index first: `searched` counts are then the same in both runs.
      yield* (yield* Catalog).searchIndexed
      const made = yield* makeServer(undefined, {
        stateless: true,
        ...(caller === undefined ? {} : { caller }),
      })
      const [serverSide, clientSide] = InMemoryTransport.createLinkedPair()
      const client = new Client({ name: "callers-test", version: "1.0.0" })
      const answered = yield* Effect.promise(async () => {
        await made.server.connect(serverSide)
        await client.connect(clientSide)
        try {
          return await surfaces(client)
        } finally {
          await client.close()
        }
      })
      return { answered, records }
    }).pipe(
      Effect.provide(
        Layer.merge(
          servicesFor([root], { watch: false, http: { host: "127.0.0.1", port: 0 }, refreshIntervalMs: 0 }),
          audit,
        ),
      ),
    )
  })

/** The answers as JSON, with every cache scope taken out (and returned apart). */
const withoutScopes = (value: unknown) => {
  const scopes: Array<string> = []
  const json = JSON.stringify(value, (key, field: unknown) => {
    if (key === "cacheScope" && typeof field === "string") {
      scopes.push(field)
      return undefined
    }
    return field
  })
  return { json, scopes }
}

describe("a caller's catalog (over HTTP with --auth)", () => {
  it.scoped("answers on every surface exactly as a server without the skills it may not see", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({ ...VISIBLE, ...HIDDEN })
      const restricted = yield* answers(root, alice)
      yield* Effect.promise(async () => {
        for (const file of Object.keys(HIDDEN))
          await fs.rm(path.join(root, path.dirname(file)), { recursive: true, force: true })
      })
      const without = yield* answers(root, undefined)

      const mine = withoutScopes(restricted.answered)
      const theirs = withoutScopes(without.answered)
      expect(JSON.parse(mine.json)).toEqual(JSON.parse(theirs.json))
      // The hidden skills are nowhere (but in the echo of what was asked), not even in a reason.
      expect(mine.json).not.toContain("quarterly")
      expect(mine.json).not.toContain("secret-broken")
      expect(mine.json).toContain("docx-broken")
      // The listing depends on the caller: no shared cache may keep it.
      expect(mine.scopes.length).toBeGreaterThan(0)
      expect(new Set(mine.scopes)).toEqual(new Set(["private"]))
      expect(new Set(theirs.scopes)).toEqual(new Set(["public"]))
    }),
  )

  it.scoped("names the caller in the audit record of every request", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({ ...VISIBLE, ...HIDDEN })
      const { records } = yield* answers(root, alice)
      const methods = new Set(records.map((record) => record.tool))
      for (const method of [
        "tools/list",
        "list_skills",
        "get_skill",
        "resources/list",
        "resources/read",
        "skills/list",
      ])
        expect(methods).toContain(method)
      expect(records.every((record) => record.caller === "alice")).toBe(true)
      // A hidden skill read is recorded as what it answered: not found.
      const hidden = records.find((record) => record.uri === "skill://secret-plan/SKILL.md")
      expect(hidden?.outcome).not.toBe("ok")
    }),
  )

  it.scoped("shows a caller who may see every skill the whole catalog, for it alone", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({ ...VISIBLE, ...HIDDEN })
      const everything: Caller = { name: "bob", sees: undefined, policy: undefined }
      const { answered } = yield* answers(root, everything)
      const { json, scopes } = withoutScopes(answered)
      expect(json).toContain("secret-plan")
      expect(new Set(scopes)).toEqual(new Set(["private"]))
    }),
  )
})
