/**
 * The command line: `serve` (default), `instructions`, `validate`, `list`. Parsing uses Node's own
 * `util.parseArgs` (strict: an unknown option is a usage error, exit code 2).
 * The one-shot commands print through `writeOut`; the server's stdout is JSON-RPC only.
 */
import { parseArgs } from "node:util"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Schema from "effect/Schema"
import { Catalog } from "./catalog/Catalog.js"
import { UsageError } from "./Errors.js"
import { SkillFiles } from "./files/SkillFiles.js"
import { usageGuide } from "./instructions.js"
import { appLayer, lintLayer, servicesLayer } from "./Live.js"
import { StderrJsonLogging, StderrTextLogging, stderrTextLogger, writeStderr } from "./Logging.js"
import { skillResourceUri } from "./mcp/resources.js"
import { serve } from "./mcp/Serve.js"
import { catalogReport, formatCatalogReport } from "./report/CatalogReport.js"
import { formatLintReport, Lint, LintReport } from "./report/Lint.js"
import type { SettingsInput } from "./Settings.js"
import { ENV_INCLUDE_DOT_FOLDERS, ENV_SKILLS_DIR, Settings } from "./Settings.js"
import { forTerminal } from "./Terminal.js"
import { VERSION } from "./version.js"

export const COMMANDS = ["serve", "instructions", "validate", "list"] as const
export type Command = (typeof COMMANDS)[number]

interface OptionSpec {
  readonly type: "string" | "boolean"
  readonly multiple?: boolean
  readonly short?: string
  readonly value?: string
  readonly env?: string
  readonly help: string
  readonly commands: ReadonlyArray<Command>
}

const serving: ReadonlyArray<Command> = ["serve"]
/** Options that decide which skills are found: the one-shot commands see what the server sees. */
const discovering: ReadonlyArray<Command> = ["serve", "validate", "list"]

/** Every option: its parsing, its help line, the commands that accept it. */
export const OPTIONS = {
  "skills-dir": {
    type: "string",
    multiple: true,
    short: "d",
    value: "DIR",
    env: ENV_SKILLS_DIR,
    help: "A skills folder (repeatable; positional folders work too), or a skill's SKILL.md for that one skill. First folder wins on duplicate ids.",
    commands: discovering,
  },
  "include-dot-folders": {
    type: "boolean",
    env: ENV_INCLUDE_DOT_FOLDERS,
    help: "Search dot-folders for skills too (e.g. .curated/, .system/); .git and node_modules are always skipped.",
    commands: discovering,
  },
  "max-file-bytes": {
    type: "string",
    value: "N",
    env: "SKILLS_MCP_MAX_FILE_BYTES",
    help: "Largest file returned by read_skill_file and get_skill (default 1048576).",
    commands: discovering,
  },
  "max-depth": {
    type: "string",
    value: "N",
    env: "SKILLS_MCP_MAX_DEPTH",
    help: "How many folder levels below a root a skill may sit (default 4).",
    commands: discovering,
  },
  "max-skills": {
    type: "string",
    value: "N",
    env: "SKILLS_MCP_MAX_SKILLS",
    help: "Most skills indexed; the rest are logged and left out (default 100000).",
    commands: ["serve", "list"],
  },
  "refresh-ms": {
    type: "string",
    value: "MS",
    env: "SKILLS_MCP_REFRESH_MS",
    help: "Re-check the skills folders for changes at most this often, on requests (default 500).",
    commands: serving,
  },
  "catalog-budget": {
    type: "string",
    value: "CHARS",
    env: "SKILLS_MCP_CATALOG_BUDGET",
    help: "Most characters of the instructions and of the tools/list answer, <available_skills> catalog included (0: no catalog), and of skill://prompt-xml (default 8000). The next two options set the first two on their own.",
    commands: serving,
  },
  "instructions-budget": {
    type: "string",
    value: "CHARS",
    env: "SKILLS_MCP_INSTRUCTIONS_BUDGET",
    help: "Most characters of the instructions, catalog included; 0 for no catalog there (default: --catalog-budget).",
    commands: serving,
  },
  "tools-budget": {
    type: "string",
    value: "CHARS",
    env: "SKILLS_MCP_TOOLS_BUDGET",
    help: "Most characters of the tools/list answer, catalog included; 0 for no catalog there (default: --catalog-budget).",
    commands: serving,
  },
  "page-size": {
    type: "string",
    value: "N",
    env: "SKILLS_MCP_PAGE_SIZE",
    help: "Page size: list_skills' default and largest page (default 100), and the page of skills/list, resources/list, prompts/list and directory reads (default 200). A value sets both.",
    commands: serving,
  },
  watch: {
    type: "boolean",
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
    type: "string",
    value: "WHERE",
    env: "SKILLS_MCP_CATALOG",
    help: "Where the <available_skills> catalog goes: instructions, tool, both (default) or none.",
    commands: serving,
  },
  tools: {
    type: "string",
    value: "WHEN",
    env: "SKILLS_MCP_TOOLS",
    help: "List the skill tools always (default), never, or auto (not to clients with the Skills extension).",
    commands: serving,
  },
  allow: {
    type: "string",
    multiple: true,
    value: "GLOB",
    env: "SKILLS_MCP_ALLOW",
    help: "Serve only skills whose id matches (repeatable or comma-separated, e.g. 'pdf-*').",
    commands: discovering,
  },
  deny: {
    type: "string",
    multiple: true,
    value: "GLOB",
    env: "SKILLS_MCP_DENY",
    help: "Never serve skills whose id matches (repeatable or comma-separated); wins over --allow.",
    commands: discovering,
  },
  json: {
    type: "boolean",
    help: "validate, list: print one JSON document (schema in the README) instead of text.",
    commands: ["validate", "list"],
  },
  strict: {
    type: "boolean",
    help: "validate: treat warnings as errors (exit code 1 on any warning).",
    commands: ["validate"],
  },
  "no-xml": {
    type: "boolean",
    help: "instructions: print the guide without the <skills-mcp-instructions> wrapper.",
    commands: ["instructions"],
  },
  help: { type: "boolean", short: "h", help: "Show this help.", commands: [...COMMANDS] },
  version: { type: "boolean", short: "v", help: "Show the version.", commands: [...COMMANDS] },
} as const satisfies Record<string, OptionSpec>

type OptionName = keyof typeof OPTIONS

export const helpText = (): string => {
  const flags = Object.entries(OPTIONS as Record<OptionName, OptionSpec>).map(
    ([name, spec]) =>
      [
        `${spec.short ? `-${spec.short}, ` : "    "}--${name}${spec.value ? ` ${spec.value}` : ""}`,
        spec,
      ] as const,
  )
  const width = Math.max(...flags.map(([flag]) => flag.length))
  const lines = flags.map(([flag, spec]) => {
    const env = spec.env ? ` [env ${spec.env}]` : ""
    return `  ${flag.padEnd(width)}  ${spec.help}${env}`
  })
  return `skills-mcp ${VERSION}: serve Agent Skills (SKILL.md folders) to any MCP client over stdio.

Usage:
  skills-mcp [serve] [options] [DIR...]   Run the MCP server on stdio (the default command).
  skills-mcp instructions [--no-xml]      Print the usage guide for AGENTS.md / CLAUDE.md.
  skills-mcp validate [options] [DIR...]  Check skills against the Agent Skills specification.
                                          Exit code 0: no errors, 1: errors (--strict: or
                                          warnings), 2: usage error.
  skills-mcp list [options] [DIR...]      Show the skills the server would serve (id, name, URI,
                                          root) and the ones it skips or shadows, with reasons.

With no folder given (and no ${ENV_SKILLS_DIR}), skills are read from ./.agents/skills,
./.claude/skills, ~/.agents/skills and ~/.claude/skills, whichever exist. A path to a
SKILL.md instead of a folder means that one skill (e.g. skills-mcp validate pdf/SKILL.md).
Dot-folders are skipped unless --include-dot-folders is given; a folder that serves no
skill is reported, with the dot-folders in it that hold skills.

Options:
${lines.join("\n")}
`
}

export interface ParsedCommandLine {
  readonly command: Command
  readonly help: boolean
  readonly version: boolean
  readonly xml: boolean
  /** validate, list: a JSON document instead of text. */
  readonly json: boolean
  /** validate: warnings count as errors. */
  readonly strict: boolean
  readonly settings: SettingsInput
}

const HELP_HINT = "Run 'skills-mcp --help' for usage."

const usageError = (reason: string) => new UsageError({ reason: `${reason}\n${HELP_HINT}` })

/**
 * parseArgs' message, or ours for an unknown option: Node's ends "as in '-- "--x"" with its
 * first quote unclosed.
 */
const parseProblem = (error: unknown): string => {
  const message = error instanceof Error ? error.message : String(error)
  const unknown = /^Unknown option '(.*?)'\. /s.exec(message)
  return unknown === null
    ? message
    : `Unknown option '${unknown[1]}'. To pass a folder whose name starts with '-', put it after '--', as in '-- ${unknown[1]}'.`
}

/** A usage error for a terminal: the reason made safe (it quotes what was typed), then the hint. */
const usageText = (message: string): string =>
  message.endsWith(`\n${HELP_HINT}`)
    ? `${forTerminal(message.slice(0, -HELP_HINT.length - 1))}\n${HELP_HINT}`
    : forTerminal(message)

/** Parses argv (without node and the script) into a command and its inputs. */
export const parseCommandLine = (argv: ReadonlyArray<string>): Effect.Effect<ParsedCommandLine, UsageError> =>
  Effect.gen(function* () {
    const parsed = yield* Effect.try({
      try: () =>
        parseArgs({
          args: [...argv],
          options: OPTIONS,
          allowPositionals: true,
          strict: true,
        }),
      catch: (error) => usageError(parseProblem(error)),
    })
    const [first, ...rest] = parsed.positionals
    const isCommand = (value: string | undefined): value is Command =>
      COMMANDS.some((command) => command === value)
    const command: Command = isCommand(first) ? first : "serve"
    const positionals = isCommand(first) ? rest : parsed.positionals
    for (const name of Object.keys(parsed.values)) {
      const spec: OptionSpec | undefined = (OPTIONS as Record<string, OptionSpec>)[name]
      if (spec !== undefined && !spec.commands.includes(command)) {
        return yield* usageError(`Option --${name} does not apply to '${command}'.`)
      }
    }
    if (parsed.values.watch === true && parsed.values["no-watch"] === true) {
      return yield* usageError("Options --watch and --no-watch contradict each other.")
    }
    if (command === "instructions" && positionals.length > 0) {
      return yield* usageError(`'instructions' takes no folders (got '${positionals[0]}').`)
    }
    const values = parsed.values
    const skillsDirs = [...(values["skills-dir"] ?? []), ...positionals]
    const settings: SettingsInput = {
      ...(skillsDirs.length > 0 ? { skillsDirs } : {}),
      ...(values["max-file-bytes"] === undefined ? {} : { maxFileBytes: values["max-file-bytes"] }),
      ...(values["max-depth"] === undefined ? {} : { maxDepth: values["max-depth"] }),
      ...(values["max-skills"] === undefined ? {} : { maxSkills: values["max-skills"] }),
      ...(values["refresh-ms"] === undefined ? {} : { refreshMs: values["refresh-ms"] }),
      ...(values["catalog-budget"] === undefined ? {} : { catalogBudget: values["catalog-budget"] }),
      ...(values["instructions-budget"] === undefined
        ? {}
        : { instructionsBudget: values["instructions-budget"] }),
      ...(values["tools-budget"] === undefined ? {} : { toolsBudget: values["tools-budget"] }),
      ...(values["page-size"] === undefined ? {} : { pageSize: values["page-size"] }),
      ...(values["no-watch"] === true ? { watch: false } : values.watch === true ? { watch: true } : {}),
      ...(values.catalog === undefined ? {} : { catalog: values.catalog }),
      ...(values.tools === undefined ? {} : { tools: values.tools }),
      ...(values.allow === undefined ? {} : { allow: values.allow }),
      ...(values.deny === undefined ? {} : { deny: values.deny }),
      ...(values["include-dot-folders"] === true ? { includeDotFolders: true } : {}),
    }
    return {
      command,
      help: values.help === true,
      version: values.version === true,
      xml: values["no-xml"] !== true,
      json: values.json === true,
      strict: values.strict === true,
      settings,
    }
  })

/** Output of the one-shot commands: the only writer to stdout outside the MCP transport. */
export const writeOut = (text: string) =>
  Effect.async<void>((resume) => {
    process.stdout.write(text, () => resume(Effect.void))
  })

const writeErr = (text: string) => Effect.sync(() => writeStderr(text.endsWith("\n") ? text : `${text}\n`))

export const EXIT_OK = 0
export const EXIT_FAILURE = 1
export const EXIT_USAGE = 2

const serveCommand = (settings: SettingsInput) =>
  Effect.scoped(serve({ input: process.stdin, output: process.stdout })).pipe(
    Effect.provide(appLayer(Settings.fromInput(settings))),
    Effect.as(EXIT_OK),
    Effect.provide(StderrJsonLogging),
  )

/** `validate`: every rule over every skill found; exit code 1 when any error (or, --strict, warning). */
const validateCommand = (line: ParsedCommandLine) =>
  Effect.gen(function* () {
    const lint = yield* Lint
    const report = yield* lint.run({ strict: line.strict })
    if (line.json) {
      const document = yield* Schema.encode(LintReport)(report).pipe(Effect.orDie)
      yield* writeOut(`${JSON.stringify(document, null, 2)}\n`)
    } else {
      yield* writeOut(formatLintReport(report, process.cwd()))
    }
    return report.ok ? EXIT_OK : EXIT_FAILURE
  }).pipe(Effect.provide(lintLayer(Settings.fromInput(line.settings))), Effect.provide(StderrTextLogging))

/** `list`: the catalog the server would build, and what it leaves out. */
const listCommand = (line: ParsedCommandLine) =>
  Effect.gen(function* () {
    const catalog = yield* Catalog
    const settings = yield* Settings
    const files = yield* SkillFiles
    const snapshot = yield* catalog.peek
    // What the server finds only when a host lists a skill: checked here for every one.
    yield* Effect.forEach(snapshot.published, (skill) => Effect.ignore(files.publicationProblem(skill)), {
      concurrency: 8,
      discard: true,
    })
    const report = catalogReport(snapshot, (skill) => skillResourceUri(snapshot, skill), files.leftOut())
    yield* writeOut(
      line.json
        ? `${JSON.stringify({ version: 1, roots: settings.roots.map((root) => root.path), ...report }, null, 2)}\n`
        : formatCatalogReport(report, process.cwd()),
    )
    return EXIT_OK
  }).pipe(
    Effect.provide(servicesLayer(Settings.fromInput(line.settings))),
    // The catalog's own warnings (skipped, shadowed skills) are in the listing itself.
    Effect.provide(
      Layer.mergeAll(
        Logger.replace(Logger.defaultLogger, stderrTextLogger),
        Logger.minimumLogLevel(LogLevel.Error),
      ),
    ),
  )

/** Runs one command line; resolves to the process exit code. Errors are reported on stderr. */
export const run = (argv: ReadonlyArray<string>): Effect.Effect<number> =>
  Effect.gen(function* () {
    const line = yield* parseCommandLine(argv)
    if (line.help) {
      yield* writeOut(helpText())
      return EXIT_OK
    }
    if (line.version) {
      yield* writeOut(`${VERSION}\n`)
      return EXIT_OK
    }
    switch (line.command) {
      case "instructions":
        yield* writeOut(`${usageGuide({ xml: line.xml })}\n`)
        return EXIT_OK
      case "serve":
        return yield* serveCommand(line.settings)
      case "validate":
        return yield* validateCommand(line)
      case "list":
        return yield* listCommand(line)
    }
  }).pipe(
    Effect.catchTag("UsageError", (error) =>
      Effect.as(writeErr(`skills-mcp: ${usageText(error.message)}`), EXIT_USAGE),
    ),
    Effect.catchAllCause((cause) =>
      Effect.as(
        Effect.logError("skills-mcp stopped on an unexpected error", cause).pipe(
          Effect.provide(StderrTextLogging),
        ),
        EXIT_FAILURE,
      ),
    ),
  )
