/**
 * Attacks that change the tree while the server runs, or that give a skill a second name:
 * a skill folder swapped for a link to a folder outside the root (with and without the
 * watcher), and a link inside the root that would give a denied skill another id. The canary
 * placed outside must never come back, on any surface.
 */
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import * as Schema from "effect/Schema"
import { afterEach, describe, expect, it } from "vitest"
import type { RunningServer } from "../support/server.js"
import { CANARY, callTool, eventually, listAllSkills, startServer } from "../support/server.js"
import { skillMd, writeTree } from "../support/tree.js"

const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup()
})

const tempDir = async (label: string) => {
  const dir = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), `skills-mcp-${label}-`)))
  cleanups.push(() => fs.rm(dir, { recursive: true, force: true }))
  return dir
}

const start = async (args: ReadonlyArray<string>, home: string) => {
  const server = await startServer(args, {
    env: { HOME: home, XDG_CACHE_HOME: path.join(home, ".cache") },
    capabilities: { extensions: { "io.modelcontextprotocol/skills": {} } },
  })
  cleanups.unshift(() => server.close())
  return server
}

const neverLeaked = (server: RunningServer) => {
  for (const message of server.received) expect(message).not.toContain(CANARY)
  expect(server.protocolErrors).toEqual([])
}

const SyncPage = Schema.Struct({
  skills: Schema.Array(Schema.Unknown),
  nextCursor: Schema.optional(Schema.String),
})

describe("a skill folder swapped for a link to outside the root while serving", () => {
  it.each([
    ["with the watcher", [], false],
    ["without it", ["--no-watch"], false],
    // Settled and listed over the Skills extension twice: its files are kept and, with the
    // watcher, watched, so reads take them without resolving real paths (src/files/Watches.ts).
    ["with the watcher, its files kept and watched", [], true],
    ["without the watcher, its files kept", ["--no-watch"], true],
  ])("is never followed, %s", async (_label, flags, kept) => {
    const root = await tempDir("swap-root")
    const outside = await tempDir("swap-outside")
    await writeTree(root, { "pdf/SKILL.md": skillMd("pdf", "The real one."), "pdf/notes.md": "Fine.\n" })
    await writeTree(outside, { "SKILL.md": skillMd("pdf", "Impostor."), "secret.txt": `${CANARY}\n` })
    // The same names on both sides: a read that followed the link would find a file.
    await writeTree(outside, { "notes.md": `${CANARY}\n` })
    if (kept) {
      const hourAgo = Date.now() / 1000 - 3600
      for (const name of ["pdf/SKILL.md", "pdf/notes.md", "pdf"])
        await fs.utimes(path.join(root, name), hourAgo, hourAgo)
    }
    const server = await start([root, ...flags], root)
    if (kept) for (let sync = 0; sync < 2; sync++) await listAllSkills(server, SyncPage)
    expect(
      (await callTool(server, "read_skill_file", { id: "pdf", path: "notes.md" })).isError,
    ).toBeUndefined()

    // Moved out of the root (so the only change the root's watch sees is at `pdf` itself).
    const parking = await tempDir("swap-parking")
    await fs.rename(path.join(root, "pdf"), path.join(parking, "pdf"))
    await fs.symlink(outside, path.join(root, "pdf"))
    // At once (before any refresh could notice) and for a while after: refused every time.
    for (let round = 0; round < 20; round++) {
      const read = await callTool(server, "read_skill_file", { id: "pdf", path: "secret.txt" })
      expect(read.isError).toBe(true)
      // A file the kept skill lists, at the same path on the other side.
      const notes = await callTool(server, "read_skill_file", { id: "pdf", path: "notes.md" })
      expect(JSON.stringify(notes)).not.toContain(CANARY)
      // Nor is what lies there listed over the Skills extension, kept or not.
      if (kept) expect(JSON.stringify(await listAllSkills(server, SyncPage))).not.toContain("Impostor")
      const got = await callTool(server, "get_skill", { id: "pdf" })
      expect(got.isError).toBe(true)
      expect(JSON.stringify(got)).not.toContain("Impostor")
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    // In the end the catalog has dropped the link too.
    await eventually(async () => {
      const listed = await callTool(server, "list_skills", {})
      expect((listed.structuredContent as { skills: Array<unknown> }).skills).toEqual([])
    })
    neverLeaked(server)
  })
})

describe("--deny and links", () => {
  it("never serves a denied skill through a link that gives it another id", async () => {
    const root = await tempDir("deny-alias")
    await writeTree(root, {
      "secret-skill/SKILL.md": skillMd("secret-skill", "Denied.", `# Secret\n${CANARY}\n`),
      "secret-skill/data.txt": `${CANARY}\n`,
      "alias-secret": { symlink: "secret-skill" },
      "open/SKILL.md": skillMd("open", "Allowed."),
    })
    const server = await start([root, "--deny", "secret-skill"], root)
    const listed = await callTool(server, "list_skills", {})
    expect((listed.structuredContent as { skills: Array<{ id: string }> }).skills.map((s) => s.id)).toEqual([
      "open",
    ])
    for (const id of ["secret-skill", "alias-secret"]) {
      expect((await callTool(server, "get_skill", { id })).isError).toBe(true)
      expect((await callTool(server, "read_skill_file", { id, path: "data.txt" })).isError).toBe(true)
    }
    await server.client.listResources()
    await server.client.listPrompts()
    await server.client.readResource({ uri: "skill://diagnostics" })
    await server.client.readResource({ uri: "skill://prompt-xml" })
    expect(server.client.getInstructions()).not.toContain("secret")
    neverLeaked(server)
  })
})
