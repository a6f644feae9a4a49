/**
 * Skill trees too large or too odd to commit, made in a temporary folder: 10,000 entries,
 * folders deeper than the limits, a file of 8 GiB (sparse), a frontmatter of 1 MB, files
 * changing between list and read, case variants and, as a non-root user, unreadable files.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import * as Schema from "effect/Schema"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { RunningServer } from "../support/server.js"
import {
  callTool,
  eventually,
  initializeLine,
  jsonRpcLines,
  request,
  rpcError,
  runRaw,
  startServer,
  toolText,
} from "../support/server.js"

const ENTRIES = 10_000

let root: string
let server: RunningServer

const skillMd = (name: string, description = `The ${name} skill.`) =>
  `---\nname: ${name}\ndescription: ${description}\n---\n\n# ${name}\n`

const write = async (file: string, content: string | Uint8Array = "") => {
  await fs.mkdir(path.dirname(file), { recursive: true })
  await fs.writeFile(file, content)
}

/** `count` empty files in `dir`, created a thousand at a time. */
const crowd = async (dir: string, count: number) => {
  await fs.mkdir(dir, { recursive: true })
  for (let start = 0; start < count; start += 1_000) {
    await Promise.all(
      Array.from({ length: Math.min(1_000, count - start) }, (_, i) =>
        fs.writeFile(path.join(dir, `f${start + i}.txt`), ""),
      ),
    )
  }
}

/** One page of a folder's listing. */
const DirectoryPage = Schema.Struct({
  resources: Schema.Array(Schema.Unknown),
  nextCursor: Schema.optional(Schema.String),
})

beforeAll(async () => {
  root = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "skills-mcp-trees-")))
  const skills = path.join(root, "skills")
  await write(path.join(skills, "crowded", "SKILL.md"), skillMd("crowded"))
  await crowd(path.join(skills, "crowded", "assets"), ENTRIES)
  await crowd(path.join(skills, "busy-group"), ENTRIES)
  const deepFolders = Array.from({ length: 12 }, (_, i) => `level-${i}`)
  await write(path.join(skills, ...deepFolders, "too-deep", "SKILL.md"), skillMd("too-deep"))
  await write(path.join(skills, "nested", "SKILL.md"), skillMd("nested"))
  await write(
    path.join(skills, "nested", ...Array.from({ length: 200 }, () => "d"), "bottom.md"),
    "# bottom\n",
  )
  await write(path.join(skills, "sparse", "SKILL.md"), skillMd("sparse"))
  await write(path.join(skills, "sparse", "references", "huge.bin"))
  await fs.truncate(path.join(skills, "sparse", "references", "huge.bin"), 8 * 1024 ** 3)
  await write(path.join(skills, "sparse", "references", "ok.md"), "# still readable\n")
  await write(
    path.join(skills, "huge-frontmatter", "SKILL.md"),
    skillMd("huge-frontmatter", "x".repeat(1_000_000)),
  )
  await write(path.join(skills, "churn", "SKILL.md"), skillMd("churn"))
  await write(path.join(skills, "churn", "references", "going.md"), "# going\n")
  await write(path.join(skills, "churn", "references", "changing.md"), "# before\n")
  await write(path.join(skills, "Case-Variant", "SKILL.md"), skillMd("case-variant", "Upper-case folder."))
  await write(path.join(skills, "case-variant", "SKILL.md"), skillMd("case-variant", "Lower-case folder."))
  execFileSync("mkfifo", [path.join(skills, "churn", "references", "pipe.md")])
  await fs.mkdir(path.join(skills, "fifo-skill"))
  execFileSync("mkfifo", [path.join(skills, "fifo-skill", "SKILL.md")])
  server = await startServer([skills, "--refresh-ms", "0"], { env: { HOME: root } })
  await server.client.listTools()
}, 120_000)

afterAll(async () => {
  await server?.close()
  await fs.rm(root, { recursive: true, force: true })
})

describe("large and deep trees", () => {
  it("serves a skill holding 10,000 files: listings are capped and say so, directory reads page", async () => {
    const listing = await callTool(server, "read_skill_file", { id: "crowded", path: "assets" })
    expect(listing.isError).toBeUndefined()
    const structured = listing.structuredContent as { entries: Array<unknown>; truncated?: boolean }
    expect(structured.entries.length).toBeLessThanOrEqual(2_000)
    expect(toolText(listing)).toContain("listing stopped after 2000 entries")
    const page = await request(
      server,
      "resources/directory/read",
      { uri: "skill://crowded/assets" },
      DirectoryPage,
    )
    expect(page.resources.length).toBeLessThanOrEqual(200)
    expect(page.nextCursor).toBeTypeOf("string")
  })

  it("leaves a skill over 512 files out of skills/list, with the reason logged", async () => {
    expect((await rpcError(server, "skills/get", { uri: "skill://crowded/SKILL.md" })).code).toBe(-32602)
    const listed = await request(server, "skills/list", {}, Schema.Unknown)
    expect(JSON.stringify(listed)).not.toContain("skill://crowded/")
    await eventually(() => expect(server.stderr()).toMatch(/crowded.*512 files/))
    expect((await rpcError(server, "skills/get", { uri: "skill://nested/SKILL.md" })).message).toContain(
      "deeper than 16",
    )
  })

  it("does not find a skill deeper than the depth limit, and bounds listings of deep folders", async () => {
    expect((await callTool(server, "get_skill", { id: "too-deep" })).isError).toBe(true)
    const listing = await callTool(server, "read_skill_file", { id: "nested", path: "" })
    expect(listing.isError).toBeUndefined()
    const paths = (listing.structuredContent as { entries: Array<{ path: string }> }).entries.map(
      (e) => e.path,
    )
    expect(Math.max(...paths.map((p) => p.split("/").length))).toBeLessThanOrEqual(16)
    expect(toolText(listing)).toContain("listing stopped at 16 levels of folders")
    const bottom = await callTool(server, "read_skill_file", {
      id: "nested",
      path: `${"d/".repeat(200)}bottom.md`,
    })
    expect(toolText(bottom)).toBe("# bottom\n")
  })

  it("refuses an 8 GiB file by its size, without reading it, and keeps serving the skill", async () => {
    const huge = await callTool(server, "read_skill_file", { id: "sparse", path: "references/huge.bin" })
    expect(huge.isError).toBe(true)
    expect(toolText(huge)).toContain("limit")
    expect(
      (await rpcError(server, "resources/read", { uri: "skill://sparse/references/huge.bin" })).code,
    ).toBe(-32602)
    expect(
      toolText(await callTool(server, "read_skill_file", { id: "sparse", path: "references/ok.md" })),
    ).toBe("# still readable\n")
  })

  it("skips a skill whose frontmatter is 1 MB, with the reason", async () => {
    expect((await callTool(server, "get_skill", { id: "huge-frontmatter" })).isError).toBe(true)
    expect(server.stderr()).toMatch(/Skipped skill 'huge-frontmatter'/)
  })
})

describe("files that change under the server", () => {
  it("answers a file deleted after it was listed as not found, and a rewritten one with its new content", async () => {
    const listing = await callTool(server, "read_skill_file", { id: "churn", path: "references" })
    expect(toolText(listing)).toContain("going.md")
    await fs.rm(path.join(root, "skills", "churn", "references", "going.md"))
    const gone = await callTool(server, "read_skill_file", { id: "churn", path: "references/going.md" })
    expect(gone.isError).toBe(true)
    expect(toolText(gone)).toMatch(/not found|no file/i)
    await fs.writeFile(path.join(root, "skills", "churn", "references", "changing.md"), "# after\n")
    expect(
      toolText(await callTool(server, "read_skill_file", { id: "churn", path: "references/changing.md" })),
    ).toBe("# after\n")
  })

  it("never waits on a named pipe (FIFO), as a file or as a SKILL.md", async () => {
    // More reads than libuv has threads: a blocking open would stall every later request.
    const reads = await Promise.all(
      Array.from({ length: 8 }, () =>
        callTool(server, "read_skill_file", { id: "churn", path: "references/pipe.md" }),
      ),
    )
    for (const read of reads) {
      expect(read.isError).toBe(true)
      expect(toolText(read)).toContain("not a regular file")
    }
    expect((await callTool(server, "get_skill", { id: "fifo-skill" })).isError).toBe(true)
    expect(
      toolText(await callTool(server, "read_skill_file", { id: "churn", path: "references/changing.md" })),
    ).toBe("# after\n")
  })

  it("serves case variants of a folder name as two skills", async () => {
    expect(toolText(await callTool(server, "get_skill", { id: "Case-Variant" }))).toContain("# case-variant")
    const lower = await callTool(server, "get_skill", { id: "case-variant" })
    expect(lower.isError).toBeUndefined()
    const upper = await callTool(server, "list_skills", { query: "folder" })
    expect(toolText(upper)).toContain("Upper-case folder.")
    expect(toolText(upper)).toContain("Lower-case folder.")
  })

  it("stays responsive after all of the above", async () => {
    expect((await callTool(server, "get_skill", { id: "sparse" })).isError).toBeUndefined()
    expect(server.protocolErrors).toEqual([])
  })
})

describe("unreadable files and folders", () => {
  // Root reads everything: run the server as nobody to see what a normal user would.
  const asNobody = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {}

  it("skips an unreadable skill with a reason, refuses an unreadable file, and serves the rest", async () => {
    const dir = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "skills-mcp-locked-")))
    try {
      await write(path.join(dir, "locked-folder", "SKILL.md"), skillMd("locked-folder"))
      await write(path.join(dir, "locked-file", "SKILL.md"), skillMd("locked-file"))
      await write(path.join(dir, "locked-file", "references", "secret.md"), "# private\n")
      await write(path.join(dir, "locked-md", "SKILL.md"), skillMd("locked-md"))
      await write(path.join(dir, "open", "SKILL.md"), skillMd("open"))
      await fs.chmod(dir, 0o755)
      await fs.chmod(path.join(dir, "locked-folder"), 0o000)
      await fs.chmod(path.join(dir, "locked-file", "references", "secret.md"), 0o000)
      await fs.chmod(path.join(dir, "locked-md", "SKILL.md"), 0o000)
      const tool = (id: number, name: string, args: Record<string, unknown>) =>
        JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } })
      const run = await runRaw(
        [dir, "--no-watch"],
        [
          initializeLine(0),
          JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
          tool(1, "read_skill_file", { id: "locked-file", path: "references/secret.md" }),
          tool(2, "get_skill", { id: "locked-md" }),
          tool(3, "get_skill", { id: "locked-folder" }),
          tool(4, "get_skill", { id: "open" }),
        ],
        { HOME: dir, SKILLS_MCP_COMPILE_CACHE: "0" },
        asNobody,
      )
      expect(run.code).toBe(0)
      const byId = new Map(jsonRpcLines(run.stdout).map((message) => [message.id, message]))
      const result = (id: number) => JSON.stringify(byId.get(id))
      expect(result(1)).toContain('"isError":true')
      expect(result(1)).not.toContain("private")
      expect(result(2)).toContain('"isError":true')
      expect(result(3)).toContain('"isError":true')
      expect(result(4)).not.toContain('"isError":true')
      expect(result(4)).toContain("# open")
      expect(run.stderr).toMatch(/locked-md/)
      expect(run.stderr).toMatch(/locked-folder/)
    } finally {
      await fs.chmod(path.join(dir, "locked-folder"), 0o755).catch(() => undefined)
      await fs.rm(dir, { recursive: true, force: true })
    }
  })
})
