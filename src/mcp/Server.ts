/**
 * The MCP server over stdio: the SDK's low-level `Server` with one dispatch table whose
 * handlers decode their params with Effect Schema and run as Effects (src/mcp/Run.ts).
 * Serves tools, resources, prompts, completion, logging and the MCP Skills extension; keeps
 * the catalog fresh from the watcher and tells the client what changed. The process serves
 * until stdin ends (or a signal interrupts it), answers the requests still in flight, closes.
 */
import * as path from "node:path"
import type { Readable, Writable } from "node:stream"
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js"
import type {
  JSONRPCMessage,
  JSONRPCRequest,
  LoggingLevel,
  ServerCapabilities,
  ServerNotification,
  ServerRequest,
} from "@modelcontextprotocol/sdk/types.js"
import { ErrorCode } from "@modelcontextprotocol/sdk/types.js"
import type { jsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/types.js"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Logger from "effect/Logger"
import type * as LogLevel from "effect/LogLevel"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type { AuditRecord } from "../AuditLog.js"
import { AuditLog } from "../AuditLog.js"
import { Catalog } from "../catalog/Catalog.js"
import type { Snapshot } from "../catalog/Snapshot.js"
import { MANIFEST_SEGMENT } from "../catalog/Uris.js"
import { watchCatalog } from "../catalog/Watching.js"
import type { SkillError } from "../Errors.js"
import { echo, InvalidArgument } from "../Errors.js"
import { SkillFiles } from "../files/SkillFiles.js"
import type { Loader } from "../instructions.js"
import { hasCatalogRoom, MIN_CATALOG, usageGuide, withCatalog } from "../instructions.js"
import { writeStderr } from "../Logging.js"
import { fingerprintOf, statOrNull } from "../platform/Paths.js"
import { budgetOf, Settings } from "../Settings.js"
import { SKILL_FILE } from "../skills/Discovery.js"
import { VERSION } from "../version.js"
import { CompleteParams, makeCompleter } from "./completion.js"
import { GetPromptParams, getPrompt, ListPromptsParams, listPrompts } from "./prompts.js"
import { decodeParams, makeRunner, outcomeOf, ProtocolError } from "./Run.js"
import {
  catalogEntriesWithUris,
  DirectoryReadParams,
  diagnosticsText,
  ListResourcesParams,
  listResources,
  readDirectory,
  readResource,
  resolveUri,
  resourceTemplates,
  UriParams,
} from "./resources.js"
import {
  GetSkillParams,
  getSkill,
  ListSkillsParams,
  listSkills,
  makeLeftOutLog,
  SKILLS_EXTENSION,
} from "./skills.js"
import { LineTransport } from "./Transport.js"
import { callTool, listedCatalog, listedSize, toolDefinitions } from "./tools.js"

export const SERVER_NAME = "skills-mcp"

/**
 * After stdin ends, every request already read is still answered and its answer delivered, and
 * an idle server exits at once. While the client keeps taking answers the server keeps going;
 * once none has been taken for this long (requests stuck on a disk that stopped answering, or
 * a client that stopped reading), it exits without them and says so on stderr.
 */
const DRAIN_STALL_MS = 1_000
/**
 * Subscriptions one client may hold: each may add a watch, and the system's limit on watches is
 * shared by every process of the user.
 */
export const MAX_SUBSCRIPTIONS = 256
/** Without a watcher, subscribed files are re-checked this often (only while there are any). */
const SUBSCRIPTION_POLL = "2 seconds"

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>
type Handler = (params: unknown, extra: Extra) => Promise<Record<string, unknown>>

const CallToolParams = Schema.Struct({
  name: Schema.String,
  arguments: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
})
const ListParams = Schema.Struct({ cursor: Schema.optional(Schema.String) })
const LOGGING_LEVELS = [
  "debug",
  "info",
  "notice",
  "warning",
  "error",
  "critical",
  "alert",
  "emergency",
] as const
const SetLevelParams = Schema.Struct({ level: Schema.Literal(...LOGGING_LEVELS) })

const params =
  <A, I>(schema: Schema.Schema<A, I>, method: string) =>
  (input: unknown): A =>
    Either.getOrThrowWith(decodeParams(schema, method)(input), (error) => error)

export type ServerServices = Catalog | SkillFiles | AuditLog | Settings

/** MCP level of an Effect log level. */
const levelOf = (level: LogLevel.LogLevel): LoggingLevel =>
  level._tag === "Fatal"
    ? "critical"
    : level._tag === "Error"
      ? "error"
      : level._tag === "Warning"
        ? "warning"
        : level._tag === "Info"
          ? "info"
          : "debug"

const severity = (level: LoggingLevel) => LOGGING_LEVELS.indexOf(level)

/**
 * The text the server gives at initialize: the guide, and the catalog when placed there. For
 * a client shown no tools (`loader: "host"`), the guide and catalog are about loading skills
 * through the Skills extension, with each skill's URI.
 */
export const serverInstructions = (
  snapshot: Snapshot,
  settings: Settings["Type"],
  loader: Loader,
): string => {
  const guide = usageGuide({ xml: false, loader })
  if (!catalogIn(settings, "instructions")) return guide
  const entries = loader === "host" ? catalogEntriesWithUris(snapshot) : snapshot.skills
  return withCatalog(guide, entries, budgetOf(settings, "instructions"), loader)
}

/** Whether the catalog is placed in the `instructions` or in `tools/list` (`--catalog`). */
const catalogIn = (settings: Settings["Type"], answer: "instructions" | "tools") =>
  settings.catalogPlacement === "both" ||
  settings.catalogPlacement === (answer === "instructions" ? "instructions" : "tool")

/**
 * What to tell the operator of a budget that leaves no room for the catalog it was meant to
 * hold: the text it bounds (the usage guide, the tool definitions) takes the room, or more than
 * the budget, and is then sent whole, since cut short it would mislead. Worked out from the
 * fixed texts' sizes, without rendering a catalog before `initialize` is answered, except for a
 * `tools/list` budget within a few hundred characters of its definitions.
 */
export const budgetWarnings = (snapshot: Snapshot, settings: Settings["Type"]): Array<string> => {
  const warnings: Array<string> = []
  const noRoom = (answer: string, budget: number, fixed: string, size: number, flag: string) =>
    `The ${answer} budget of ${budget} characters (${flag} or --catalog-budget, or their environment variables) leaves no room for a catalog: ${fixed} alone takes ${size} characters${size > budget ? ", more than the budget, and is sent whole" : ""}.`
  const instructionsBudget = budgetOf(settings, "instructions")
  if (catalogIn(settings, "instructions") && instructionsBudget > 0) {
    const loaders: ReadonlyArray<Loader> =
      settings.tools === "never" ? ["host"] : settings.tools === "auto" ? ["tools", "host"] : ["tools"]
    for (const loader of loaders) {
      const guide = usageGuide({ xml: false, loader }).length
      if (hasCatalogRoom(guide, instructionsBudget)) continue
      const which =
        settings.tools === "auto" ? ` for clients shown ${loader === "host" ? "no tools" : "tools"}` : ""
      warnings.push(
        noRoom("instructions", instructionsBudget, `the usage guide${which}`, guide, "--instructions-budget"),
      )
    }
  }
  const toolsBudget = budgetOf(settings, "tools")
  if (catalogIn(settings, "tools") && settings.tools !== "never" && toolsBudget > 0) {
    const bare = listedSize(toolDefinitions(snapshot, 0))
    const near = toolsBudget < bare + 4 * MIN_CATALOG
    if (near && !listedCatalog(toolDefinitions(snapshot, toolsBudget))) {
      warnings.push(noRoom("tools/list", toolsBudget, "the tool definitions", bare, "--tools-budget"))
    }
  }
  return warnings
}

/** An answer to `initialize` (the only result that names a protocol version and the server). */
const InitializeAnswer = Schema.Struct({
  jsonrpc: Schema.Literal("2.0"),
  id: Schema.Union(Schema.String, Schema.Number),
  result: Schema.Struct(
    {
      protocolVersion: Schema.String,
      serverInfo: Schema.Unknown,
      instructions: Schema.optional(Schema.String),
    },
    { key: Schema.String, value: Schema.Unknown },
  ),
})
const isInitializeAnswer = Schema.is(InitializeAnswer)

export const capabilities = (settings: Settings["Type"]): ServerCapabilities => ({
  ...(settings.tools === "never" ? {} : { tools: { listChanged: true } }),
  resources: { subscribe: true, listChanged: true },
  prompts: { listChanged: true },
  completions: {},
  logging: {},
  extensions: { [SKILLS_EXTENSION]: { directoryRead: true } },
})

/**
 * The SDK validates results of requests a server sends to the client (elicitation) with a
 * JSON Schema validator, Ajv by default, built at start-up. This server sends none, so it
 * skips building Ajv; were one sent, its result would be refused rather than trusted.
 */
const noValidation: jsonSchemaValidator = {
  getValidator: () => () => ({
    valid: false,
    data: undefined,
    errorMessage: "this server validates no client results",
  }),
}

/** Builds the SDK server for one connection, with the hooks `serve` needs. */
export const makeServer = (
  clientLog: ClientLog = { level: "warning", server: undefined },
  hooks: ServerHooks = { subscribed: Effect.void },
) =>
  Effect.gen(function* () {
    const settings = yield* Settings
    const catalog = yield* Catalog
    const runner = yield* makeRunner<ServerServices>()
    const snapshot = yield* catalog.snapshot
    for (const warning of budgetWarnings(snapshot, settings)) yield* Effect.logWarning(warning)

    const server = new Server(
      { name: SERVER_NAME, version: VERSION },
      {
        capabilities: capabilities(settings),
        instructions: serverInstructions(snapshot, settings, settings.tools === "never" ? "host" : "tools"),
        jsonSchemaValidator: noValidation,
      },
    )
    const files = yield* SkillFiles
    const audit = yield* AuditLog
    /** The audit log of this connection: every record names the client (from `initialize`). */
    const clientAudit: AuditLog["Type"] = {
      record: (record: AuditRecord) => {
        const client = server.getClientVersion()?.name
        return audit.record(client === undefined ? record : { ...record, client: client.slice(0, 100) })
      },
    }
    /** Runs a read of skill content, recorded in the audit log with its URI and outcome. */
    const audited = <A, R>(method: string, uri: string, effect: Effect.Effect<A, SkillError, R>) =>
      Effect.suspend(() => {
        const started = performance.now()
        return Effect.onExit(effect, (exit) =>
          clientAudit.record({
            tool: method,
            uri: uri.slice(0, 500),
            outcome: outcomeOf(exit),
            durationMs: Math.round((performance.now() - started) * 100) / 100,
          }),
        )
      })
    const complete = yield* makeCompleter((skill) =>
      files.list(skill, "").pipe(
        Effect.map((listing) => listing.entries.map((entry) => entry.path)),
        Effect.orElseSucceed(() => undefined),
      ),
    )
    const subscriptions = new Map<string, { signature: string; folders: ReadonlyArray<string> }>()
    const logLeftOut = makeLeftOutLog()

    /**
     * What a subscribed URI looks like now (its file's fingerprint, a manifest's digests, or
     * the catalog's version), and the folders to watch for it.
     */
    const observe = (uri: string) =>
      Effect.gen(function* () {
        const current = yield* catalog.peek
        const target = yield* resolveUri(current, uri)
        if (target._tag === "PromptXml") return { signature: `catalog ${current.version}`, folders: [] }
        if (target._tag === "Diagnostics") return { signature: diagnosticsText(current, files), folders: [] }
        if (target.rest.length === 1 && target.rest[0] === MANIFEST_SEGMENT) {
          const { files: listed } = yield* files.manifest(target.skill)
          const folders = new Set(
            listed.map((file) => path.join(target.skill.dir, path.posix.dirname(file.path))),
          )
          return { signature: JSON.stringify(listed), folders: [...folders] }
        }
        const relative = target.rest.length === 0 ? SKILL_FILE : target.rest.join("/")
        const resolved = yield* files.resolve(target.skill, relative)
        const info = yield* statOrNull(resolved.real)
        return {
          signature: info === null ? "missing" : JSON.stringify(fingerprintOf(info)),
          folders: [path.dirname(resolved.real)],
        }
      }).pipe(Effect.orElseSucceed(() => ({ signature: "gone", folders: [] })))

    const toolsHidden = () =>
      settings.tools === "never" ||
      (settings.tools === "auto" &&
        server.getClientCapabilities()?.extensions?.[SKILLS_EXTENSION] !== undefined)

    const handlers: Record<string, Handler> = {
      "tools/list": async (input, extra) => {
        params(ListParams, "tools/list")(input)
        if (toolsHidden()) return { tools: [] }
        const budget = catalogIn(settings, "tools") ? budgetOf(settings, "tools") : 0
        return runner.request(
          Effect.map(catalog.snapshot, (current) => ({
            tools: toolDefinitions(current, budget),
          })),
          extra.signal,
        )
      },
      "tools/call": async (input, extra) => {
        const { name, arguments: args } = params(CallToolParams, "tools/call")(input)
        return runner.tool(Effect.provideService(callTool(name, args), AuditLog, clientAudit), extra.signal)
      },
      "prompts/list": async (input, extra) =>
        runner.request(listPrompts(params(ListPromptsParams, "prompts/list")(input)), extra.signal),
      "prompts/get": async (input, extra) => {
        const request = params(GetPromptParams, "prompts/get")(input)
        const target = request.arguments?.name ?? ""
        return runner.request(
          audited(
            "prompts/get",
            target === "" ? request.name : `${request.name} ${target}`,
            getPrompt(request),
          ),
          extra.signal,
        )
      },
      "resources/list": async (input, extra) =>
        runner.request(listResources(params(ListResourcesParams, "resources/list")(input)), extra.signal),
      "resources/templates/list": async (input) => {
        params(ListParams, "resources/templates/list")(input)
        return { resourceTemplates: resourceTemplates() }
      },
      "resources/read": async (input, extra) => {
        const request = params(UriParams, "resources/read")(input)
        return runner.request(
          audited("resources/read", request.uri, readResource(request)),
          extra.signal,
          request.uri,
        )
      },
      "resources/directory/read": async (input, extra) => {
        const request = params(DirectoryReadParams, "resources/directory/read")(input)
        return runner.request(
          audited("resources/directory/read", request.uri, readDirectory(request)),
          extra.signal,
          request.uri,
        )
      },
      "resources/subscribe": async (input, extra) => {
        const { uri } = params(UriParams, "resources/subscribe")(input)
        return runner.request(
          audited(
            "resources/subscribe",
            uri,
            Effect.gen(function* () {
              if (!subscriptions.has(uri) && subscriptions.size >= MAX_SUBSCRIPTIONS) {
                return yield* new InvalidArgument({
                  argument: "uri",
                  reason: `this client already holds ${MAX_SUBSCRIPTIONS} subscriptions, the most one client may hold; unsubscribe from one first`,
                })
              }
              const target = yield* resolveUri(yield* catalog.snapshot, uri)
              if (target._tag === "Skill") {
                const manifest = target.rest.length === 1 && target.rest[0] === MANIFEST_SEGMENT
                if (manifest) yield* files.manifest(target.skill)
                else
                  yield* files.resolve(
                    target.skill,
                    target.rest.length === 0 ? SKILL_FILE : target.rest.join("/"),
                  )
              }
              subscriptions.set(uri, yield* observe(uri))
              yield* hooks.subscribed
              return {}
            }),
          ),
          extra.signal,
          uri,
        )
      },
      "resources/unsubscribe": async (input) => {
        const { uri } = params(UriParams, "resources/unsubscribe")(input)
        subscriptions.delete(uri)
        return {}
      },
      "skills/list": async (input, extra) =>
        runner.request(listSkills(params(ListSkillsParams, "skills/list")(input), logLeftOut), extra.signal),
      "skills/get": async (input, extra) => {
        const request = params(GetSkillParams, "skills/get")(input)
        return runner.request(
          audited("skills/get", request.uri, getSkill(request)),
          extra.signal,
          request.uri,
        )
      },
      "completion/complete": async (input, extra) => {
        const request = params(CompleteParams, "completion/complete")(input)
        // Completion lists skills and file paths: audited like a read.
        const ref = request.ref.type === "ref/prompt" ? request.ref.name : request.ref.uri
        return runner.request(
          audited(
            "completion/complete",
            `${ref} ${request.argument.name}=${request.argument.value}`,
            complete(request),
          ),
          extra.signal,
        )
      },
      "logging/setLevel": async (input) => {
        clientLog.level = params(SetLevelParams, "logging/setLevel")(input).level
        return {}
      },
    }

    // The SDK registers its own logging/setLevel handler (zod, errors as -32603); ours decodes
    // with Schema like every other method.
    server.removeRequestHandler("logging/setLevel")
    server.fallbackRequestHandler = async (request: JSONRPCRequest, extra: Extra) => {
      const handler = Object.hasOwn(handlers, request.method) ? handlers[request.method] : undefined
      // Only ping may come before initialize (the SDK answers initialize and ping itself).
      if (server.getClientVersion() === undefined) {
        throw new ProtocolError(
          ErrorCode.InvalidRequest,
          `Server not initialized: send 'initialize' before '${echo(request.method)}'.`,
        )
      }
      if (handler === undefined) {
        throw new ProtocolError(ErrorCode.MethodNotFound, `Method not found: ${echo(request.method)}`)
      }
      return handler(request.params, extra)
    }

    /** Sends `notifications/resources/updated` for each subscribed URI whose content changed. */
    const checkSubscriptions = Effect.suspend(() =>
      Effect.forEach(
        [...subscriptions.entries()],
        ([uri, before]) =>
          Effect.gen(function* () {
            const now = yield* observe(uri)
            if (before.signature === now.signature || !subscriptions.has(uri)) return
            subscriptions.set(uri, now)
            yield* Effect.promise(() => server.sendResourceUpdated({ uri }).catch(() => undefined))
          }),
        { discard: true },
      ),
    )

    const initialized = yield* Deferred.make<void>()
    server.oninitialized = () => {
      clientLog.server = server
      Deferred.unsafeDone(initialized, Exit.void)
    }

    /**
     * The answer to `initialize` as sent: under `--tools auto`, a client that declares the
     * Skills extension is shown no tools, so its instructions are about loading skills itself
     * (the SDK fixes instructions when the server is built, before the client is known).
     */
    const outgoing = (message: JSONRPCMessage): JSONRPCMessage => {
      if (settings.tools !== "auto" || !toolsHidden() || !isInitializeAnswer(message)) return message
      if (message.result.instructions === undefined) return message
      return {
        ...message,
        result: { ...message.result, instructions: serverInstructions(snapshot, settings, "host") },
      }
    }

    return {
      server,
      outgoing,
      checkSubscriptions,
      hasSubscriptions: () => subscriptions.size > 0,
      /** Folders holding subscribed files (watched too). */
      subscribedFolders: () => [...subscriptions.values()].flatMap((entry) => entry.folders),
      isInitialized: () => clientLog.server !== undefined,
      /** Completes when the client has sent `notifications/initialized`. */
      initialized: Deferred.await(initialized),
    }
  })

/**
 * After the input ended: "drained" once every request read is answered and every answer
 * flushed to the client, or "stalled" when the output has taken nothing for `stallMs`
 * (counting from the end of input) while some are pending. A slow client that reads gets
 * everything; one that stopped reading does not keep the process.
 */
export const drain = (
  transport: { readonly whenIdle: () => Promise<void>; readonly lastFlushed: number },
  stallMs: number,
): Effect.Effect<"drained" | "stalled"> =>
  Effect.suspend(() => {
    const endedAt = performance.now()
    const stalled = Effect.suspend(() => {
      const quiet = performance.now() - Math.max(transport.lastFlushed, endedAt)
      return quiet >= stallMs ? Effect.succeed(true) : Effect.as(Effect.sleep(stallMs - quiet), false)
    }).pipe(Effect.repeat({ until: (done) => done }))
    return Effect.raceFirst(
      Effect.as(
        Effect.promise(() => transport.whenIdle()),
        "drained" as const,
      ),
      Effect.as(stalled, "stalled" as const),
    )
  })

/** What `serve` does when the server's state changes. */
interface ServerHooks {
  /** After a subscription: watch the subscribed file's folder. */
  subscribed: Effect.Effect<void>
}

/**
 * Where log lines also go: to the client, at or above the level it set (default warning),
 * once it has initialized.
 */
interface ClientLog {
  level: LoggingLevel
  server: Server | undefined
}

const clientLogger = (sink: ClientLog) =>
  Logger.make<unknown, void>(({ logLevel, message }) => {
    const level = levelOf(logLevel)
    if (sink.server === undefined || severity(level) < severity(sink.level)) return
    const text = Array.isArray(message) ? message.map(String).join(" ") : String(message)
    sink.server.sendLoggingMessage({ level, logger: SERVER_NAME, data: text }).catch(() => undefined)
  })

/**
 * Serves MCP on `input`/`output` until the input ends; then waits (briefly) for the
 * requests in flight to be answered and closes the server.
 */
export const serve = (io: { readonly input: Readable; readonly output: Writable }) => {
  const clientLog: ClientLog = { level: "warning", server: undefined }
  const hooks: ServerHooks = { subscribed: Effect.void }
  return Effect.gen(function* () {
    const settings = yield* Settings
    const catalog = yield* Catalog
    const made = yield* makeServer(clientLog, hooks)
    const { server } = made
    const ended = yield* Deferred.make<void>()
    const transport = new LineTransport(io.input, io.output, {
      onEnd: () => Deferred.unsafeDone(ended, Exit.void),
      outgoing: made.outgoing,
    })
    server.onerror = (error) => {
      writeStderr(`${JSON.stringify({ message: `MCP transport: ${error.message}`, logLevel: "DEBUG" })}\n`)
    }
    yield* Effect.acquireRelease(
      Effect.promise(() => server.connect(transport)),
      () => Effect.promise(() => server.close()),
    )

    // Catalog changes: one notification of each kind per change.
    yield* catalog.changes.pipe(
      Stream.runForEach(() =>
        made.isInitialized()
          ? Effect.promise(async () => {
              if (settings.tools !== "never") await server.sendToolListChanged().catch(() => undefined)
              await server.sendPromptListChanged().catch(() => undefined)
              await server.sendResourceListChanged().catch(() => undefined)
            })
          : Effect.void,
      ),
      Effect.forkScoped,
    )

    /** The handshake is done (the client's `notifications/initialized`), or a second has passed. */
    const handshakeDone = made.initialized.pipe(Effect.timeoutOption("1 second"))

    // Once the handshake is done: the search index is built in the background, before a query
    // needs it, and the watches are set up (src/catalog/Watching.ts). Without watches, the files
    // of subscribed URIs are polled while there are any.
    yield* handshakeDone.pipe(Effect.zipRight(catalog.warmSearch), Effect.forkScoped)
    if (settings.watch) {
      yield* handshakeDone.pipe(
        Effect.zipRight(
          watchCatalog({ extraFolders: made.subscribedFolders, afterChanges: made.checkSubscriptions }),
        ),
        Effect.tap(({ follow }) =>
          Effect.sync(() => {
            hooks.subscribed = follow
          }),
        ),
        Effect.forkScoped,
      )
    } else {
      yield* Effect.suspend(() => (made.hasSubscriptions() ? made.checkSubscriptions : Effect.void)).pipe(
        Effect.repeat({ schedule: Schedule.spaced(SUBSCRIPTION_POLL) }),
        Effect.forkScoped,
      )
    }

    yield* Deferred.await(ended)
    const outcome = yield* drain(transport, DRAIN_STALL_MS)
    if (outcome === "stalled") {
      const unanswered = transport.unanswered
      yield* Effect.logWarning(
        `Input ended and nothing was delivered for ${DRAIN_STALL_MS} ms: ${unanswered} request(s) left unanswered and ${transport.pending - unanswered} answer(s) the client did not read were abandoned.`,
      )
    }
  }).pipe(Effect.provide(Logger.add(clientLogger(clientLog))))
}
