/**
 * The command line: `serve` (default), `instructions`, `validate`, `list`. Parsing uses Node's own
 * `util.parseArgs` (strict: an unknown option is a usage error, exit code 2).
 * The one-shot commands print through `writeOut`; the server's stdout is JSON-RPC only.
 */
import { Console } from "node:console"
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
import { serveHttp } from "./mcp/Http.js"
import { skillResourceUri } from "./mcp/resources.js"
import { serve } from "./mcp/Serve.js"
import type { Command, OptionSpec, SettingsInput } from "./Options.js"
import { COMMANDS, resolveSettings, SETTING_OPTIONS, settingsFromInput } from "./Options.js"
import { ENV_SKILLS_DIR } from "./Roots.js"
import { catalogReport, formatCatalogReport } from "./report/CatalogReport.js"
import { formatLintReport, Lint, LintReport } from "./report/Lint.js"
import { Settings } from "./Settings.js"
import { forTerminal } from "./Terminal.js"
import { VERSION } from "./version.js"

/** Every option: the settings' own, then those of the commands themselves. */
export const OPTIONS = {
  ...SETTING_OPTIONS,
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

const specs: Readonly<Record<string, OptionSpec | undefined>> = OPTIONS

export const helpText = (): string => {
  const flags = Object.entries<OptionSpec>(OPTIONS).map(
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
  return `skills-mcp ${VERSION}: serve Agent Skills (SKILL.md folders) to any MCP client over stdio or HTTP.

Usage:
  skills-mcp [serve] [options] [DIR...]   Run the MCP server on stdio (the default command), or
                                          with --http [HOST:]PORT over Streamable HTTP at /mcp.
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
          tokens: true,
        }),
      catch: (error) => usageError(parseProblem(error)),
    })
    const [first, ...rest] = parsed.positionals
    const isCommand = (value: string | undefined): value is Command =>
      COMMANDS.some((command) => command === value)
    const command: Command = isCommand(first) ? first : "serve"
    const positionals = isCommand(first) ? rest : parsed.positionals
    for (const name of Object.keys(parsed.values)) {
      const spec = specs[name]
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
    // Each --skills-git keeps its place among the --skills-dir folders (priority order).
    const skillsGit: Array<{ spec: string; after: number }> = []
    let dirsBefore = 0
    for (const token of parsed.tokens) {
      if (token.kind !== "option" || token.value === undefined) continue
      if (token.name === "skills-dir") dirsBefore++
      if (token.name === "skills-git") skillsGit.push({ spec: token.value, after: dirsBefore })
    }
    const {
      "skills-dir": dirs = [],
      "skills-git": _git,
      json,
      strict,
      "no-xml": noXml,
      help,
      version,
      ...settings
    } = parsed.values
    const skillsDirs = [...dirs, ...positionals]
    return {
      command,
      help: help === true,
      version: version === true,
      xml: noXml !== true,
      json: json === true,
      strict: strict === true,
      settings: {
        ...settings,
        ...(skillsDirs.length > 0 ? { skillsDirs } : {}),
        ...(skillsGit.length > 0 ? { skillsGit } : {}),
      },
    }
  })

/** Output of the one-shot commands: the only writer to stdout outside the MCP transport. */
const writeOut = (text: string) =>
  Effect.async<void>((resume) => {
    process.stdout.write(text, () => resume(Effect.void))
  })

const writeErr = (text: string) => Effect.sync(() => writeStderr(text.endsWith("\n") ? text : `${text}\n`))

const EXIT_OK = 0
const EXIT_FAILURE = 1
const EXIT_USAGE = 2

/** `serve`: over stdio, or with --http over Streamable HTTP (src/mcp/Http.ts). */
const serveCommand = (input: SettingsInput) =>
  Effect.gen(function* () {
    const settings = yield* resolveSettings(input)
    if (settings.http !== undefined) {
      // stdout stays empty over HTTP: what a dependency prints through `console` (the SDK's
      // HTTP adapter reports a client's aborted stream that way) goes to stderr.
      globalThis.console = new Console({ stdout: process.stderr, stderr: process.stderr })
      return yield* serveHttp(settings, settings.http)
    }
    return yield* Effect.scoped(serve({ input: process.stdin, output: process.stdout })).pipe(
      Effect.provide(appLayer(Layer.succeed(Settings, settings))),
    )
  }).pipe(Effect.as(EXIT_OK), Effect.provide(StderrJsonLogging))

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
  }).pipe(Effect.provide(lintLayer(settingsFromInput(line.settings))), Effect.provide(StderrTextLogging))

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
        ? `${JSON.stringify({ version: 1, roots: settings.roots.map((root) => root.git?.display ?? root.path), ...report }, null, 2)}\n`
        : formatCatalogReport(report, process.cwd()),
    )
    return EXIT_OK
  }).pipe(
    Effect.provide(servicesLayer(settingsFromInput(line.settings))),
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
