/**
 * Settings: what the server and the commands run with (roots, limits, budgets, HTTP), as one
 * value, the `Settings` service, with its defaults. How flags and environment variables make it
 * is src/Options.ts.
 */
import { createHash } from "node:crypto"
import * as net from "node:net"
import * as path from "node:path"
import * as Context from "effect/Context"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import type { GitSpec } from "./GitSpec.js"

export interface Root {
  /** Absolute path as configured (`~` expanded, resolved against the working directory). */
  readonly path: string
  /** Given by the user (flag, positional or SKILLS_DIR) rather than a conventional default. */
  readonly explicit: boolean
  /**
   * A git source (`--skills-git`): `path` is then its folder in the cache, and discovery reads
   * the checkout of its current commit instead (src/sources/Git.ts).
   */
  readonly git?: GitSpec
  /** Set by discovery on a git source's root: the commit its folder is a checkout of. */
  readonly commit?: string
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
  /**
   * Where skills' file lists and digests are kept between runs (src/files/ManifestStore.ts);
   * undefined: nowhere. The command line uses the user's cache folder.
   */
  readonly manifestCache?: string | undefined
  /** Serve MCP over Streamable HTTP on this address (src/mcp/Http.ts); undefined: over stdio. */
  readonly http?: Listen | undefined
  /**
   * Over HTTP, every MCP request must carry a bearer token this file accepts (src/mcp/Auth.ts);
   * an absolute path. Undefined: no authentication.
   */
  readonly auth?: string | undefined
  /** Serve over HTTP on a non-loopback address without authentication, on purpose. */
  readonly noAuth: boolean
  /** Host names (`name` or `name:port`) accepted in Host and Origin headers besides the built-in ones. */
  readonly allowedHosts: ReadonlyArray<string>
  /** How often (seconds) git sources that follow a branch fetch it again. */
  readonly gitPollSeconds: number
  /**
   * Where git sources keep their clones and checkouts (`$XDG_CACHE_HOME/skills-mcp/git`);
   * undefined: `~/.cache/skills-mcp/git`.
   */
  readonly gitCache?: string | undefined
}

/** Where the HTTP server listens: a host name or IP address (IPv6 without brackets) and a port (0: any free one). */
export interface Listen {
  readonly host: string
  readonly port: number
}

/** The default host of `--http PORT`: only this machine can connect. */
export const DEFAULT_HTTP_HOST = "127.0.0.1"

/**
 * `--http`'s value: `PORT`, `HOST:PORT` or `[IPv6]:PORT`; a reason when it is none of them.
 * HOST defaults to 127.0.0.1.
 */
export const parseListen = (raw: string): Either.Either<Listen, string> => {
  const text = raw.trim()
  const match = /^(?:(?:\[([0-9A-Fa-f:.]+)\]|([^\s:[\]/]+)):)?(\d{1,5})$/.exec(text)
  const port = match === null ? Number.NaN : Number(match[3])
  if (match === null || !(port <= 65_535))
    return Either.left("expected PORT, HOST:PORT or [IPv6]:PORT with a port from 0 to 65535")
  const host = match[1] ?? match[2] ?? DEFAULT_HTTP_HOST
  if (match[1] !== undefined && net.isIPv6(host) === false)
    return Either.left(`'${host}' is not an IPv6 address`)
  return Either.right({ host, port })
}

/** An address only this machine can reach: localhost, 127.0.0.0/8, ::1. */
export const isLoopback = (host: string): boolean => {
  const name = host.toLowerCase()
  return name === "localhost" || name === "::1" || (net.isIPv4(name) && name.startsWith("127."))
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
  noAuth: false,
  allowedHosts: [],
  gitPollSeconds: 60,
}

/** The budget of the `instructions` or of the `tools/list` answer: its own, else the catalog's. */
export const budgetOf = (settings: SettingsShape, answer: "instructions" | "tools"): number =>
  (answer === "instructions" ? settings.instructionsBudget : settings.toolsBudget) ?? settings.catalogBudget

/** The folder of a git source in the cache: one per repository URL (its clone is shared). */
export const gitSourceFolder = (gitCache: string, url: string): string =>
  path.join(gitCache, createHash("sha256").update(url).digest("hex").slice(0, 24))
