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
import { makeSnapshot } from "../src/catalog/Snapshot.js"
import { viewFor } from "../src/catalog/Views.js"
import { makeServer } from "../src/mcp/Server.js"
import { servicesFor } from "./support/layers.js"
import { fakeSkill } from "./support/skills.js"
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
  // Reached by a link the caller's policy permits (docx-examples): inside the hidden skill's folder.
  "secret-plan/examples/SKILL.md": skillMd("docx-examples", "Examples of the roadmap."),
  "secret-broken/SKILL.md": "---\nname: [unclosed\n---\n",
}
/** A second root: a skill of each kind shadowed by the first root's (same id). */
const SECOND = {
  "pdf/SKILL.md": skillMd("pdf", "An older PDF skill."),
}
const SECOND_HIDDEN = {
  "secret-plan/SKILL.md": skillMd("secret-plan", "An older roadmap."),
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
    ...(await (async () => {
      // A ranked search's pages: the cursor must not tell how many skills the server holds.
      const first = await client.callTool({
        name: "list_skills",
        arguments: { query: "forms roadmap", limit: 1 },
      })
      const cursor = JSON.stringify(first.structuredContent).match(/"nextCursor":"([^"]+)"/)?.[1]
      const second =
        cursor === undefined
          ? "no cursor"
          : await call("list_skills", { query: "forms roadmap", limit: 1, cursor })
      return { searchFirstPage: first, searchSecondPage: second }
    })()),
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
    unknownMethod: await ask("skills/unknown", {}),
    undecodedRead: await ask("resources/read", { url: "skill://pdf/SKILL.md" }),
  }
}

/** The answers of a stateless server (as over HTTP) for `caller`, and what it audited. */
const answers = (roots: ReadonlyArray<string>, caller: Caller | undefined) =>
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
          servicesFor(roots, { watch: false, http: { host: "127.0.0.1", port: 0 }, refreshIntervalMs: 0 }),
          audit,
        ),
      ),
    )
  })

/**
 * The answers as JSON, with every cache scope taken out (and returned apart), and every search
 * cursor (a server's own: it names its ranking with a secret of the process) as `<cursor>`.
 */
const withoutScopes = (value: unknown) => {
  const scopes: Array<string> = []
  const cursors: Array<string> = []
  let json = JSON.stringify(value, (key, field: unknown) => {
    if (key === "cacheScope" && typeof field === "string") {
      scopes.push(field)
      return undefined
    }
    if (key === "nextCursor" && typeof field === "string") cursors.push(field)
    return field
  })
  for (const cursor of cursors) json = json.replaceAll(cursor, "<cursor>")
  return { json, scopes, cursors }
}

describe("a caller's catalog (over HTTP with --auth)", () => {
  it.scoped("answers on every surface exactly as a server without the skills it may not see", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({ ...VISIBLE, ...HIDDEN })
      const second = yield* tempTree({ ...SECOND, ...SECOND_HIDDEN })
      // A nested skill the caller could see but for where it is: its reason names the hidden skill.
      yield* Effect.promise(() => fs.symlink("secret-plan/examples", path.join(root, "docx-examples")))
      const restricted = yield* answers([root, second], alice)
      yield* Effect.promise(async () => {
        await fs.rm(path.join(root, "docx-examples"))
        for (const [folder, tree] of [
          [root, HIDDEN],
          [second, SECOND_HIDDEN],
        ] as const)
          for (const file of Object.keys(tree))
            await fs.rm(path.join(folder, path.dirname(file)), { recursive: true, force: true })
      })
      const without = yield* answers([root, second], undefined)

      const mine = withoutScopes(restricted.answered)
      const theirs = withoutScopes(without.answered)
      expect(JSON.parse(mine.json)).toEqual(JSON.parse(theirs.json))
      // The hidden skills are nowhere (but in the echo of what was asked), not even in a reason.
      expect(mine.json).not.toContain("quarterly")
      expect(mine.json).not.toContain("secret-broken")
      expect(mine.json).toContain("docx-broken")
      // Shadowed: the caller's skill's twin is listed, the hidden one's is not.
      expect(mine.json).toContain(`${second}/pdf/SKILL.md`)
      expect(mine.json).not.toContain(`${second}/secret-plan`)
      // A search cursor names its ranking by a keyed hash: no count of the skills indexed.
      expect(mine.cursors.length).toBeGreaterThan(0)
      for (const cursor of mine.cursors)
        expect(Buffer.from(cursor, "base64url").toString("utf8")).toMatch(/^r:[\w-]{16}:\d+:[0-9a-z]+$/)
      // The listing depends on the caller: no shared cache may keep it.
      expect(mine.scopes.length).toBeGreaterThan(0)
      expect(new Set(mine.scopes)).toEqual(new Set(["private"]))
      expect(new Set(theirs.scopes)).toEqual(new Set(["public"]))
    }),
  )

  it.scoped("names the caller in the audit record of every request", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({ ...VISIBLE, ...HIDDEN })
      const { records } = yield* answers([root], alice)
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
      // Also what fails before its work: an unknown method, params that do not decode.
      expect(records).toContainEqual(
        expect.objectContaining({ tool: "skills/unknown", outcome: "MethodNotFound" }),
      )
      expect(records).toContainEqual(
        expect.objectContaining({ tool: "resources/read", outcome: "InvalidParams" }),
      )
      // A hidden skill read is recorded as what it answered: not found.
      const hidden = records.find((record) => record.uri === "skill://secret-plan/SKILL.md")
      expect(hidden?.outcome).not.toBe("ok")
    }),
  )

  it.scoped("shows a caller who may see every skill the whole catalog, for it alone", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({ ...VISIBLE, ...HIDDEN })
      const everything: Caller = { name: "bob", sees: undefined, policy: undefined }
      const { answered } = yield* answers([root], everything)
      const { json, scopes } = withoutScopes(answered)
      expect(json).toContain("secret-plan")
      expect(new Set(scopes)).toEqual(new Set(["private"]))
    }),
  )
})

describe("a caller's view", () => {
  it("counts its own versions: a change to a skill the caller may not see is no change of its view", () => {
    const view = viewFor(alice)
    if (view === undefined) return expect.fail("alice sees only some skills")
    const pdf = fakeSkill("pdf", "PDF.")
    const first = view.of(makeSnapshot({ skills: [pdf, fakeSkill("secret-plan", "One.")], version: 7 }))
    expect(first.skills.map((skill) => skill.id)).toEqual(["pdf"])
    const hiddenEdit = view.of(makeSnapshot({ skills: [pdf, fakeSkill("secret-plan", "Two.")], version: 8 }))
    expect(hiddenEdit.version).toBe(first.version)
    const shownEdit = view.of(makeSnapshot({ skills: [fakeSkill("pdf", "PDF, edited.")], version: 9 }))
    expect(shownEdit.version).toBe(first.version + 1)
  })
})
