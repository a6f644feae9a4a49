/**
 * The launcher (`dist/bin.cjs`, src/launch.ts): V8's code cache for the bundled server, kept in
 * a folder of the user's own, written by server runs only, rewritten when V8 rejects it.
 */
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
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
const serve = async (env: Record<string, string> = {}) => {
  const run = await runRaw(["--skills-dir", SKILLS], [initializeLine(1)], {
    HOME: home,
    SKILLS_MCP_CACHE_DIR: cacheDir,
    ...env,
  })
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

  it("is not written by the one-shot commands", async () => {
    const run = await runRaw(["list", "--skills-dir", SKILLS], [], {
      HOME: home,
      SKILLS_MCP_CACHE_DIR: cacheDir,
    })
    expect(run.code).toBe(0)
    expect(await caches()).toEqual([])
  })
})
