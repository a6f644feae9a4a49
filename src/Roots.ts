/**
 * Roots: where the skills come from, as `resolveSettings` (src/Options.ts) finds them: folders
 * given (a `SKILL.md` given means its folder), `SKILLS_DIR`, git sources (`--skills-git`,
 * `SKILLS_MCP_GIT`) in their places among the folders, the conventional folders that exist; and
 * the user's cache folders. Environment variables are read through Effect `Config`.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import { UsageError } from "./Errors.js"
import type { GitSpec } from "./GitSpec.js"
import { parseGitSpec } from "./GitSpec.js"

export const ENV_SKILLS_DIR = "SKILLS_DIR"
export const ENV_SKILLS_GIT = "SKILLS_MCP_GIT"

/** An environment variable, if set. */
export const optionalEnv = (name: string) =>
  Config.option(Config.string(name)).pipe(Effect.orElseSucceed(() => Option.none<string>()))

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
export const kindOf = (target: string) =>
  Effect.sync((): "folder" | "file" | "missing" => {
    try {
      return fs.statSync(target).isDirectory() ? "folder" : "file"
    } catch {
      return "missing"
    }
  })

export const isDirectory = (dir: string) => Effect.map(kindOf(dir), (kind) => kind === "folder")

/** The file that makes a folder a skill: `validate path/to/SKILL.md` checks its folder. */
const SKILL_FILE = "SKILL.md"

/**
 * The root an explicit path gives: a folder as it is, a SKILL.md file its skill folder (that
 * one skill); anything else is a usage error that says what is there.
 */
export const explicitRoot = Effect.fn("Roots.explicitRoot")(function* (
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
 * The folder that keeps skills' manifests between runs: `$XDG_CACHE_HOME/skills-mcp/manifests`
 * (an empty or relative XDG_CACHE_HOME is ignored, as the XDG spec says) or
 * `~/.cache/skills-mcp/manifests`, as for Node's compile cache (src/launch.ts);
 * `SKILLS_MCP_MANIFEST_CACHE=0` turns it off.
 */
export const manifestCacheFolder = (home: string) =>
  Effect.gen(function* () {
    if (Option.getOrUndefined(yield* optionalEnv("SKILLS_MCP_MANIFEST_CACHE")) === "0") return undefined
    return path.join(yield* cacheHome(home), "skills-mcp", "manifests")
  })

/** The user's cache folder: an absolute XDG_CACHE_HOME, else `~/.cache`. */
export const cacheHome = (home: string) =>
  Effect.map(optionalEnv("XDG_CACHE_HOME"), (xdg) =>
    Option.isSome(xdg) && path.isAbsolute(xdg.value) ? xdg.value : path.join(home, ".cache"),
  )

/**
 * The git sources: --skills-git's values in their places among the folders, else
 * SKILLS_MCP_GIT's (split on `,` and white space: URLs hold `:`), after the folders.
 */
export const gitSources = Effect.fn("Roots.gitSources")(function* (
  skillsGit: ReadonlyArray<{ readonly spec: string; readonly after: number }> | undefined,
  dirCount: number,
) {
  const fromEnv = Option.getOrUndefined(yield* optionalEnv(ENV_SKILLS_GIT))
  const given =
    skillsGit !== undefined && skillsGit.length > 0
      ? skillsGit.map((entry) => ({ ...entry, source: "option --skills-git" }))
      : (fromEnv ?? "")
          .split(/[,\s]+/)
          .filter((part) => part !== "")
          .map((spec) => ({ spec, after: dirCount, source: `environment variable ${ENV_SKILLS_GIT}` }))
  const sources: Array<{ readonly spec: GitSpec; readonly after: number }> = []
  for (const { spec, after, source } of given) {
    const parsed = parseGitSpec(spec)
    if (Either.isLeft(parsed)) {
      // Never repeat a value that may hold a password.
      const shown = Either.isLeft(parsed) && parsed.left.includes("password") ? "" : ` '${spec}'`
      return yield* new UsageError({ reason: `Invalid git source${shown} in ${source}: ${parsed.left}.` })
    }
    sources.push({ spec: parsed.right, after })
  }
  return sources
})
