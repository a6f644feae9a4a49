/**
 * Roots and folders as the server pins them: a root swapped for a link after start serves
 * nothing of the other folder; a skill folder inside another skill's folder is not a skill
 * of its own; a folder found from two nested roots is one skill, not a shadow of itself;
 * diagnostics say a link leads out of the root without telling whether its target exists;
 * a client's subscriptions are capped.
 */
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { ResultSchema } from "@modelcontextprotocol/sdk/types.js"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { RunningServer } from "../support/server.js"
import { runRaw, startServer } from "../support/server.js"
import { skillMd, writeTree } from "../support/tree.js"

const CANARY = "OTHER-FOLDER-CANARY-7d2e"

let base: string

beforeAll(async () => {
  base = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "skills-mcp-roots-")))
})

afterAll(async () => {
  await fs.rm(base, { recursive: true, force: true })
})

const Report = Schema.Struct({
  served: Schema.Array(Schema.Struct({ id: Schema.String, file: Schema.String })),
  skipped: Schema.Array(Schema.Struct({ id: Schema.String, rule: Schema.String })),
  shadowed: Schema.Array(Schema.Struct({ id: Schema.String })),
  notices: Schema.Array(Schema.Struct({ path: Schema.String, reason: Schema.String })),
})

const listJson = async (args: ReadonlyArray<string>) => {
  const run = await runRaw(["list", "--json", ...args], [], { HOME: base })
  expect(run.code, run.stderr).toBe(0)
  const decoded = Schema.decodeUnknownEither(Report)(JSON.parse(run.stdout))
  if (Either.isLeft(decoded)) throw new Error(decoded.left.message)
  return decoded.right
}

const everything = async (server: RunningServer, id: string) => {
  const answers: Array<string> = []
  const calls = [
    { name: "get_skill", arguments: { id } },
    { name: "read_skill_file", arguments: { id, path: "data.md" } },
    { name: "read_skill_file", arguments: { id, path: "" } },
    { name: "list_skills", arguments: {} },
  ]
  for (const call of calls) answers.push(JSON.stringify(await server.client.callTool(call)))
  for (const uri of [`skill://${id}/data.md`, `skill://${id}/SKILL.md`, "skill://diagnostics"]) {
    answers.push(
      JSON.stringify(await server.client.readResource({ uri }).catch((error: Error) => error.message)),
    )
  }
  answers.push(
    JSON.stringify(
      await server.client
        .request({ method: "skills/list", params: {} }, ResultSchema)
        .catch((error: Error) => error.message),
    ),
  )
  return answers.join("\n")
}

describe("a root swapped for a link to another folder after start", () => {
  for (const watch of [true, false]) {
    it(`serves nothing of the other folder (${watch ? "with" : "without"} the watcher)`, async () => {
      const dir = path.join(base, `swap-${watch}`)
      const root = path.join(dir, "root")
      await writeTree(root, { "s/SKILL.md": skillMd("s", "The real skill."), "s/data.md": "REAL\n" })
      await writeTree(path.join(dir, "other"), {
        "s/SKILL.md": skillMd("s", `Other ${CANARY}`, `${CANARY}\n`),
        "s/data.md": `${CANARY}\n`,
      })
      const server = await startServer(
        ["--skills-dir", root, "--refresh-ms", "0", ...(watch ? [] : ["--no-watch"])],
        { env: { HOME: base } },
      )
      try {
        expect(await everything(server, "s")).toContain("REAL")
        await fs.rename(root, path.join(dir, "root-before"))
        await fs.symlink(path.join(dir, "other"), root)
        await new Promise((resolve) => setTimeout(resolve, 300))
        for (let round = 0; round < 3; round++) {
          expect(await everything(server, "s")).not.toContain(CANARY)
        }
        expect(server.stderr()).not.toContain(CANARY)
      } finally {
        await server.close()
      }
    })
  }
})

describe("skill folders inside other skill folders", () => {
  it("are not skills of their own, from another root or through a link, and diagnostics say so", async () => {
    const root = path.join(base, "nested")
    await writeTree(root, {
      "pdf/SKILL.md": skillMd("pdf", "The outer skill."),
      "pdf/sub/SKILL.md": skillMd("sub", "A folder of pdf's."),
      "pdf/sub/data.md": "pdf's data\n",
      "pdf/other/SKILL.md": skillMd("other", "Another folder of pdf's."),
      "link-in": { symlink: "pdf/sub" },
    })
    const report = await listJson([root, path.join(root, "pdf", "other")])
    expect(report.served.map((skill) => skill.id)).toEqual(["pdf"])
    expect(report.skipped.map((skip) => [skip.id, skip.rule]).sort()).toEqual([
      ["link-in", "skill-nested"],
      ["other", "skill-nested"],
    ])
    const validate = await runRaw(["validate", "--json", root, path.join(root, "pdf", "other")], [], {
      HOME: base,
    })
    expect(validate.code).toBe(1)
    const linted = JSON.parse(validate.stdout) as {
      skills: Array<{ id: string; diagnostics: Array<{ rule: string }> }>
    }
    expect(
      linted.skills
        .filter((skill) => skill.diagnostics.some((d) => d.rule === "skill-nested"))
        .map((s) => s.id),
    ).toEqual(["link-in", "other"])
  })

  it("found from two nested roots, is served once and not shadowed by itself", async () => {
    const root = path.join(base, "nested-roots")
    await writeTree(root, { "group/x/SKILL.md": skillMd("x", "Found from both roots.") })
    const report = await listJson([root, path.join(root, "group")])
    expect(report.served.map((skill) => skill.id)).toEqual(["x"])
    expect(report.shadowed).toEqual([])
  })
})

describe("links out of a root", () => {
  it("get the same notice whether their target exists, is a folder or a file", async () => {
    const root = path.join(base, "links")
    await writeTree(root, {
      "a/SKILL.md": skillMd("a", "A skill."),
      "to-folder": { symlink: os.tmpdir() },
      "to-nothing": { symlink: path.join(base, "does-not-exist", "dir") },
      "to-file": { symlink: "/etc/hostname" },
    })
    const report = await listJson([root])
    const reasons = ["to-folder", "to-nothing", "to-file"].map((name) =>
      report.notices.filter((notice) => notice.path === path.join(root, name)).map((n) => n.reason),
    )
    expect(reasons[0]).toHaveLength(1)
    expect(reasons[1]).toEqual(reasons[0])
    expect(reasons[2]).toEqual(reasons[0])
  })
})

describe("subscriptions", () => {
  it("are capped per client, with an error that says so", async () => {
    const root = path.join(base, "subscriptions")
    const files: Record<string, string> = { "many/SKILL.md": skillMd("many", "Many files.") }
    for (let i = 0; i < 260; i++) files[`many/f${i}.md`] = `${i}\n`
    await writeTree(root, files)
    const server = await startServer(["--skills-dir", root, "--no-watch"], { env: { HOME: base } })
    try {
      let refused: { code: number; message: string; index: number } | undefined
      for (let i = 0; i < 260 && refused === undefined; i++) {
        await server.client.subscribeResource({ uri: `skill://many/f${i}.md` }).catch((error) => {
          refused = { code: error.code, message: error.message, index: i }
        })
      }
      expect(refused?.index).toBe(256)
      expect(refused?.code).toBe(-32602)
      expect(refused?.message).toContain("256")
      // Subscribing again to a URI already subscribed takes no room.
      await server.client.subscribeResource({ uri: "skill://many/f0.md" })
      await server.client.unsubscribeResource({ uri: "skill://many/f1.md" })
      await server.client.subscribeResource({ uri: "skill://many/f259.md" })
    } finally {
      await server.close()
    }
  })
})
