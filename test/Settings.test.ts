import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { resolveSettings } from "../src/Options.js"
import { expandPath, splitSkillsDir } from "../src/Roots.js"
import { budgetOf, defaults, isLoopback, parseListen } from "../src/Settings.js"
import { tempTree } from "./support/tree.js"

const withEnv = (env: Record<string, string>) =>
  Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))

describe("Settings", () => {
  it("expands ~ and resolves relative paths against the working directory", () => {
    expect(expandPath("~", "/work", "/home/u")).toBe("/home/u")
    expect(expandPath("~/skills", "/work", "/home/u")).toBe("/home/u/skills")
    expect(expandPath("skills", "/work", "/home/u")).toBe("/work/skills")
    expect(expandPath("/abs", "/work", "/home/u")).toBe("/abs")
  })

  it("splits SKILLS_DIR on commas and the path delimiter", () => {
    expect(splitSkillsDir("a, b:c,,")).toEqual(["a", "b", "c"])
  })

  it.scoped("takes command-line folders over SKILLS_DIR, in order, absolute", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({ "one/.keep": "", "two/.keep": "", "env/.keep": "" })
      const settings = yield* resolveSettings({ skillsDirs: ["two", `${root}/one`], cwd: root }).pipe(
        withEnv({ SKILLS_DIR: `${root}/env`, HOME: root }),
      )
      expect(settings.roots).toEqual([
        { path: path.join(root, "two"), explicit: true },
        { path: path.join(root, "one"), explicit: true },
      ])
    }),
  )

  it.scoped("uses SKILLS_DIR when no folder is given on the command line", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({ "env/.keep": "", "home/skills/.keep": "" })
      const settings = yield* resolveSettings({ cwd: root }).pipe(
        withEnv({ SKILLS_DIR: "env,~/skills", HOME: `${root}/home` }),
      )
      expect(settings.roots.map((r) => r.path)).toEqual([
        path.join(root, "env"),
        path.join(root, "home/skills"),
      ])
    }),
  )

  it.scoped("fails clearly when an explicit folder does not exist", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({})
      const error = yield* Effect.flip(
        resolveSettings({ skillsDirs: ["missing"], cwd: root }).pipe(withEnv({ HOME: root })),
      )
      expect(error._tag).toBe("UsageError")
      expect(error.message).toContain("'missing'")
      expect(error.message).toContain(path.join(root, "missing"))
    }),
  )

  it.scoped("takes a path to a SKILL.md as its skill folder, and says a file is a file, not missing", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({ "pdf/SKILL.md": "", "pdf/notes.md": "" })
      const settings = yield* resolveSettings({ skillsDirs: ["pdf/SKILL.md"], cwd: root }).pipe(
        withEnv({ HOME: root }),
      )
      expect(settings.roots).toEqual([{ path: path.join(root, "pdf"), explicit: true }])
      const file = yield* Effect.flip(
        resolveSettings({ skillsDirs: ["pdf/notes.md"], cwd: root }).pipe(withEnv({ HOME: root })),
      )
      expect(file.message).toBe(
        `Skills folder 'pdf/notes.md' (from the command line) is a file, not a folder: ${path.join(root, "pdf/notes.md")}. Pass the folder that holds the skills, or a skill's SKILL.md.`,
      )
      const missing = yield* Effect.flip(
        resolveSettings({ cwd: root }).pipe(withEnv({ HOME: root, SKILLS_DIR: "gone" })),
      )
      expect(missing.message).toBe(
        `Skills folder 'gone' (from SKILLS_DIR) does not exist: ${path.join(root, "gone")}`,
      )
    }),
  )

  it.scoped("searches dot-folders when --include-dot-folders or SKILLS_MCP_INCLUDE_DOT_FOLDERS says so", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({})
      const resolve = (
        input: { readonly "include-dot-folders"?: boolean },
        env: Record<string, string> = {},
      ) => resolveSettings({ cwd: root, ...input }).pipe(withEnv({ HOME: root, ...env }))
      expect((yield* resolve({})).includeDotFolders).toBe(false)
      expect((yield* resolve({ "include-dot-folders": true })).includeDotFolders).toBe(true)
      expect((yield* resolve({}, { SKILLS_MCP_INCLUDE_DOT_FOLDERS: "1" })).includeDotFolders).toBe(true)
      expect((yield* resolve({}, { SKILLS_MCP_INCLUDE_DOT_FOLDERS: "off" })).includeDotFolders).toBe(false)
      const bad = yield* Effect.flip(resolve({}, { SKILLS_MCP_INCLUDE_DOT_FOLDERS: "maybe" }))
      expect(bad.message).toContain("SKILLS_MCP_INCLUDE_DOT_FOLDERS")
    }),
  )

  it.scoped("refuses an empty folder rather than serving the working directory", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({ "pdf/SKILL.md": "" })
      const error = yield* Effect.flip(
        resolveSettings({ skillsDirs: [""], cwd: root }).pipe(withEnv({ HOME: root })),
      )
      expect(error._tag).toBe("UsageError")
      expect(error.message).toContain("An empty skills folder was given (from the command line)")
    }),
  )

  it.scoped("falls back to the conventional folders that exist, silently skipping the rest", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({ "project/.claude/skills/.keep": "", "home/.agents/skills/.keep": "" })
      const settings = yield* resolveSettings({ cwd: `${root}/project` }).pipe(
        withEnv({ HOME: `${root}/home` }),
      )
      expect(settings.roots).toEqual([
        { path: path.join(root, "project/.claude/skills"), explicit: false },
        { path: path.join(root, "home/.agents/skills"), explicit: false },
      ])
    }),
  )

  it.scoped("reads limits from flags over env over defaults, and rejects bad numbers", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({})
      const env = withEnv({ HOME: root, SKILLS_MCP_MAX_FILE_BYTES: "2048", SKILLS_MCP_MAX_DEPTH: "2" })
      const settings = yield* resolveSettings({ cwd: root, "max-depth": "7" }).pipe(env)
      expect(settings.maxFileBytes).toBe(2048)
      expect(settings.maxDepth).toBe(7)
      expect(settings.pageSize).toBe(100)
      const bad = yield* Effect.flip(resolveSettings({ cwd: root, "max-file-bytes": "lots" }).pipe(env))
      expect(bad.message).toContain("--max-file-bytes")
      const badEnv = yield* Effect.flip(
        resolveSettings({ cwd: root }).pipe(withEnv({ HOME: root, SKILLS_MCP_PAGE_SIZE: "0" })),
      )
      expect(badEnv.message).toContain("SKILLS_MCP_PAGE_SIZE")
    }),
  )

  it.scoped("gives the instructions and tools/list the catalog budget unless each is set on its own", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({})
      const plain = yield* resolveSettings({ cwd: root }).pipe(withEnv({ HOME: root }))
      expect([plain.catalogBudget, plain.instructionsBudget, plain.toolsBudget]).toEqual([8000, 8000, 8000])
      // Settings a library user builds: the catalog budget stands for both unless each is given.
      const built = { ...defaults, catalogBudget: 0 }
      expect([budgetOf(built, "instructions"), budgetOf(built, "tools")]).toEqual([0, 0])
      expect(budgetOf({ ...built, toolsBudget: 5000 }, "tools")).toBe(5000)
      const shared = yield* resolveSettings({ cwd: root, "catalog-budget": "3000" }).pipe(
        withEnv({ HOME: root, SKILLS_MCP_TOOLS_BUDGET: "6000" }),
      )
      expect([shared.catalogBudget, shared.instructionsBudget, shared.toolsBudget]).toEqual([
        3000, 3000, 6000,
      ])
      const own = yield* resolveSettings({
        cwd: root,
        "instructions-budget": "0",
        "tools-budget": "5000",
      }).pipe(withEnv({ HOME: root, SKILLS_MCP_CATALOG_BUDGET: "2000", SKILLS_MCP_TOOLS_BUDGET: "6000" }))
      expect([own.catalogBudget, own.instructionsBudget, own.toolsBudget]).toEqual([2000, 0, 5000])
      const bad = yield* Effect.flip(
        resolveSettings({ cwd: root }).pipe(withEnv({ HOME: root, SKILLS_MCP_INSTRUCTIONS_BUDGET: "-1" })),
      )
      expect(bad.message).toContain("SKILLS_MCP_INSTRUCTIONS_BUDGET")
    }),
  )

  it("reads --http as PORT, HOST:PORT or [IPv6]:PORT, the host 127.0.0.1 by default", () => {
    expect(parseListen("8080")).toEqual(Either.right({ host: "127.0.0.1", port: 8080 }))
    expect(parseListen(" 0.0.0.0:9000 ")).toEqual(Either.right({ host: "0.0.0.0", port: 9000 }))
    expect(parseListen("localhost:0")).toEqual(Either.right({ host: "localhost", port: 0 }))
    expect(parseListen("[::1]:8080")).toEqual(Either.right({ host: "::1", port: 8080 }))
    for (const bad of [
      "",
      "http",
      ":8080",
      "host:",
      "8080:host",
      "65536",
      "::1:8080",
      "[nope]:80",
      "a b:80",
    ]) {
      expect(Either.isLeft(parseListen(bad)), bad).toBe(true)
    }
  })

  it("knows the loopback addresses", () => {
    for (const host of ["127.0.0.1", "127.1.2.3", "localhost", "LOCALHOST", "::1"])
      expect(isLoopback(host), host).toBe(true)
    for (const host of ["0.0.0.0", "::", "192.168.1.5", "example.com", "128.0.0.1"])
      expect(isLoopback(host), host).toBe(false)
  })

  it.scoped("refuses a non-loopback --http address without --no-auth, and says why", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({})
      const error = yield* Effect.flip(
        resolveSettings({ http: "0.0.0.0:8080", cwd: root }).pipe(withEnv({ HOME: root })),
      )
      expect(error._tag).toBe("UsageError")
      expect(error.message).toContain("not a loopback address")
      expect(error.message).toContain("--no-auth")
      const allowed = yield* resolveSettings({ http: "0.0.0.0:8080", "no-auth": true, cwd: root }).pipe(
        withEnv({ HOME: root }),
      )
      expect(allowed.http).toEqual({ host: "0.0.0.0", port: 8080 })
      const fromEnv = yield* resolveSettings({ cwd: root }).pipe(
        withEnv({
          HOME: root,
          SKILLS_MCP_HTTP: "127.0.0.1:7000",
          SKILLS_MCP_ALLOWED_HOSTS: "Skills.Example.com, b:81",
        }),
      )
      expect(fromEnv.http).toEqual({ host: "127.0.0.1", port: 7000 })
      expect(fromEnv.allowedHosts).toEqual(["skills.example.com", "b:81"])
      const bad = yield* Effect.flip(
        resolveSettings({ http: "nope", cwd: root }).pipe(withEnv({ HOME: root })),
      )
      expect(bad.message).toContain("--http")
    }),
  )

  it.scoped("takes --auth FILE (resolved) and with it a non-loopback address", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({})
      const settings = yield* resolveSettings({ http: "0.0.0.0:8080", auth: "auth.yaml", cwd: root }).pipe(
        withEnv({ HOME: root }),
      )
      expect(settings.auth).toBe(path.join(root, "auth.yaml"))
      const fromEnv = yield* resolveSettings({ http: "8080", cwd: root }).pipe(
        withEnv({ HOME: root, SKILLS_MCP_AUTH: "~/a.yaml" }),
      )
      expect(fromEnv.auth).toBe(path.join(root, "a.yaml"))
    }),
  )

  it.scoped("refuses --auth, --no-auth and --allowed-hosts without --http, and --auth with --no-auth", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({})
      const refusal = (input: Parameters<typeof resolveSettings>[0], env: Record<string, string> = {}) =>
        Effect.flip(resolveSettings({ ...input, cwd: root }).pipe(withEnv({ HOME: root, ...env })))
      for (const [input, option] of [
        [{ auth: "a.yaml" }, "--auth"],
        [{ "no-auth": true }, "--no-auth"],
        [{ "allowed-hosts": ["x.example"] }, "--allowed-hosts"],
      ] as const) {
        const error = yield* refusal(input)
        expect(error._tag).toBe("UsageError")
        expect(error.message).toContain(`option ${option} applies only to serving over HTTP`)
      }
      const both = yield* refusal({ http: "8080", auth: "a.yaml" }, { SKILLS_MCP_NO_AUTH: "1" })
      expect(both.message).toContain(
        "option --auth and the environment variable SKILLS_MCP_NO_AUTH contradict",
      )
      // The variables may be set for every run: without --http they are ignored.
      const stdio = yield* resolveSettings({ cwd: root }).pipe(
        withEnv({
          HOME: root,
          SKILLS_MCP_AUTH: "a.yaml",
          SKILLS_MCP_ALLOWED_HOSTS: "x",
          SKILLS_MCP_NO_AUTH: "1",
        }),
      )
      expect(stdio.http).toBeUndefined()
    }),
  )
})
