/**
 * A server short of file descriptors: a manifest whose folders cannot all be opened fails
 * (SkillUnreadable, "try again") rather than come back short of files.
 */
import { spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import * as Schema from "effect/Schema"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { BIN, eventually, initializeLine, jsonRpcLines } from "../support/server.js"
import { skillMd, writeTree } from "../support/tree.js"

/** Folders nested in the deep skill: a walk holds each open (one more than MAX_LISTING_DEPTH allows would be refused). */
const DEPTH = 14
const decodeGetResult = Schema.decodeUnknownSync(
  Schema.Struct({ skill: Schema.Struct({ resources: Schema.Array(Schema.Unknown) }) }),
)
let root: string

beforeAll(async () => {
  root = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "skills-mcp-fds-")))
  const tree: Record<string, string> = { "skills/deep/SKILL.md": skillMd("deep", "Fourteen folders deep.") }
  let folder = "skills/deep"
  for (let level = 0; level < DEPTH; level++) {
    folder += "/n"
    tree[`${folder}/f.md`] = `level ${level}`
  }
  // More than 512 files: its manifest stops part way through its walk, with folders open.
  tree["skills/many/SKILL.md"] = skillMd("many", "Over the extension's file limit.")
  for (let folder = 0; folder < 8; folder++) {
    for (let file = 0; file < 70; file++) tree[`skills/many/f${folder}/${file}.md`] = "x"
  }
  await writeTree(root, tree)
})

afterAll(async () => {
  await fs.rm(root, { recursive: true, force: true })
})

describe.runIf(process.platform === "linux")("a server short of file descriptors", () => {
  it("answers each skills/get with every file of the skill or with an error, never with some", () => {
    const requests = Array.from({ length: 5 }, (_, index) =>
      JSON.stringify({
        jsonrpc: "2.0",
        id: index + 2,
        method: "skills/get",
        params: { uri: "skill://deep/SKILL.md" },
      }),
    )
    const lines = [
      initializeLine(1, { extensions: { "io.modelcontextprotocol/skills": {} } }),
      JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
      ...requests,
    ]
    // A descriptor limit the deep skill's walk reaches: the server holds about 20 of its own, and
    // the walk one per folder on its way down; the input ends after the requests, and the server
    // answers them all first.
    const run = spawnSync(
      "bash",
      ["-c", `ulimit -n 30 && exec "${process.execPath}" "${BIN}" --no-watch --skills-dir "${root}/skills"`],
      {
        input: `${lines.join("\n")}\n`,
        env: { PATH: process.env.PATH ?? "", HOME: root, SKILLS_MCP_COMPILE_CACHE: "0" },
        encoding: "utf8",
        timeout: 30_000,
      },
    )
    expect(run.status).toBe(0)
    const answers = jsonRpcLines(run.stdout).filter(
      (message) => typeof message.id === "number" && message.id > 1,
    )
    expect(answers).toHaveLength(5)
    const outcomes = answers.map((answer) => {
      if ("error" in answer) return "error"
      const { skill } = decodeGetResult(answer.result)
      return `files:${skill.resources.length}`
    })
    // SKILL.md and one file per level, or an error: never a manifest short of files.
    for (const outcome of outcomes) expect(["error", `files:${DEPTH + 1}`]).toContain(outcome)
    expect(outcomes).toContain("error")
  })

  it("closes every folder of a walk that stops early: after 80 of them, a deep skill is answered whole", async () => {
    const server = spawn(
      "bash",
      ["-c", `ulimit -n 64 && exec "${process.execPath}" "${BIN}" --no-watch --skills-dir "${root}/skills"`],
      { env: { PATH: process.env.PATH ?? "", HOME: root, SKILLS_MCP_COMPILE_CACHE: "0" } },
    )
    let stdout = ""
    server.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString("utf8")
    })
    const exited = new Promise((resolve) => server.on("close", resolve))
    const answer = (id: number) =>
      eventually(() => {
        const found = jsonRpcLines(stdout).find((message) => message.id === id)
        if (found === undefined) throw new Error(`no answer to ${id} yet`)
        return found
      }, 20_000)
    const get = (id: number, skill: string) =>
      `${JSON.stringify({ jsonrpc: "2.0", id, method: "skills/get", params: { uri: `skill://${skill}/SKILL.md` } })}\n`
    server.stdin.write(`${initializeLine(1, { extensions: { "io.modelcontextprotocol/skills": {} } })}\n`)
    await answer(1)
    server.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })}\n`)
    // Ten at a time, each batch answered before the next: only leaked folders add up.
    let id = 2
    for (let batch = 0; batch < 8; batch++) {
      const ids = Array.from({ length: 10 }, () => id++)
      server.stdin.write(ids.map((each) => get(each, "many")).join(""))
      for (const each of ids) expect("error" in (await answer(each))).toBe(true)
    }
    server.stdin.write(get(id, "deep"))
    const deep = await answer(id)
    server.stdin.end()
    await exited
    expect(decodeGetResult(deep.result).skill.resources).toHaveLength(DEPTH + 1)
  })
})
