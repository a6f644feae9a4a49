/**
 * Settings: roots and limits, from command-line flags over environment variables over defaults.
 * Environment variables are read through Effect `Config`, so tests swap the ConfigProvider
 * instead of touching `process.env`.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { globProblem } from "./Access.js"
import { UsageError } from "./Errors.js"

export interface Root {
  /** Absolute path as configured (`~` expanded, resolved against the working directory). */
  readonly path: string
  /** Given by the user (flag, positional or SKILLS_DIR) rather than a conventional default. */
  readonly explicit: boolean
}

/** Where the `<available_skills>` catalog goes: the server's instructions, get_skill's description, both, neither. */
export type CatalogPlacement = "instructions" | "tool" | "both" | "none"
/** Whether the model-facing tools are listed: always, never, or only to clients without the Skills extension. */
export type ToolsMode = "auto" | "always" | "never"

export const CATALOG_PLACEMENTS: ReadonlyArray<CatalogPlacement> = ["instructions", "tool", "both", "none"]
export const TOOLS_MODES: ReadonlyArray<ToolsMode> = ["auto", "always", "never"]

export interface SettingsShape {
  readonly roots: ReadonlyArray<Root>
  /** Largest file (bytes) read_skill_file or a resource read will return. */
  readonly maxFileBytes: number
  /** How many folder levels below a root a skill folder may sit. */
  readonly maxDepth: number
  /** Skills beyond this count are not indexed (and the cut is logged). */
  readonly maxSkills: number
  /** The catalog re-checks the disk at most this often (ms) when a request arrives. */
  readonly refreshIntervalMs: number
  /**
   * Most characters of the `instructions` and of the `tools/list` answer, catalog included (0:
   * no catalog), unless each has a budget of its own below; and of `skill://prompt-xml`.
   */
  readonly catalogBudget: number
  /** Most characters of the `instructions`, catalog included (0: no catalog); see `budgetOf`. */
  readonly instructionsBudget?: number
  /** Most characters of the `tools/list` answer (JSON), catalog included; see `budgetOf`. */
  readonly toolsBudget?: number
  /** Default and maximum page size of list_skills. */
  readonly pageSize: number
  /** Page size of the protocol lists (skills/list, resources/list, prompts/list, directory reads). */
  readonly protocolPageSize: number
  /** Watch the skills folders for changes (besides the per-request check). */
  readonly watch: boolean
  readonly catalogPlacement: CatalogPlacement
  readonly tools: ToolsMode
  /** Glob patterns over skill ids: when any is given, only matching skills are served. */
  readonly allow: ReadonlyArray<string>
  /** Glob patterns over skill ids: matching skills are never served (deny wins over allow). */
  readonly deny: ReadonlyArray<string>
  /** Discovery searches dot-folders too (never `.git` nor `node_modules`). */
  readonly includeDotFolders: boolean
}

export class Settings extends Context.Tag("skills-mcp/Settings")<Settings, SettingsShape>() {
  /**
   * Settings for tests and library users: defaults plus what is given, no disk access (roots
   * made absolute and normalized, as discovery expects them).
   */
  static readonly make = (overrides: Partial<SettingsShape> = {}): Layer.Layer<Settings> =>
    Layer.succeed(Settings, {
      ...defaults,
      ...overrides,
      roots: (overrides.roots ?? defaults.roots).map((root) => ({ ...root, path: path.resolve(root.path) })),
    })

  /** Settings from parsed command-line input and the environment (see `resolveSettings`). */
  static readonly fromInput = (input: SettingsInput): Layer.Layer<Settings, UsageError> =>
    Layer.effect(Settings, resolveSettings(input))
}

export const defaults: SettingsShape = {
  roots: [],
  maxFileBytes: 1024 * 1024,
  maxDepth: 4,
  maxSkills: 100_000,
  refreshIntervalMs: 500,
  catalogBudget: 8_000,
  pageSize: 100,
  protocolPageSize: 200,
  watch: true,
  catalogPlacement: "both",
  tools: "always",
  allow: [],
  deny: [],
  includeDotFolders: false,
}

/** The budget of the `instructions` or of the `tools/list` answer: its own, else the catalog's. */
export const budgetOf = (settings: SettingsShape, answer: "instructions" | "tools"): number =>
  (answer === "instructions" ? settings.instructionsBudget : settings.toolsBudget) ?? settings.catalogBudget

/** What the command line said; every field optional so env and defaults can fill in. */
export interface SettingsInput {
  readonly skillsDirs?: ReadonlyArray<string>
  readonly maxFileBytes?: string
  readonly maxDepth?: string
  readonly maxSkills?: string
  readonly refreshMs?: string
  readonly catalogBudget?: string
  readonly instructionsBudget?: string
  readonly toolsBudget?: string
  readonly pageSize?: string
  /** false for --no-watch. */
  readonly watch?: boolean
  readonly catalog?: string
  readonly tools?: string
  readonly allow?: ReadonlyArray<string>
  readonly deny?: ReadonlyArray<string>
  /** true for --include-dot-folders. */
  readonly includeDotFolders?: boolean
  /** Working directory for relative paths (defaults to the process's). */
  readonly cwd?: string
}

/** Each numeric setting: its flag, its environment variable, its bounds. */
const numericSettings = {
  maxFileBytes: { flag: "--max-file-bytes", env: "SKILLS_MCP_MAX_FILE_BYTES", min: 1 },
  maxDepth: { flag: "--max-depth", env: "SKILLS_MCP_MAX_DEPTH", min: 1 },
  maxSkills: { flag: "--max-skills", env: "SKILLS_MCP_MAX_SKILLS", min: 1 },
  refreshMs: { flag: "--refresh-ms", env: "SKILLS_MCP_REFRESH_MS", min: 0 },
  catalogBudget: { flag: "--catalog-budget", env: "SKILLS_MCP_CATALOG_BUDGET", min: 0 },
  instructionsBudget: { flag: "--instructions-budget", env: "SKILLS_MCP_INSTRUCTIONS_BUDGET", min: 0 },
  toolsBudget: { flag: "--tools-budget", env: "SKILLS_MCP_TOOLS_BUDGET", min: 0 },
  pageSize: { flag: "--page-size", env: "SKILLS_MCP_PAGE_SIZE", min: 1 },
} as const

/** Each setting chosen from a list: its flag, its environment variable, its choices. */
const choiceSettings = {
  catalog: { flag: "--catalog", env: "SKILLS_MCP_CATALOG", choices: CATALOG_PLACEMENTS },
  tools: { flag: "--tools", env: "SKILLS_MCP_TOOLS", choices: TOOLS_MODES },
} as const

export const ENV_SKILLS_DIR = "SKILLS_DIR"
export const ENV_WATCH = "SKILLS_MCP_WATCH"
export const ENV_ALLOW = "SKILLS_MCP_ALLOW"
export const ENV_DENY = "SKILLS_MCP_DENY"
export const ENV_INCLUDE_DOT_FOLDERS = "SKILLS_MCP_INCLUDE_DOT_FOLDERS"
export const environmentVariables = [
  ENV_SKILLS_DIR,
  ENV_WATCH,
  ENV_ALLOW,
  ENV_DENY,
  ENV_INCLUDE_DOT_FOLDERS,
  ...Object.values(numericSettings).map((s) => s.env),
  ...Object.values(choiceSettings).map((s) => s.env),
]

const Integer = Schema.NumberFromString.pipe(Schema.int())

const optionalEnv = (name: string) =>
  Config.option(Config.string(name)).pipe(Effect.orElseSucceed(() => Option.none<string>()))

const numeric = Effect.fn("Settings.numeric")(function* (
  key: keyof typeof numericSettings,
  fromFlag: string | undefined,
  fallback: number,
) {
  const spec = numericSettings[key]
  const fromEnv = fromFlag === undefined ? Option.getOrUndefined(yield* optionalEnv(spec.env)) : undefined
  const raw = fromFlag ?? fromEnv
  if (raw === undefined || raw.trim() === "") return fallback
  const source = fromFlag === undefined ? `environment variable ${spec.env}` : `option ${spec.flag}`
  const value = Option.getOrUndefined(Schema.decodeUnknownOption(Integer)(raw.trim()))
  if (value === undefined || value < spec.min) {
    return yield* new UsageError({
      reason: `Invalid value '${raw}' for ${source}: expected a whole number >= ${spec.min}.`,
    })
  }
  return value
})

const choice = <A extends string>(
  spec: { readonly flag: string; readonly env: string; readonly choices: ReadonlyArray<A> },
  fromFlag: string | undefined,
  fallback: A,
): Effect.Effect<A, UsageError> =>
  Effect.gen(function* () {
    const raw = fromFlag ?? Option.getOrUndefined(yield* optionalEnv(spec.env))
    if (raw === undefined || raw.trim() === "") return fallback
    const value = spec.choices.find((candidate) => candidate === raw.trim())
    if (value === undefined) {
      const source = fromFlag === undefined ? `environment variable ${spec.env}` : `option ${spec.flag}`
      return yield* new UsageError({
        reason: `Invalid value '${raw}' for ${source}: expected one of ${spec.choices.join(", ")}.`,
      })
    }
    return value
  })

/**
 * An on/off setting: the flag when given, else its environment variable (1/true/yes/on or
 * 0/false/no/off; SKILLS_MCP_WATCH=0 turns the watcher off, like --no-watch), else `fallback`.
 */
const switchSetting = Effect.fn("Settings.switch")(function* (
  fromFlag: boolean | undefined,
  env: string,
  fallback: boolean,
) {
  if (fromFlag !== undefined) return fromFlag
  const raw = Option.getOrUndefined(yield* optionalEnv(env))
    ?.trim()
    .toLowerCase()
  if (raw === undefined || raw === "") return fallback
  if (["0", "false", "no", "off"].includes(raw)) return false
  if (["1", "true", "yes", "on"].includes(raw)) return true
  return yield* new UsageError({
    reason: `Invalid value '${raw}' for environment variable ${env}: expected 1 or 0.`,
  })
})

/**
 * A list of id globs: the flag's values when given, else the environment variable's
 * `,`-separated ones. Each pattern is checked here, so a typo fails at start-up.
 */
const patterns = Effect.fn("Settings.patterns")(function* (
  fromFlag: ReadonlyArray<string> | undefined,
  env: string,
  flag: string,
) {
  const raw =
    fromFlag !== undefined && fromFlag.length > 0
      ? { values: fromFlag.flatMap((value) => value.split(",")), source: `option ${flag}` }
      : {
          values: Option.getOrElse(yield* optionalEnv(env), () => "").split(","),
          source: `environment variable ${env}`,
        }
  const values = raw.values.map((value) => value.trim()).filter((value) => value.length > 0)
  for (const value of values) {
    const problem = globProblem(value)
    if (problem !== undefined) {
      return yield* new UsageError({ reason: `Invalid pattern '${value}' in ${raw.source}: ${problem}` })
    }
  }
  return values
})

/** `~` and `~/x` expand to the home directory; other paths resolve against `cwd`. */
export const expandPath = (input: string, cwd: string, home: string): string => {
  const expanded = input === "~" ? home : input.startsWith("~/") ? path.join(home, input.slice(2)) : input
  return path.resolve(cwd, expanded)
}

/** SKILLS_DIR holds several folders separated by `,` or the platform path delimiter. */
export const splitSkillsDir = (value: string): Array<string> =>
  value
    .split(new RegExp(`[,${path.delimiter === ";" ? ";" : ":"}]`))
    .map((part) => part.trim())
    .filter((part) => part.length > 0)

/** What is at a path (links followed). Synchronous: roots are checked once, at start-up. */
const kindOf = (target: string) =>
  Effect.sync((): "folder" | "file" | "missing" => {
    try {
      return fs.statSync(target).isDirectory() ? "folder" : "file"
    } catch {
      return "missing"
    }
  })

const isDirectory = (dir: string) => Effect.map(kindOf(dir), (kind) => kind === "folder")

/** The file that makes a folder a skill: `validate path/to/SKILL.md` checks its folder. */
const SKILL_FILE = "SKILL.md"

/**
 * The root an explicit path gives: a folder as it is, a SKILL.md file its skill folder (that
 * one skill); anything else is a usage error that says what is there.
 */
const explicitRoot = Effect.fn("Settings.explicitRoot")(function* (
  given: string,
  absolute: string,
  source: string,
) {
  const kind = yield* kindOf(absolute)
  if (kind === "folder") return absolute
  if (kind === "file" && path.basename(absolute) === SKILL_FILE) return path.dirname(absolute)
  return yield* new UsageError({
    reason:
      kind === "missing"
        ? `Skills folder '${given}' (from ${source}) does not exist: ${absolute}`
        : `Skills folder '${given}' (from ${source}) is a file, not a folder: ${absolute}. Pass the folder that holds the skills, or a skill's ${SKILL_FILE}.`,
  })
})

export const conventionalRoots = (cwd: string, home: string): Array<string> => [
  path.join(cwd, ".agents", "skills"),
  path.join(cwd, ".claude", "skills"),
  path.join(home, ".agents", "skills"),
  path.join(home, ".claude", "skills"),
]

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
  if (given !== undefined) {
    for (const dir of given.dirs) {
      // An empty value (an unset shell variable, say) would otherwise mean the working folder.
      if (dir.trim() === "") {
        return yield* new UsageError({
          reason: `An empty skills folder was given (from ${given.source}); pass the folder's path.`,
        })
      }
      const absolute = yield* explicitRoot(dir, expandPath(dir, cwd, home), given.source)
      if (seen.has(absolute)) continue
      seen.add(absolute)
      roots.push({ path: absolute, explicit: true })
    }
  } else {
    for (const absolute of conventionalRoots(cwd, home)) {
      if (seen.has(absolute) || !(yield* isDirectory(absolute))) continue
      seen.add(absolute)
      roots.push({ path: absolute, explicit: false })
    }
  }

  const catalogBudget = yield* numeric("catalogBudget", input.catalogBudget, defaults.catalogBudget)
  const settings: SettingsShape = {
    roots,
    maxFileBytes: yield* numeric("maxFileBytes", input.maxFileBytes, defaults.maxFileBytes),
    maxDepth: yield* numeric("maxDepth", input.maxDepth, defaults.maxDepth),
    maxSkills: yield* numeric("maxSkills", input.maxSkills, defaults.maxSkills),
    refreshIntervalMs: yield* numeric("refreshMs", input.refreshMs, defaults.refreshIntervalMs),
    catalogBudget,
    instructionsBudget: yield* numeric("instructionsBudget", input.instructionsBudget, catalogBudget),
    toolsBudget: yield* numeric("toolsBudget", input.toolsBudget, catalogBudget),
    pageSize: yield* numeric("pageSize", input.pageSize, defaults.pageSize),
    protocolPageSize: yield* numeric("pageSize", input.pageSize, defaults.protocolPageSize),
    watch: yield* switchSetting(input.watch, ENV_WATCH, defaults.watch),
    catalogPlacement: yield* choice(choiceSettings.catalog, input.catalog, defaults.catalogPlacement),
    tools: yield* choice(choiceSettings.tools, input.tools, defaults.tools),
    allow: yield* patterns(input.allow, ENV_ALLOW, "--allow"),
    deny: yield* patterns(input.deny, ENV_DENY, "--deny"),
    includeDotFolders: yield* switchSetting(
      input.includeDotFolders,
      ENV_INCLUDE_DOT_FOLDERS,
      defaults.includeDotFolders,
    ),
  }
  if (roots.length === 0) {
    yield* Effect.logWarning(
      `No skills folder found. Looked in: ${conventionalRoots(cwd, home).join(", ")}. Pass --skills-dir DIR or set ${ENV_SKILLS_DIR}.`,
    )
  } else {
    yield* Effect.logInfo(`Skills roots: ${roots.map((root) => root.path).join(", ")}`)
  }
  return settings
})
