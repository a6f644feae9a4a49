/**
 * Freshness through the built server: with the watcher, an edit reaches the client as one
 * notification of each kind; without it, the very next call sees an edit and a new skill.
 */
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import * as Schema from "effect/Schema"
import { afterEach, describe, expect, it } from "vitest"
import type { RunningServer } from "../support/server.js"
import { callTool, eventually, listAllSkills, startServer } from "../support/server.js"
import { skillMd } from "../support/tree.js"

const KINDS = [
  "notifications/tools/list_changed",
  "notifications/prompts/list_changed",
  "notifications/resources/list_changed",
]

const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup()
})

const setUp = async (flags: ReadonlyArray<string>) => {
  const root = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "skills-mcp-fresh-")))
  for (let i = 0; i < 50; i++) {
    await fs.mkdir(path.join(root, `skill-${i}`))
    await fs.writeFile(path.join(root, `skill-${i}`, "SKILL.md"), skillMd(`skill-${i}`, `Skill number ${i}.`))
  }
  const server = await startServer([root, ...flags], { env: { HOME: root } })
  cleanups.push(async () => {
    await server.close()
    await fs.rm(root, { recursive: true, force: true })
  })
  return { root, server }
}

const descriptionOf = async (server: RunningServer, id: string) =>
  ((await callTool(server, "get_skill", { id })).structuredContent as { description: string }).description

const counts = (server: RunningServer, from: number) => {
  const methods = server.notifications.slice(from).map((notification) => notification.method)
  return KINDS.map((kind) => methods.filter((method) => method === kind).length)
}

describe("freshness", () => {
  it("with the watcher: one edit sends one notification of each kind and is served", async () => {
    const { root, server } = await setUp([])
    // Watches are in place once a request has been answered after the handshake.
    await eventually(async () => expect(await descriptionOf(server, "skill-0")).toBe("Skill number 0."))
    const before = server.notifications.length
    await fs.writeFile(path.join(root, "skill-7", "SKILL.md"), skillMd("skill-7", "Edited once."))
    await eventually(() => expect(counts(server, before)).toEqual([1, 1, 1]))
    expect(await descriptionOf(server, "skill-7")).toBe("Edited once.")
    // A second change, waited for in the same way: had the edit sent more, they would be counted here.
    await fs.mkdir(path.join(root, "added"))
    await fs.writeFile(path.join(root, "added", "SKILL.md"), skillMd("added", "Added later."))
    await eventually(() => expect(counts(server, before)).toEqual([2, 2, 2]))
    expect(await descriptionOf(server, "added")).toBe("Added later.")
    const found = await callTool(server, "list_skills", { query: "edited" })
    expect((found.structuredContent as { skills: Array<{ id: string }> }).skills.map((s) => s.id)).toEqual([
      "skill-7",
    ])
  })

  it("without the watcher: the very next call sees an edit and a new skill", async () => {
    const { root, server } = await setUp(["--no-watch", "--refresh-ms", "0"])
    expect(await descriptionOf(server, "skill-3")).toBe("Skill number 3.")
    await fs.writeFile(path.join(root, "skill-3", "SKILL.md"), skillMd("skill-3", "Edited, no watcher."))
    expect(await descriptionOf(server, "skill-3")).toBe("Edited, no watcher.")
    await fs.mkdir(path.join(root, "new-one"))
    await fs.writeFile(path.join(root, "new-one", "SKILL.md"), skillMd("new-one", "Brand new."))
    const found = await callTool(server, "list_skills", { query: "brand new" })
    expect((found.structuredContent as { skills: Array<{ id: string }> }).skills.map((s) => s.id)).toEqual([
      "new-one",
    ])
  })

  it("with the watcher: a skill appears in a folder made empty first, at the depth limit or in a bare .claude", async () => {
    const { root, server } = await setUp([])
    await eventually(async () => expect(await descriptionOf(server, "skill-0")).toBe("Skill number 0."))
    // Folders first, each seen (and re-scanned) by the watcher while still empty of skills...
    await fs.mkdir(path.join(root, "a", "b", "c", "late"), { recursive: true })
    await fs.mkdir(path.join(root, ".claude"))
    const before = server.notifications.length
    await fs.writeFile(path.join(root, "skill-1", "SKILL.md"), skillMd("skill-1", "Edited meanwhile."))
    await eventually(() => expect(counts(server, before)).toEqual([1, 1, 1]))
    // ...then the SKILL.md files: only a watch on those folders can tell.
    await fs.writeFile(
      path.join(root, "a", "b", "c", "late", "SKILL.md"),
      skillMd("late", "At the depth limit."),
    )
    await eventually(async () => expect(await descriptionOf(server, "late")).toBe("At the depth limit."))
    await fs.mkdir(path.join(root, ".claude", "skills", "hidden"), { recursive: true })
    await fs.writeFile(
      path.join(root, ".claude", "skills", "hidden", "SKILL.md"),
      skillMd("hidden", "In .claude."),
    )
    await eventually(async () => expect(await descriptionOf(server, "hidden")).toBe("In .claude."))
  })
})

/** What a host of the Skills extension keeps of skills/list: each file's URI and digest. */
const SyncPage = Schema.Struct({
  skills: Schema.Array(
    Schema.Struct({ resources: Schema.Array(Schema.Struct({ uri: Schema.String, digest: Schema.String })) }),
  ),
  nextCursor: Schema.optional(Schema.String),
})

/** What skills/list says of each skill's description. */
const DescribedPage = Schema.Struct({
  skills: Schema.Array(Schema.Struct({ frontmatter: Schema.Struct({ description: Schema.String }) })),
  nextCursor: Schema.optional(Schema.String),
})

/** Every file's digest over a whole sync, by URI. */
const fullSync = async (server: RunningServer) => {
  const { entries } = await listAllSkills(server, SyncPage)
  return new Map(entries.flatMap((entry) => entry.resources.map((file) => [file.uri, file.digest] as const)))
}

describe("re-syncing over skills/list", () => {
  it.each<readonly [string, ReadonlyArray<string>]>([
    ["with the watcher", []],
    ["without the watcher", ["--no-watch", "--refresh-ms", "0"]],
  ])(
    "%s: sees a file edited in a skill's subfolder; a fresh server lists what the first kept",
    async (_, flags) => {
      const home = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "skills-mcp-sync-")))
      const root = path.join(home, "skills")
      for (let i = 0; i < 30; i++) {
        await fs.mkdir(path.join(root, `skill-${i}`, "references"), { recursive: true })
        await fs.writeFile(
          path.join(root, `skill-${i}`, "SKILL.md"),
          skillMd(`skill-${i}`, `Skill number ${i}.`),
        )
        await fs.writeFile(path.join(root, `skill-${i}`, "references", "notes.md"), `notes ${i}`)
      }
      // Settled (unchanged for over 2 s), as skills installed earlier are: their manifests are kept.
      await new Promise((resolve) => setTimeout(resolve, 2_100))
      const start = () =>
        startServer([root, ...flags], {
          env: { HOME: home, XDG_CACHE_HOME: path.join(home, "cache") },
          capabilities: { extensions: { "io.modelcontextprotocol/skills": {} } },
        })
      const server = await start()
      cleanups.push(async () => {
        await server.close()
        await fs.rm(home, { recursive: true, force: true })
      })
      const first = await fullSync(server)
      expect(first.size).toBe(60)
      expect(await fullSync(server)).toEqual(first)
      // Edited in place (same size), deep in a skill: no SKILL.md changes, no folder changes.
      const notes = "skill://skill-12/references/notes.md"
      await fs.writeFile(path.join(root, "skill-12", "references", "notes.md"), "NOTES 12")
      const edited = await eventually(async () => {
        const now = await fullSync(server)
        expect(now.get(notes)).not.toBe(first.get(notes))
        return now
      })
      expect([...edited].filter(([uri, digest]) => first.get(uri) !== digest).map(([uri]) => uri)).toEqual([
        notes,
      ])
      await server.close()
      // A fresh server lists the same, the recorded manifests checked against the disk.
      const fresh = await start()
      cleanups.push(() => fresh.close())
      expect(await fullSync(fresh)).toEqual(edited)
      expect((await fs.readdir(path.join(home, "cache", "skills-mcp", "manifests"))).length).toBe(1)
    },
  )
})

describe("a SKILL.md copied in place with its old times (as rsync -a, cp -a or tar -x leave it)", () => {
  it.each<readonly [string, ReadonlyArray<string>]>([
    ["with the watcher", []],
    ["without the watcher", ["--no-watch", "--refresh-ms", "0"]],
  ])("%s: a rewrite of the same size is served by every surface", async (_, flags) => {
    const home = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "skills-mcp-copied-")))
    const root = path.join(home, "skills")
    const file = path.join(root, "copied", "SKILL.md")
    const hourAgo = Date.now() / 1000 - 3600
    const copyIn = async (description: string) => {
      await fs.writeFile(file, skillMd("copied", description))
      await fs.utimes(file, hourAgo, hourAgo)
    }
    await fs.mkdir(path.join(root, "copied"), { recursive: true })
    await copyIn("Old words here.")
    const server = await startServer([root, ...flags], {
      env: { HOME: home, XDG_CACHE_HOME: path.join(home, "cache") },
      capabilities: { extensions: { "io.modelcontextprotocol/skills": {} } },
    })
    cleanups.push(async () => {
      await server.close()
      await fs.rm(home, { recursive: true, force: true })
    })
    const listed = async () =>
      (
        (await callTool(server, "list_skills", {})).structuredContent as {
          skills: Array<{ id: string; description: string }>
        }
      ).skills.map((skill) => skill.description)
    const synced = async () =>
      (await listAllSkills(server, DescribedPage)).entries.map((entry) => entry.frontmatter.description)
    expect(await listed()).toEqual(["Old words here."])
    expect(await synced()).toEqual(["Old words here."])
    // The same size, and the same modification time: only the change time tells.
    await copyIn("New words here.")
    await eventually(async () => {
      expect(await listed()).toEqual(["New words here."])
      expect(await synced()).toEqual(["New words here."])
    })
    expect(await descriptionOf(server, "copied")).toBe("New words here.")
  })
})

describe("re-syncing over skills/list, with the watcher", () => {
  it("sees an edit in a skill reinstalled in place (removed, copied back with its old times)", async () => {
    const home = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "skills-mcp-reinstall-")))
    const root = path.join(home, "skills")
    const hourAgo = Date.now() / 1000 - 3600
    const install = async (notes: string) => {
      await fs.mkdir(path.join(root, "kept", "references"), { recursive: true })
      await fs.writeFile(path.join(root, "kept", "SKILL.md"), skillMd("kept", "A kept skill."))
      await fs.writeFile(path.join(root, "kept", "references", "notes.md"), notes)
      // As `cp -a`, `tar` or `rsync -a` leave it: the times of the copy are the old ones.
      for (const file of ["SKILL.md", "references/notes.md", "references", "."])
        await fs.utimes(path.join(root, "kept", file), hourAgo, hourAgo)
    }
    await install("first notes")
    const server = await startServer([root], {
      env: { HOME: home, XDG_CACHE_HOME: path.join(home, "cache") },
      capabilities: { extensions: { "io.modelcontextprotocol/skills": {} } },
    })
    cleanups.push(async () => {
      await server.close()
      await fs.rm(home, { recursive: true, force: true })
    })
    const notes = "skill://kept/references/notes.md"
    const first = await fullSync(server)
    expect(await fullSync(server)).toEqual(first)
    // Reinstalled: a new folder (new inodes) at the same path, with other notes of the same size.
    await fs.rm(path.join(root, "kept"), { recursive: true })
    await install("other notes")
    const reinstalled = await eventually(async () => {
      const now = await fullSync(server)
      expect(now.get(notes)).not.toBe(first.get(notes))
      return now
    })
    expect(await fullSync(server)).toEqual(reinstalled)
    // Then edited in place: the edit must be seen too.
    await fs.writeFile(path.join(root, "kept", "references", "notes.md"), "third notes")
    await eventually(async () => {
      const now = await fullSync(server)
      expect(now.get(notes)).not.toBe(reinstalled.get(notes))
    })
  })
})
