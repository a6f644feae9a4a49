/**
 * The launcher (`dist/bin.cjs`, src/launch.ts): V8's code cache for the bundled server, kept in
 * a folder of the user's own, written by server runs only, rewritten when V8 rejects it; and
 * the build's own cache (scripts/code-cache.mjs), used until the user has one.
 */
import { spawnSync } from "node:child_process"
import { createHash } from "node:crypto"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { ResultSchema } from "@modelcontextprotocol/sdk/types.js"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import { eventually, initializeLine, jsonRpcLines, PROJECT, runRaw, startServer } from "../support/server.js"

const SKILLS = path.join(PROJECT, "fixtures", "valid")

let home: string
let cacheDir: string

beforeEach(async () => {
  home = await fs.mkdtemp(path.join(os.tmpdir(), "skills-mcp-launcher-"))
  cacheDir = path.join(home, "cache")
})

afterEach(async () => {
  await fs.rm(home, { recursive: true, force: true })
})

/** A server session that answers `initialize`, then sees its input end. */
const serve = async (env: Record<string, string> = {}, bin?: string) => {
  const run = await runRaw(
    ["--skills-dir", SKILLS],
    [initializeLine(1)],
    { HOME: home, SKILLS_MCP_CACHE_DIR: cacheDir, ...env },
    bin === undefined ? {} : { bin },
  )
  expect(run.code).toBe(0)
  expect(jsonRpcLines(run.stdout)).toMatchObject([{ id: 1, result: { serverInfo: { name: "skills-mcp" } } }])
  return run
}

/** The cache files in the cache folder (none when it does not exist). */
const caches = async () =>
  (await fs.readdir(cacheDir).catch(() => [])).filter((name) => name.endsWith(".v8cache")).sort()

describe("the launcher's code cache", () => {
  it("is written by a server run, private to the user, and used as it is by the next start", async () => {
    await serve()
    const [name, ...others] = await caches()
    expect(name).toBeDefined()
    expect(others).toEqual([])
    const file = path.join(cacheDir, name ?? "")
    expect((await fs.stat(cacheDir)).mode & 0o777).toBe(0o700)
    expect((await fs.stat(file)).mode & 0o777).toBe(0o600)
    const written = await fs.readFile(file)
    expect(written.length).toBeGreaterThan(0)

    // Accepted by V8: the next start leaves it as it is.
    await serve()
    expect(await caches()).toEqual([name])
    expect((await fs.readFile(file)).equals(written)).toBe(true)
  })

  it("is written while serving, without waiting for the session to end", async () => {
    const server = await startServer(["--skills-dir", SKILLS], {
      env: { HOME: home, SKILLS_MCP_CACHE_DIR: cacheDir },
    })
    try {
      // Still serving: this is the write made in the background, not the one at exit.
      await eventually(async () => expect(await caches()).toHaveLength(1))
      await eventually(async () => expect(await fs.readdir(cacheDir)).toEqual(await caches()))
    } finally {
      await server.close()
    }
    const [name] = await caches()
    const file = path.join(cacheDir, name ?? "")
    const written = await fs.readFile(file)
    await serve()
    expect((await fs.readFile(file)).equals(written)).toBe(true)
  })

  it("is rewritten when V8 rejects it, and older caches and left-over temporary files go", async () => {
    await serve()
    const [name] = await caches()
    const file = path.join(cacheDir, name ?? "")
    const garbage = Buffer.from("not a code cache")
    await fs.writeFile(file, garbage)
    await fs.writeFile(path.join(cacheDir, "v18.0.0-linux-x64-1-2-3-4.v8cache"), "an older cache")
    await fs.writeFile(path.join(cacheDir, `${name}.12345.tmp`), "a stopped process's")
    await serve()
    expect(await fs.readdir(cacheDir)).toEqual([name])
    const rewritten = await fs.readFile(file)
    expect(rewritten.equals(garbage)).toBe(false)
    expect(rewritten.length).toBeGreaterThan(garbage.length)
  })

  it("is neither read nor written with SKILLS_MCP_COMPILE_CACHE=0", async () => {
    await serve({ SKILLS_MCP_COMPILE_CACHE: "0" })
    expect(await caches()).toEqual([])
  })

  it("is not kept in a folder that others can write to", async () => {
    await fs.mkdir(cacheDir)
    await fs.chmod(cacheDir, 0o777)
    await serve()
    expect(await caches()).toEqual([])
  })

  it.runIf(process.platform === "linux")(
    "does not keep the server from starting when its folder cannot be made (under /proc)",
    async () => {
      // Node 20's own recursive mkdir loops for ever there: the kernel answers "no such file"
      // for the folder, and "exists" for its parent.
      cacheDir = "/proc/skills-mcp-cache/v8"
      await serve()
    },
  )

  it("is not written by the one-shot commands", async () => {
    const run = await runRaw(["list", "--skills-dir", SKILLS], [], {
      HOME: home,
      SKILLS_MCP_CACHE_DIR: cacheDir,
    })
    expect(run.code).toBe(0)
    expect(await caches()).toEqual([])
  })
})

describe("the build's code cache", () => {
  const DIST = path.join(PROJECT, "dist")
  const BUNDLE = "skills-mcp.cjs"
  const BUILT = `${BUNDLE}.v8cache`
  const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest()

  /** A private copy of the built bin (launcher, bundle, the build's cache) that tests may alter. */
  const copyOfDist = async (name = "dist") => {
    const dist = path.join(home, name)
    await fs.mkdir(dist)
    for (const file of ["bin.cjs", BUNDLE, BUILT])
      await fs.copyFile(path.join(DIST, file), path.join(dist, file))
    return { bin: path.join(dist, "bin.cjs"), bundle: path.join(dist, BUNDLE), built: path.join(dist, BUILT) }
  }

  /** The one cache the user's folder holds after a start. */
  const usersCache = async () => {
    const [name, ...others] = await caches()
    expect(others).toEqual([])
    return fs.readFile(path.join(cacheDir, name ?? ""))
  }

  it("is made by the build for the very bundle beside it: its digest, then V8's data", async () => {
    const built = await fs.readFile(path.join(DIST, BUILT))
    expect(built.subarray(0, 32).equals(sha256(await fs.readFile(path.join(DIST, BUNDLE))))).toBe(true)
    expect(built.length).toBeGreaterThan(100_000)
    expect((await fs.stat(path.join(DIST, BUILT))).mode & 0o022).toBe(0)
  })

  it("serves a start without a cache of the user's, which then gets a copy of it", async () => {
    const dist = await copyOfDist()
    await serve({}, dist.bin)
    expect((await usersCache()).equals((await fs.readFile(dist.built)).subarray(32))).toBe(true)
  })

  it("is left alone when made for other bytes, when others can write to it, or when it is a link", async () => {
    type Dist = Awaited<ReturnType<typeof copyOfDist>>
    const alterations: Record<string, (dist: Dist) => Promise<void>> = {
      // Same length: V8 itself checks only the source's length, and would run the old code.
      rebuilt: async (dist) => {
        const bundle = await fs.readFile(dist.bundle)
        expect(bundle[bundle.length - 1]).toBe(0x0a)
        bundle[bundle.length - 1] = 0x20
        await fs.writeFile(dist.bundle, bundle)
      },
      writable: (dist) => fs.chmod(dist.built, 0o666),
      linked: async (dist) => {
        await fs.rename(dist.built, `${dist.built}.real`)
        await fs.symlink(`${dist.built}.real`, dist.built)
      },
    }
    for (const [name, alter] of Object.entries(alterations)) {
      await fs.rm(cacheDir, { recursive: true, force: true })
      const dist = await copyOfDist(name)
      const data = (await fs.readFile(dist.built)).subarray(32)
      await alter(dist)
      await serve({}, dist.bin)
      // Compiled without it: the user's cache is V8's data from this run, not a copy.
      expect((await usersCache()).equals(data), name).toBe(false)
    }
  })

  it("is not needed: without it (as in the npm package) a start writes V8's data, which the next uses", async () => {
    const dist = await copyOfDist()
    await fs.rm(dist.built)
    await serve({}, dist.bin)
    const written = await usersCache()
    expect(written.length).toBeGreaterThan(100_000)
    await serve({}, dist.bin)
    expect((await usersCache()).equals(written)).toBe(true)
  })

  it("is given up when V8 rejects it, and the user's cache is then made from the run", async () => {
    const dist = await copyOfDist()
    const garbage = Buffer.from("not V8's data, but made for this bundle")
    await fs.writeFile(dist.built, Buffer.concat([sha256(await fs.readFile(dist.bundle)), garbage]))
    await serve({}, dist.bin)
    const written = await usersCache()
    expect(written.equals(garbage)).toBe(false)
    expect(written.length).toBeGreaterThan(100_000)
  })
})

describe("stack traces while the bundle loads", () => {
  /**
   * A preload that counts the stack traces formatted with frames, and reports that count and
   * `Error.stackTraceLimit` on stderr as the server writes its first answer.
   */
  const WATCH_STACKS = `
let formatted = 0
Error.prepareStackTrace = (error, sites) => {
  if (sites.length > 0) formatted++
  return [String(error), ...sites.map((site) => "    at " + site)].join("\\n")
}
const write = process.stdout.write
process.stdout.write = function (...args) {
  process.stdout.write = write
  require("node:fs").writeSync(2, "STACKS " + JSON.stringify({ formatted, limit: Error.stackTraceLimit }) + "\\n")
  return write.apply(this, args)
}
`

  const stacksAtFirstAnswer = async (nodeOptions: string, env: Record<string, string> = {}) => {
    const preload = path.join(home, "watch-stacks.cjs")
    await fs.writeFile(preload, WATCH_STACKS)
    const run = await serve({ NODE_OPTIONS: `--require ${preload} ${nodeOptions}`, ...env })
    const line = run.stderr.split("\n").find((text) => text.startsWith("STACKS "))
    return JSON.parse(line?.slice("STACKS ".length) ?? "null")
  }

  it("formats none before the first answer, and the limit is back as it was once the modules loaded", async () => {
    // Effect's Utils module formats one as it loads: 1.8 to 2.9 ms of every start (src/LoadStacks.ts).
    expect(await stacksAtFirstAnswer("")).toEqual({ formatted: 0, limit: 10 })
    expect(await stacksAtFirstAnswer("--stack-trace-limit=25")).toEqual({ formatted: 0, limit: 25 })
    // Without the code cache the bundle is loaded by `require`, the same way.
    expect(await stacksAtFirstAnswer("", { SKILLS_MCP_COMPILE_CACHE: "0" })).toEqual({
      formatted: 0,
      limit: 10,
    })
  })

  it("leaves the limit alone where it cannot be changed: the server starts under frozen intrinsics", async () => {
    // `serve` checks that `initialize` is answered and that the process exits cleanly.
    const run = await serve({ NODE_OPTIONS: "--frozen-intrinsics" })
    expect(run.stderr).not.toContain("TypeError")
  })
})

describe("Node's fs/promises module", () => {
  /** A preload that reports, as the process exits, which of these of Node's modules it loaded. */
  const WATCH_MODULES = `
process.on("exit", () => {
  const loaded = (name) => process.moduleLoadList.includes("NativeModule " + name)
  const report = { promises: loaded("internal/fs/promises"), watchers: loaded("internal/fs/watchers") }
  require("node:fs").writeSync(2, "MODULES " + JSON.stringify(report) + "\\n")
})
`

  it("is loaded neither by a request nor by the launcher writing its cache", async () => {
    // Node 20 loads it, and seven modules with it, on first use: 2 to 3 ms of the first request
    // that read a file (src/FsPort.ts).
    const preload = path.join(home, "watch-modules.cjs")
    await fs.writeFile(preload, WATCH_MODULES)
    const server = await startServer(["--skills-dir", SKILLS], {
      env: { HOME: home, SKILLS_MCP_CACHE_DIR: cacheDir, NODE_OPTIONS: `--require ${preload}` },
      capabilities: { extensions: { "io.modelcontextprotocol/skills": {} } },
    })
    try {
      // The cache written in the background, while serving.
      await eventually(async () => expect(await caches()).toHaveLength(1))
      const { client } = server
      const calls = [
        { name: "list_skills", arguments: { query: "pdf forms" } },
        { name: "get_skill", arguments: { id: "pdf-processing" } },
        { name: "get_skill", arguments: { id: "no-such-skill" } },
        { name: "read_skill_file", arguments: { id: "pdf-processing" } },
        { name: "read_skill_file", arguments: { id: "pdf-processing", path: "references/forms.md" } },
        { name: "read_skill_file", arguments: { id: "pdf-processing", path: "references/none.md" } },
      ]
      for (const call of calls) expect(await client.callTool(call)).toHaveProperty("content")
      await client.readResource({ uri: "skill://pdf-processing/SKILL.md" })
      const listed = await client.request({ method: "skills/list", params: {} }, ResultSchema)
      expect(listed).toHaveProperty("skills")
      await client.request(
        { method: "skills/get", params: { uri: "skill://pdf-processing/SKILL.md" } },
        ResultSchema,
      )
    } finally {
      await server.close()
    }
    const line = server
      .stderr()
      .split("\n")
      .find((text) => text.startsWith("MODULES "))
    // No more than Node itself loads (Node 20 does not: on it, this is the check that matters).
    const node = spawnSync(process.execPath, ["--require", preload, "-e", "0"], { encoding: "utf8" })
    const alone: { readonly promises?: unknown } | null = JSON.parse(
      /^MODULES (.*)$/m.exec(node.stderr)?.[1] ?? "null",
    )
    expect(alone).not.toBeNull()
    // The watcher's module shows the report sees what a server run loads.
    expect(JSON.parse(line?.slice("MODULES ".length) ?? "null")).toEqual({
      promises: alone?.promises,
      watchers: true,
    })
  })
})

describe("code generated from strings", () => {
  /** A preload that counts calls of `Function` (zod's compiled checks are made with it). */
  const COUNT_FUNCTIONS = `
const made = []
globalThis.Function = new Proxy(Function, {
  construct(target, args, newTarget) { made.push(String(args.at(-1)).slice(0, 60)); return Reflect.construct(target, args, newTarget) },
  apply(target, self, args) { made.push(String(args.at(-1)).slice(0, 60)); return Reflect.apply(target, self, args) },
})
process.on("exit", () => require("node:fs").writeSync(2, "FUNCTIONS " + JSON.stringify(made) + "\\n"))
`
  const made = (stderr: string): unknown => JSON.parse(/^FUNCTIONS (.*)$/m.exec(stderr)?.[1] ?? "null")

  it("is none: every zod check, the MCP SDK's included, runs interpreted from the first message", async () => {
    // zod decides when a schema is made whether to compile its parser, and the SDK makes its
    // schemas as its modules load (src/ZodJitless.ts).
    const preload = path.join(home, "count-functions.cjs")
    await fs.writeFile(preload, COUNT_FUNCTIONS)
    // The report sees both kinds of call (zod's is `new Function(...)`).
    const node = spawnSync(
      process.execPath,
      ["--require", preload, "-e", "new Function('return 1')(); Function('return 2')()"],
      { encoding: "utf8" },
    )
    expect(made(node.stderr)).toEqual(["return 1", "return 2"])

    const server = await startServer(["--skills-dir", SKILLS], {
      env: { HOME: home, SKILLS_MCP_CACHE_DIR: cacheDir, NODE_OPTIONS: `--require ${preload}` },
      capabilities: { extensions: { "io.modelcontextprotocol/skills": {} } },
    })
    try {
      const { client } = server
      await client.listTools()
      const calls = [
        { name: "list_skills", arguments: {} },
        { name: "list_skills", arguments: { query: "pdf forms" } },
        { name: "get_skill", arguments: { id: "pdf-processing" } },
        { name: "get_skill", arguments: { id: "no-such-skill" } },
        { name: "get_skill", arguments: { id: 7 } },
        { name: "read_skill_file", arguments: { id: "pdf-processing", path: "references/forms.md" } },
      ]
      for (const call of calls) expect(await client.callTool(call)).toHaveProperty("content")
      await client.listResources()
      await client.listResourceTemplates()
      await client.readResource({ uri: "skill://pdf-processing/SKILL.md" })
      await client.subscribeResource({ uri: "skill://pdf-processing/SKILL.md" })
      await client.unsubscribeResource({ uri: "skill://pdf-processing/SKILL.md" })
      await client.listPrompts()
      await client.getPrompt({ name: "skill", arguments: { name: "pdf-processing" } })
      await client.complete({
        ref: { type: "ref/prompt", name: "skill" },
        argument: { name: "name", value: "pdf" },
      })
      await client.setLoggingLevel("warning")
      await client.request({ method: "skills/list", params: {} }, ResultSchema)
      await client.request(
        { method: "skills/get", params: { uri: "skill://pdf-processing/SKILL.md" } },
        ResultSchema,
      )
      await client.request(
        { method: "resources/directory/read", params: { uri: "skill://pdf-processing" } },
        ResultSchema,
      )
      await client.ping()
    } finally {
      await server.close()
    }
    expect(made(server.stderr())).toEqual([])
  })
})
