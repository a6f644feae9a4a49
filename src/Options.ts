/**
 * Options: the settings from command-line flags over environment variables over defaults. Each
 * option (flag, environment variable, help, kind, where its value goes) is described once, in
 * `SETTING_OPTIONS`; the command line parses and documents its options from that table. Then
 * `resolveSettings` finds the roots (folders, git sources, the conventional folders) and checks
 * what only the whole can say. Environment variables are read through Effect `Config`, so tests
 * swap the ConfigProvider instead of touching `process.env`.
 */
import * as os from "node:os"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { globProblem } from "./Access.js"
import { UsageError } from "./Errors.js"
import {
  cacheHome,
  conventionalRoots,
  ENV_SKILLS_DIR,
  ENV_SKILLS_GIT,
  expandPath,
  explicitRoot,
  gitSources,
  isDirectory,
  manifestCacheFolder,
  optionalEnv,
  splitSkillsDir,
} from "./Roots.js"
import type { Listen, Root, SettingsShape } from "./Settings.js"
import {
  budgetOf,
  CATALOG_PLACEMENTS,
  DEFAULT_HTTP_HOST,
  defaults,
  gitSourceFolder,
  isLoopback,
  parseListen,
  Settings,
  TOOLS_MODES,
} from "./Settings.js"

export const COMMANDS = ["serve", "instructions", "validate", "list"] as const
export type Command = (typeof COMMANDS)[number]

/** A flag's value as `parseArgs` gives it: text, a switch, or a repeatable option's values. */
type FlagValue = string | boolean | ReadonlyArray<string>

/**
 * How an option's value, from its flag or else its environment variable (`source` says which,
 * for errors), becomes settings.
 */
type Reader = (raw: FlagValue, source: string) => Effect.Effect<Partial<SettingsShape>, UsageError>

/** One command-line option: how `parseArgs` reads it, its help line, the commands that take it. */
export interface OptionSpec {
  readonly type: "string" | "boolean"
  readonly multiple?: boolean
  readonly short?: string
  readonly value?: string
  readonly env?: string
  readonly help: string
  readonly commands: ReadonlyArray<Command>
  readonly read?: Reader
}

/** What an option's kind gives its entry: how it is parsed and read. */
type Kind = Pick<OptionSpec, "type" | "multiple" | "read">

const invalid = (raw: string, source: string, expected: string) =>
  Effect.fail(new UsageError({ reason: `Invalid value '${raw}' for ${source}: expected ${expected}.` }))

const Integer = Schema.NumberFromString.pipe(Schema.int())

/** A whole number, at least `min`. */
const whole = (min: number, to: (value: number) => Partial<SettingsShape>) =>
  ({
    type: "string",
    read: (raw, source) => {
      const value = Option.getOrUndefined(Schema.decodeUnknownOption(Integer)(String(raw).trim()))
      return value === undefined || value < min
        ? invalid(String(raw), source, `a whole number >= ${min}`)
        : Effect.succeed(to(value))
    },
  }) as const satisfies Kind

/** One of `choices`. */
const oneOf = <A extends string>(choices: ReadonlyArray<A>, to: (value: A) => Partial<SettingsShape>) =>
  ({
    type: "string",
    read: (raw, source) => {
      const value = choices.find((choice) => choice === String(raw).trim())
      return value === undefined
        ? invalid(String(raw), source, `one of ${choices.join(", ")}`)
        : Effect.succeed(to(value))
    },
  }) as const satisfies Kind

/**
 * On or off: the flag, or its environment variable's 1/true/yes/on or 0/false/no/off
 * (SKILLS_MCP_WATCH=0 turns the watcher off, like --no-watch).
 */
const onOff = (to: (on: boolean) => Partial<SettingsShape>) =>
  ({
    type: "boolean",
    read: (raw, source) => {
      if (typeof raw === "boolean") return Effect.succeed(to(raw))
      const text = String(raw).trim().toLowerCase()
      if (["0", "false", "no", "off"].includes(text)) return Effect.succeed(to(false))
      if (["1", "true", "yes", "on"].includes(text)) return Effect.succeed(to(true))
      return invalid(text, source, "1 or 0")
    },
  }) as const satisfies Kind

/** Id globs: the flag's values or the environment variable, `,`-separated; each checked at start-up. */
const globs = (to: (patterns: ReadonlyArray<string>) => Partial<SettingsShape>) =>
  ({
    type: "string",
    multiple: true,
    read: (raw, source) => {
      const patterns = (typeof raw === "object" ? raw : [String(raw)])
        .flatMap((value) => value.split(","))
        .map((value) => value.trim())
        .filter((value) => value.length > 0)
      for (const pattern of patterns) {
        const problem = globProblem(pattern)
        if (problem !== undefined) {
          return Effect.fail(
            new UsageError({ reason: `Invalid pattern '${pattern}' in ${source}: ${problem}` }),
          )
        }
      }
      return Effect.succeed(to(patterns))
    },
  }) as const satisfies Kind

/** `--http [HOST:]PORT`. */
const listen = {
  type: "string",
  read: (raw, source) =>
    Either.match(parseListen(String(raw)), {
      onLeft: (expected) => invalid(String(raw), source, expected),
      onRight: (http) => Effect.succeed({ http }),
    }),
} as const satisfies Kind

/** `--auth FILE`: the path as given; resolved against the working directory by `resolveSettings`. */
const file = {
  type: "string",
  read: (raw, _source) => Effect.succeed({ auth: String(raw).trim() }),
} as const satisfies Kind

/** Host names for the Host/Origin check: the flag's values or the variable, `,`-separated. */
const hostNames = {
  type: "string",
  multiple: true,
  read: (raw, _source) =>
    Effect.succeed({
      allowedHosts: (typeof raw === "object" ? raw : [String(raw)])
        .flatMap((value) => value.split(","))
        .map((value) => value.trim().toLowerCase())
        .filter((value) => value.length > 0),
    }),
} as const satisfies Kind

const serving: ReadonlyArray<Command> = ["serve"]
/** Options that decide which skills are found: the one-shot commands see what the server sees. */
const discovering: ReadonlyArray<Command> = ["serve", "validate", "list"]

/**
 * Every option that sets a setting: its parsing, help line, environment variable, the commands
 * that accept it and (`read`, from its kind) where its value goes. Without `read`: --skills-dir
 * (the roots, see `resolveSettings`) and --no-watch (--watch turned off). The command line adds
 * its own few options.
 */
export const SETTING_OPTIONS = {
  "skills-dir": {
    type: "string",
    multiple: true,
    short: "d",
    value: "DIR",
    env: ENV_SKILLS_DIR,
    help: "A skills folder (repeatable; positional folders work too), or a skill's SKILL.md for that one skill. First folder wins on duplicate ids.",
    commands: discovering,
  },
  "skills-git": {
    type: "string",
    multiple: true,
    value: "URL[#REF:DIR]",
    env: ENV_SKILLS_GIT,
    help: "A git repository of skills (repeatable): a branch is followed (see --git-poll), a tag or commit pinned; DIR is where the skills sit in it (#REF, #:DIR and #REF:DIR work too). Ranks with --skills-dir in the order given. Needs git installed; credentials come from git (credential helper, SSH agent, GIT_ASKPASS), never from the URL.",
    commands: discovering,
  },
  "git-poll": {
    ...whole(1, (gitPollSeconds) => ({ gitPollSeconds })),
    value: "SECONDS",
    env: "SKILLS_MCP_GIT_POLL",
    help: `How often git sources that follow a branch fetch it (default ${defaults.gitPollSeconds}).`,
    commands: serving,
  },
  "include-dot-folders": {
    ...onOff((includeDotFolders) => ({ includeDotFolders })),
    env: "SKILLS_MCP_INCLUDE_DOT_FOLDERS",
    help: "Search dot-folders for skills too (e.g. .curated/, .system/); .git and node_modules are always skipped.",
    commands: discovering,
  },
  "max-file-bytes": {
    ...whole(1, (maxFileBytes) => ({ maxFileBytes })),
    value: "N",
    env: "SKILLS_MCP_MAX_FILE_BYTES",
    help: `Largest file returned by read_skill_file and get_skill (default ${defaults.maxFileBytes}).`,
    commands: discovering,
  },
  "max-depth": {
    ...whole(1, (maxDepth) => ({ maxDepth })),
    value: "N",
    env: "SKILLS_MCP_MAX_DEPTH",
    help: `How many folder levels below a root a skill may sit (default ${defaults.maxDepth}).`,
    commands: discovering,
  },
  "max-skills": {
    ...whole(1, (maxSkills) => ({ maxSkills })),
    value: "N",
    env: "SKILLS_MCP_MAX_SKILLS",
    help: `Most skills indexed; the rest are logged and left out (default ${defaults.maxSkills}).`,
    commands: ["serve", "list"],
  },
  "refresh-ms": {
    ...whole(0, (refreshIntervalMs) => ({ refreshIntervalMs })),
    value: "MS",
    env: "SKILLS_MCP_REFRESH_MS",
    help: `Without the watcher, re-check the skills folders for changes at most this often, on requests (default ${defaults.refreshIntervalMs}).`,
    commands: serving,
  },
  "catalog-budget": {
    ...whole(0, (catalogBudget) => ({ catalogBudget })),
    value: "CHARS",
    env: "SKILLS_MCP_CATALOG_BUDGET",
    help: `Most characters of the instructions and of the tools/list answer, <available_skills> catalog included (0: no catalog), and of skill://prompt-xml (default ${defaults.catalogBudget}). The next two options set the first two on their own.`,
    commands: serving,
  },
  "instructions-budget": {
    ...whole(0, (instructionsBudget) => ({ instructionsBudget })),
    value: "CHARS",
    env: "SKILLS_MCP_INSTRUCTIONS_BUDGET",
    help: "Most characters of the instructions, catalog included; 0 for no catalog there (default: --catalog-budget).",
    commands: serving,
  },
  "tools-budget": {
    ...whole(0, (toolsBudget) => ({ toolsBudget })),
    value: "CHARS",
    env: "SKILLS_MCP_TOOLS_BUDGET",
    help: "Most characters of the tools/list answer, catalog included; 0 for no catalog there (default: --catalog-budget).",
    commands: serving,
  },
  "page-size": {
    ...whole(1, (size) => ({ pageSize: size, protocolPageSize: size })),
    value: "N",
    env: "SKILLS_MCP_PAGE_SIZE",
    help: `Page size: list_skills' default and largest page (default ${defaults.pageSize}), and the page of skills/list, resources/list, prompts/list and directory reads (default ${defaults.protocolPageSize}). A value sets both.`,
    commands: serving,
  },
  watch: {
    ...onOff((watch) => ({ watch })),
    env: "SKILLS_MCP_WATCH",
    help: "Watch the skills folders and tell the client about changes (the default).",
    commands: serving,
  },
  "no-watch": {
    type: "boolean",
    help: "Do not watch; changes still show up on the next request (see --refresh-ms).",
    commands: serving,
  },
  catalog: {
    ...oneOf(CATALOG_PLACEMENTS, (catalogPlacement) => ({ catalogPlacement })),
    value: "WHERE",
    env: "SKILLS_MCP_CATALOG",
    help: "Where the <available_skills> catalog goes: instructions, tool, both (default) or none.",
    commands: serving,
  },
  tools: {
    ...oneOf(TOOLS_MODES, (tools) => ({ tools })),
    value: "WHEN",
    env: "SKILLS_MCP_TOOLS",
    help: "List the skill tools always (default), never, or auto (not to clients with the Skills extension).",
    commands: serving,
  },
  allow: {
    ...globs((allow) => ({ allow })),
    value: "GLOB",
    env: "SKILLS_MCP_ALLOW",
    help: "Serve only skills whose id matches (repeatable or comma-separated, e.g. 'pdf-*').",
    commands: discovering,
  },
  deny: {
    ...globs((deny) => ({ deny })),
    value: "GLOB",
    env: "SKILLS_MCP_DENY",
    help: "Never serve skills whose id matches (repeatable or comma-separated); wins over --allow.",
    commands: discovering,
  },
  http: {
    ...listen,
    value: "[HOST:]PORT",
    env: "SKILLS_MCP_HTTP",
    help: `Serve MCP over Streamable HTTP at http://HOST:PORT/mcp instead of stdio (HOST defaults to ${DEFAULT_HTTP_HOST}; see docs/HTTP.md).`,
    commands: serving,
  },
  auth: {
    ...file,
    value: "FILE",
    env: "SKILLS_MCP_AUTH",
    help: "With --http: every MCP request needs a bearer token this YAML file accepts (static tokens, JWTs), and sees the skills it allows; reloaded when it changes. Allows a non-loopback address (see docs/HTTP.md).",
    commands: serving,
  },
  "no-auth": {
    ...onOff((noAuth) => ({ noAuth })),
    env: "SKILLS_MCP_NO_AUTH",
    help: "With --http: serve on a non-loopback address without authentication, on purpose (e.g. behind a proxy that authenticates).",
    commands: serving,
  },
  "allowed-hosts": {
    ...hostNames,
    value: "NAME",
    env: "SKILLS_MCP_ALLOWED_HOSTS",
    help: "With --http: a host name (or name:port) accepted in Host and Origin headers besides the built-in ones (repeatable or comma-separated), e.g. the name a proxy serves.",
    commands: serving,
  },
} as const satisfies Record<string, OptionSpec>

export const environmentVariables = Object.values<OptionSpec>(SETTING_OPTIONS).flatMap(
  (option) => option.env ?? [],
)

/**
 * What the command line said: each option's value by its name (`"max-depth": "7"`), the
 * folders it named, and the working directory for relative paths (the process's by default).
 */
export type SettingsInput = {
  readonly [Name in Exclude<keyof typeof SETTING_OPTIONS, "skills-dir" | "skills-git">]?:
    | FlagValue
    | undefined
} & {
  /** The folders (or SKILL.md files) named by --skills-dir and positional arguments. */
  readonly skillsDirs?: ReadonlyArray<string>
  /**
   * The repositories named by --skills-git, each with how many of `skillsDirs` were given
   * before it (its place in priority order).
   */
  readonly skillsGit?: ReadonlyArray<{ readonly spec: string; readonly after: number }>
  readonly cwd?: string
}

/**
 * Each option's flag over its environment variable; a blank value keeps the default. Also where
 * each option given came from (`option --auth`, `environment variable SKILLS_MCP_AUTH`), for errors.
 */
const readOptions = Effect.fn("Settings.readOptions")(function* (input: SettingsInput) {
  // --no-watch is --watch turned off (the command line refuses both at once).
  const { skillsGit: _sources, ...options } = input
  const flags: Readonly<Record<string, FlagValue | undefined>> =
    options["no-watch"] === true ? { ...options, watch: false } : options
  let settings: Partial<SettingsShape> = {}
  const sources = new Map<string, string>()
  for (const [name, option] of Object.entries<OptionSpec>(SETTING_OPTIONS)) {
    if (option.read === undefined || option.env === undefined) continue
    const flag = flags[name]
    const fromFlag = flag !== undefined && !(typeof flag === "object" && flag.length === 0)
    const raw = fromFlag ? flag : Option.getOrUndefined(yield* optionalEnv(option.env))
    if (raw === undefined || (typeof raw === "string" && raw.trim() === "")) continue
    const source = fromFlag ? `option --${name}` : `environment variable ${option.env}`
    settings = { ...settings, ...(yield* option.read(raw, source)) }
    sources.set(name, source)
  }
  return { settings, sources }
})

/** Why the server will not listen on a non-loopback address without --auth or --no-auth. */
const nonLoopbackRefusal = (http: Listen) =>
  `Refusing to serve over HTTP on ${http.host}, which is not a loopback address, without authentication: anyone who can reach it could read every skill. Pass --auth FILE to require tokens (see docs/HTTP.md), listen on ${DEFAULT_HTTP_HOST} (--http ${http.port}), or pass --no-auth to serve without authentication on purpose (e.g. behind a proxy that authenticates).`

/**
 * Why the HTTP options given do not go together: the flags --auth, --no-auth and --allowed-hosts
 * only mean something with --http (their environment variables may be set for every run, and are
 * ignored without it), and --auth contradicts --no-auth. `sources` names where each came from.
 */
const httpOptionsProblem = (
  settings: SettingsShape,
  sources: ReadonlyMap<string, string>,
): string | undefined => {
  const given = (name: string, set: boolean) => (set ? sources.get(name) : undefined)
  const auth = given("auth", settings.auth !== undefined)
  const noAuth = given("no-auth", settings.noAuth)
  const hosts = given("allowed-hosts", settings.allowedHosts.length > 0)
  if (settings.http === undefined) {
    const stray = [auth, noAuth, hosts].find((source) => source?.startsWith("option ") === true)
    if (stray !== undefined)
      return `The ${stray} applies only to serving over HTTP: add --http [HOST:]PORT, or leave it out.`
    return undefined
  }
  if (auth !== undefined && noAuth !== undefined)
    return `The ${auth} and the ${noAuth} contradict each other: pass one of them.`
  return undefined
}

/**
 * Roots: `--skills-dir` and positional folders when given, else SKILLS_DIR, else the
 * conventional folders that exist. An explicit folder that does not exist is an error.
 */
export const resolveSettings = Effect.fn("Settings.resolve")(function* (input: SettingsInput) {
  const cwd = input.cwd ?? process.cwd()
  const home = Option.getOrElse(yield* optionalEnv("HOME"), () => os.homedir())
  const fromEnv = Option.map(yield* optionalEnv(ENV_SKILLS_DIR), splitSkillsDir)
  const given =
    input.skillsDirs !== undefined && input.skillsDirs.length > 0
      ? { dirs: input.skillsDirs, source: "the command line" }
      : Option.isSome(fromEnv) && fromEnv.value.length > 0
        ? { dirs: fromEnv.value, source: `${ENV_SKILLS_DIR}` }
        : undefined

  const roots: Array<Root> = []
  const seen = new Set<string>()
  const gitCache = path.join(yield* cacheHome(home), "skills-mcp", "git")
  const gits = yield* gitSources(input.skillsGit, given?.dirs.length ?? 0)
  /** Adds the git sources given before the `count`-th folder. */
  const addGits = (count: number) => {
    for (const { spec } of gits.filter((entry) => entry.after === count)) {
      if (seen.has(spec.display)) continue
      seen.add(spec.display)
      roots.push({ path: gitSourceFolder(gitCache, spec.url), explicit: true, git: spec })
    }
  }
  if (given !== undefined || gits.length > 0) {
    const dirs = given?.dirs ?? []
    for (const [index, dir] of dirs.entries()) {
      addGits(index)
      // An empty value (an unset shell variable, say) would otherwise mean the working folder.
      if (dir.trim() === "") {
        return yield* new UsageError({
          reason: `An empty skills folder was given (from ${given?.source}); pass the folder's path.`,
        })
      }
      const absolute = yield* explicitRoot(dir, expandPath(dir, cwd, home), given?.source ?? "")
      if (seen.has(absolute)) continue
      seen.add(absolute)
      roots.push({ path: absolute, explicit: true })
    }
    addGits(dirs.length)
  } else {
    for (const absolute of conventionalRoots(cwd, home)) {
      if (seen.has(absolute) || !(yield* isDirectory(absolute))) continue
      seen.add(absolute)
      roots.push({ path: absolute, explicit: false })
    }
  }

  const options = yield* readOptions(input)
  const settings: SettingsShape = {
    ...defaults,
    roots,
    manifestCache: yield* manifestCacheFolder(home),
    gitCache,
    ...options.settings,
    ...(options.settings.auth === undefined ? {} : { auth: expandPath(options.settings.auth, cwd, home) }),
  }
  const mismatch = httpOptionsProblem(settings, options.sources)
  if (mismatch !== undefined) return yield* new UsageError({ reason: mismatch })
  if (
    settings.http !== undefined &&
    !isLoopback(settings.http.host) &&
    !settings.noAuth &&
    settings.auth === undefined
  ) {
    return yield* new UsageError({ reason: nonLoopbackRefusal(settings.http) })
  }
  if (roots.length === 0) {
    yield* Effect.logWarning(
      `No skills folder found. Looked in: ${conventionalRoots(cwd, home).join(", ")}. Pass --skills-dir DIR or set ${ENV_SKILLS_DIR}.`,
    )
  } else {
    yield* Effect.logInfo(`Skills roots: ${roots.map((root) => root.git?.display ?? root.path).join(", ")}`)
  }
  // Unset, the budgets of the instructions and of tools/list are the catalog's.
  return {
    ...settings,
    instructionsBudget: budgetOf(settings, "instructions"),
    toolsBudget: budgetOf(settings, "tools"),
  }
})

/** The Settings service from parsed command-line input and the environment (see `resolveSettings`). */
export const settingsFromInput = (input: SettingsInput): Layer.Layer<Settings, UsageError> =>
  Layer.effect(Settings, resolveSettings(input))
