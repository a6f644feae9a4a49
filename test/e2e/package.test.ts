/**
 * The published package, as users get it: `npm pack` (which runs `prepare`: the build, when the
 * sources changed), then `npm install -g` of the tarball into a temporary prefix, offline (the
 * package has no dependencies to fetch); the installed `skills-mcp` run and its size reported. And
 * the library, from an npm project that installs the tarball with its one peer dependency, Effect.
 */
import { execFile } from "node:child_process"
import * as fs from "node:fs/promises"
import { builtinModules } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import { promisify } from "node:util"
import * as Schema from "effect/Schema"
import { build } from "esbuild"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { PROJECT, VALID_SKILL_IDS } from "../support/server.js"

const run = promisify(execFile)

const Manifest = Schema.Struct({
  name: Schema.String,
  version: Schema.String,
  dependencies: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String })),
  peerDependencies: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String })),
})
const manifest = Schema.decodeUnknownSync(Schema.parseJson(Manifest))
const pkg = manifest(await fs.readFile(path.join(PROJECT, "package.json"), "utf8"))

/**
 * npm's environment for a command it runs (`npm test` sets `npm_config_local_prefix` to this
 * project, among others) left out: each npm call here works in its own folder, with the user's
 * npm settings and cache.
 */
const npmEnv = Object.fromEntries(
  Object.entries(process.env).filter(([key]) => !key.toLowerCase().startsWith("npm_")),
)

let scratch: string
let tarball: string
let installed: string
let skillsDir: string
/** The installed bin's environment: a home of its own (for its code cache). */
let binEnv: NodeJS.ProcessEnv
const bin = () => path.join(scratch, "prefix", "bin", "skills-mcp")

/** Every file below `dir` (links not followed), with its size. */
const filesBelow = async (dir: string): Promise<Array<{ file: string; bytes: number }>> => {
  const entries = await fs.readdir(dir, { recursive: true, withFileTypes: true })
  return Promise.all(
    entries
      .filter((entry) => !entry.isDirectory())
      .map(async (entry) => {
        const file = path.join(entry.parentPath, entry.name)
        return { file: path.relative(dir, file), bytes: (await fs.lstat(file)).size }
      }),
  )
}

beforeAll(async () => {
  scratch = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "skills-mcp-package-")))
  binEnv = {
    ...npmEnv,
    HOME: scratch,
    // Its `#!/usr/bin/env node` finds the Node running the tests.
    PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH ?? ""}`,
  }
  await run("npm", ["pack", "--pack-destination", scratch], { cwd: PROJECT, env: npmEnv })
  tarball = path.join(scratch, `${pkg.name}-${pkg.version}.tgz`)
  await run(
    "npm",
    [
      "install",
      "--global",
      "--prefix",
      path.join(scratch, "prefix"),
      "--offline",
      "--no-audit",
      "--no-fund",
      tarball,
    ],
    { cwd: scratch, env: npmEnv },
  )
  installed = path.join(scratch, "prefix", "lib", "node_modules", pkg.name)
  skillsDir = path.join(scratch, "skills")
  await fs.cp(path.join(PROJECT, "fixtures", "valid"), skillsDir, { recursive: true, verbatimSymlinks: true })
})

afterAll(async () => {
  await fs.rm(scratch, { recursive: true, force: true })
})

describe("the packed package", () => {
  it("installs globally as the executable alone: no dependencies, no test declarations, a few MB", async () => {
    const total = (await filesBelow(path.join(scratch, "prefix"))).reduce((sum, { bytes }) => sum + bytes, 0)
    // The installed folder holds what the tarball holds, and node_modules/ for dependencies.
    const names = (await filesBelow(installed)).map(({ file }) => file.split(path.sep).join("/"))
    console.log(
      `installed size of ${pkg.name}-${pkg.version}.tgz: ${(total / 1e6).toFixed(2)} MB, ${names.length} files`,
    )
    expect(total).toBeLessThan(5_000_000)
    expect(names.filter((name) => name.startsWith("node_modules/")).length).toBe(0)
    expect(names.filter((name) => /(^|\/)test\/|\.test\.d\.ts$|^fixtures\//.test(name))).toEqual([])
    expect(names).toEqual(
      expect.arrayContaining([
        "package.json",
        "README.md",
        "dist/bin.cjs",
        "dist/index.js",
        "dist/types/index.d.ts",
      ]),
    )
    // The quick-start skills ship with it.
    expect(names.some((name) => name.startsWith("examples/skills/"))).toBe(true)
  })

  it("runs the installed skills-mcp: --version and list", async () => {
    const version = await run(bin(), ["--version"], { cwd: scratch, env: binEnv })
    expect(version.stdout.trim()).toBe(pkg.version)
    // execFile rejects on a non-zero exit code.
    const list = await run(bin(), ["list", skillsDir], { cwd: scratch, env: binEnv })
    const ids = list.stdout.split("\n").map((line) => line.split(" ")[0])
    expect(ids).toEqual(expect.arrayContaining([...VALID_SKILL_IDS]))
    expect(list.stdout).toContain(`${VALID_SKILL_IDS.length} skills served`)
  })

  it("imports, in the library, only Node's modules and declared dependencies", async () => {
    // esbuild parses the bundle (comments in it quote imports too) and lists what it imports.
    const { metafile } = await build({
      entryPoints: [path.join(installed, "dist", "index.js")],
      bundle: true,
      packages: "external",
      platform: "node",
      format: "esm",
      write: false,
      metafile: true,
      logLevel: "silent",
    })
    const specifiers = Object.values(metafile.inputs).flatMap(({ imports }) =>
      imports.map((entry) => entry.path),
    )
    const packages = new Set(
      specifiers
        .filter((specifier) => !specifier.startsWith("node:") && !builtinModules.includes(specifier))
        .map((specifier) =>
          specifier
            .split("/")
            .slice(0, specifier.startsWith("@") ? 2 : 1)
            .join("/"),
        ),
    )
    expect([...packages]).toContain("effect")
    const declared = Object.keys({ ...pkg.dependencies, ...pkg.peerDependencies })
    expect([...packages].filter((name) => !declared.includes(name))).toEqual([])
  })

  it("works as a library in a project that installs it with Effect", async () => {
    const project = path.join(scratch, "project")
    await fs.mkdir(project)
    await fs.writeFile(
      path.join(project, "package.json"),
      JSON.stringify({ name: "consumer", private: true }),
    )
    const effect = manifest(
      await fs.readFile(path.join(PROJECT, "node_modules", "effect", "package.json"), "utf8"),
    )
    // The packages are in npm's cache after `npm ci`; npm fetches them only if they are not.
    await run(
      "npm",
      ["install", "--prefer-offline", "--no-audit", "--no-fund", tarball, `effect@${effect.version}`],
      {
        cwd: project,
        env: npmEnv,
      },
    )
    await fs.writeFile(path.join(project, "consumer.mjs"), CONSUMER)
    const { stdout } = await run(process.execPath, ["consumer.mjs", skillsDir], { cwd: project, env: binEnv })
    const result = Schema.decodeUnknownSync(Schema.parseJson(ConsumerResult))(stdout)
    expect(result.ids).toEqual(VALID_SKILL_IDS)
    expect(result.answers).toEqual([
      { id: 1, server: "skills-mcp", isError: false },
      { id: 2, server: "", isError: false },
    ])
    // The MCP SDK and the libraries the server uses are in the package's own bundle.
    await expect(fs.access(path.join(project, "node_modules", "@modelcontextprotocol"))).rejects.toThrow()
  })
})

const ConsumerResult = Schema.Struct({
  ids: Schema.Array(Schema.String),
  answers: Schema.Array(Schema.Struct({ id: Schema.Number, server: Schema.String, isError: Schema.Boolean })),
})

/** A user's program: lists the skills through the Catalog, then serves two requests over streams. */
const CONSUMER = `
import { PassThrough, Readable } from "node:stream"
import * as Effect from "effect/Effect"
import { appLayer, Catalog, Settings, StderrTextLogging, serve } from "skills-mcp"

const line = (id, method, params) => JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\\n"
const input = Readable.from([
  line(1, "initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "consumer", version: "1" } }),
  line(2, "tools/call", { name: "get_skill", arguments: { id: "pdf-processing" } }),
])
const output = new PassThrough()
let written = ""
output.on("data", (chunk) => { written += chunk })

const settings = Settings.make({ roots: [{ path: process.argv[2], explicit: true }] })
const ids = await Effect.runPromise(
  Effect.gen(function* () {
    const page = yield* (yield* Catalog).list({})
    yield* Effect.scoped(serve({ input, output }))
    return page.skills.map((skill) => skill.id)
  }).pipe(Effect.provide(appLayer(settings)), Effect.provide(StderrTextLogging)),
)
const answers = written.trim().split("\\n").map((text) => JSON.parse(text)).map((answer) => ({
  id: answer.id,
  server: answer.result?.serverInfo?.name ?? "",
  isError: answer.result?.isError ?? answer.error !== undefined,
}))
process.stdout.write(JSON.stringify({ ids, answers }))
`
