/**
 * The MCP server for one client: the SDK's low-level `Server` with one dispatch table whose
 * handlers decode their params with Effect Schema and run as Effects (src/mcp/Run.ts). Serves
 * tools, resources, prompts, completion, logging and the MCP Skills extension. What servers share
 * (`makeServerContext`) is made once per connection over stdio and once per process over HTTP,
 * where a server made per request (`statelessServer`) then runs no Effect. How a client is
 * served over a pair of streams (notifications, background work, the end of input) is
 * src/mcp/Serve.ts.
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js"
import type {
  JSONRPCMessage,
  JSONRPCRequest,
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
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import type { Caller } from "../Access.js"
import type { AuditRecord } from "../AuditLog.js"
import { AuditLog, elapsedMs } from "../AuditLog.js"
import { Catalog } from "../catalog/Catalog.js"
import type { Snapshot } from "../catalog/Snapshot.js"
import type { SkillError } from "../Errors.js"
import { echo } from "../Errors.js"
import { SkillFiles } from "../files/SkillFiles.js"
import type { Loader } from "../instructions.js"
import type { Fs } from "../platform/Fs.js"
import { budgetOf, Settings } from "../Settings.js"
import { parseSkillUri, resolveSegments } from "../skills/Uris.js"
import { SERVER_NAME, VERSION } from "../version.js"
import type { ClientLog } from "./ClientLog.js"
import { SetLevelParams } from "./ClientLog.js"
import { CompleteParams, makeCompleter } from "./completion.js"
import { budgetWarnings, catalogIn, serverInstructions } from "./Guide.js"
import { GetPromptParams, getPrompt, listPrompts } from "./prompts.js"
import type { Runner } from "./Run.js"
import { auditedRun, decodeParams, InvalidParams, ListParams, ProtocolError, runnerOn } from "./Run.js"
import {
  DirectoryReadParams,
  listResources,
  readDirectory,
  readResource,
  resourceTemplates,
  UriParams,
} from "./resources.js"
import { makeSubscriptions } from "./Subscriptions.js"
import {
  GetSkillParams,
  getSkill,
  ListSkillsParams,
  listSkills,
  makeLeftOutLog,
  SKILLS_EXTENSION,
} from "./skills.js"
import { callTool, toolDefinitions } from "./tools.js"

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>
type Handler = (params: unknown, extra: Extra) => Promise<Record<string, unknown>>

const CallToolParams = Schema.Struct({
  name: Schema.String,
  arguments: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
})

export type ServerServices = Catalog | SkillFiles | AuditLog | Settings | Fs

/**
 * Methods whose handlers record themselves in the audit log (each read of skill content, over
 * HTTP; stateless, there is no resources/subscribe).
 */
const READS = new Set([
  "tools/call",
  "prompts/get",
  "resources/read",
  "resources/directory/read",
  "skills/get",
  "completion/complete",
])

/** The audit outcome of a request that failed before or outside an audited read. */
const protocolOutcome = (error: unknown) => {
  if (!(error instanceof ProtocolError)) return "Defect"
  if (error.code === ErrorCode.MethodNotFound) return "MethodNotFound"
  if (error.code === ErrorCode.InvalidParams) return "InvalidParams"
  return "ProtocolError"
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

/**
 * What the server offers. Stateless (over HTTP), it can push nothing: no list-change
 * notifications, no subscriptions.
 */
export const capabilities = (settings: Settings["Type"], stateless = false): ServerCapabilities => ({
  ...(settings.tools === "never" ? {} : { tools: stateless ? {} : { listChanged: true } }),
  resources: stateless ? {} : { subscribe: true, listChanged: true },
  prompts: stateless ? {} : { listChanged: true },
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

export interface ServerOptions {
  /**
   * One server per request (Streamable HTTP without sessions): no `initialize` comes first,
   * nothing is pushed (no list changes, no subscriptions), and the budget warnings are the
   * caller's to log, once.
   */
  readonly stateless?: boolean
  /** Where the request came from, for the audit log (over HTTP). */
  readonly remote?: string
  /** Who sent the request (over HTTP with `--auth`): named in the audit log; sees only its skills. */
  readonly caller?: Caller
  /** Longest a request may run (ms); see makeRunner. */
  readonly timeoutMs?: number
  /** What outlives one server when a server is made per request (see `makeKept`). */
  readonly kept?: Kept
}

/**
 * What a server keeps across requests: completion's file lists (a client asks at every
 * keystroke) and the skills already reported left out of skills/list (each logged once).
 * Made with each server over stdio; once per process over HTTP, where a server lasts a request.
 */
export const makeKept = Effect.gen(function* () {
  const files = yield* SkillFiles
  const complete = yield* makeCompleter((skill) =>
    files.list(skill, "").pipe(
      Effect.map((listing) => listing.entries.map((entry) => entry.path)),
      Effect.orElseSucceed(() => undefined),
    ),
  )
  return { complete, logLeftOut: makeLeftOutLog() }
})
export type Kept = Effect.Effect.Success<typeof makeKept>

/** The catalog a caller reads (all of it without a caller), and the runner of its requests. */
interface View {
  readonly catalog: Catalog
  readonly runner: Runner<ServerServices>
}

/**
 * What every server of a process (over HTTP) or of a connection (over stdio) shares: the
 * services, each caller's catalog view and runner, the instructions of each snapshot, what is
 * kept across requests. Over HTTP it is made once, so that a server per request is made without
 * running an Effect (`statelessServer`).
 */
export const makeServerContext = (options: Pick<ServerOptions, "timeoutMs" | "kept"> = {}) =>
  Effect.gen(function* () {
    const settings = yield* Settings
    const whole = yield* Catalog
    const audit = yield* AuditLog
    const runtime = yield* Effect.runtime<ServerServices>()
    const kept = options.kept ?? (yield* makeKept)
    /** By the reads a caller gets (the catalog keeps one per policy, src/catalog/Catalog.ts). */
    const views = new WeakMap<object, View>()
    /** An authenticated caller's requests read its own catalog, on every surface (src/catalog/Views.ts). */
    const viewOf = (caller: Caller | undefined): View => {
      const reads = caller === undefined ? whole : whole.readsFor(caller)
      const known = views.get(reads)
      if (known !== undefined) return known
      const catalog = caller === undefined ? whole : Catalog.make({ ...whole, ...reads })
      const view: View = {
        catalog,
        runner: runnerOn(Runtime.provideService(runtime, Catalog, catalog), {
          timeoutMs: options.timeoutMs,
          calls: whole.calls,
        }),
      }
      views.set(reads, view)
      return view
    }
    /** The instructions of a snapshot, made once per snapshot and loader. */
    const made = new WeakMap<Snapshot, Map<Loader, string>>()
    const instructions = (snapshot: Snapshot, loader: Loader) => {
      const byLoader = made.get(snapshot) ?? new Map<Loader, string>()
      made.set(snapshot, byLoader)
      const known = byLoader.get(loader)
      if (known !== undefined) return known
      const text = serverInstructions(snapshot, settings, loader)
      byLoader.set(loader, text)
      return text
    }
    return {
      settings,
      audit,
      kept,
      viewOf,
      instructions,
      /** What a server offers, as a connection (stdio) and as a request (HTTP). */
      capabilities: { session: capabilities(settings), stateless: capabilities(settings, true) },
      /** Whether some root is a git source (a read's audit then names its commit). */
      fromGit: settings.roots.some((root) => root.git !== undefined),
      /** A view's snapshot as it is (a request's own reads check freshness, see Catalog.snapshot). */
      peek: (view: View) => Runtime.runSync(runtime)(view.catalog.peek),
    } as const
  })
export type ServerContext = Effect.Effect.Success<ReturnType<typeof makeServerContext>>

/** What one server (a connection's, or a request's) is made with beside its context. */
interface Use {
  readonly clientLog: ClientLog
  readonly stateless: boolean
  readonly remote?: string | undefined
  readonly caller?: Caller | undefined
  /** The snapshot its `initialize` instructions describe. */
  readonly snapshot: Snapshot
  /** Over stdio: the client's subscriptions, and what follows a new one. */
  readonly subscriptions?: {
    readonly subscribe: (uri: string) => Effect.Effect<void, SkillError>
    readonly unsubscribe: (uri: string) => void
    readonly follow: () => Effect.Effect<void>
  }
  /** Called when the client has sent `notifications/initialized`. */
  readonly onInitialized?: () => void
}

/** Builds the SDK server of one use: its handlers, its audit records, its instructions. */
const buildServer = (context: ServerContext, use: Use) => {
  const { settings, audit, fromGit } = context
  const { caller, clientLog, snapshot, stateless } = use
  const { catalog, runner } = context.viewOf(caller)
  const server = new Server(
    { name: SERVER_NAME, version: VERSION },
    {
      capabilities: stateless ? context.capabilities.stateless : context.capabilities.session,
      instructions: context.instructions(snapshot, settings.tools === "never" ? "host" : "tools"),
      jsonSchemaValidator: noValidation,
    },
  )
  /**
   * The audit log of this server: every record names the client (from `initialize`) and,
   * over HTTP, the address the request came from and the authenticated caller.
   */
  const clientAudit: AuditLog["Type"] = {
    record: (record: AuditRecord) => {
      const client = server.getClientVersion()?.name
      return audit.record({
        ...record,
        ...(client === undefined ? {} : { client: client.slice(0, 100) }),
        ...(use.remote === undefined ? {} : { remote: use.remote }),
        ...(caller === undefined ? {} : { caller: caller.name }),
      })
    },
  }
  /** The commit the skill a URI names is served from, when it comes from a git source. */
  const commitAt = (uri: string) =>
    Effect.map(catalog.peek, (current): Partial<AuditRecord> => {
      const segments = parseSkillUri(uri)
      const target = Either.isRight(segments) ? resolveSegments(current, segments.right) : undefined
      const commit = target?._tag === "Skill" ? target.skill.git?.commit : undefined
      return commit === undefined ? {} : { commit }
    })
  /**
   * Runs a read of skill content, recorded in the audit log with its URI and outcome (and the
   * commit of the skill it read, from a git source).
   */
  const audited = <A, R>(method: string, uri: string, effect: Effect.Effect<A, SkillError, R>) => {
    const record = { tool: method, uri: uri.slice(0, 500) }
    // Without git sources there is no commit to name: no lookup on every read.
    if (!fromGit) return auditedRun(clientAudit, record, effect)
    return Effect.map(
      auditedRun(clientAudit, record, Effect.zip(effect, commitAt(uri)), ([, commit]) => commit),
      ([value]) => value,
    )
  }
  const { complete, logLeftOut } = context.kept

  const toolsHidden = () =>
    settings.tools === "never" ||
    (settings.tools === "auto" &&
      server.getClientCapabilities()?.extensions?.[SKILLS_EXTENSION] !== undefined)

  /** A read of skill content at a URI: params decoded, audited with the URI, a failure naming it. */
  const readAt =
    <P extends { readonly uri: string }, I, A extends Record<string, unknown>>(
      method: string,
      params: Schema.Schema<P, I>,
      read: (request: P) => Effect.Effect<A, SkillError, ServerServices>,
    ): Handler =>
    async (input, extra) => {
      const request = decodeParams(params, method)(input)
      return runner.request(audited(method, request.uri, read(request)), extra.signal, request.uri)
    }

  const handlers: Record<string, Handler> = {
    "tools/list": async (input, extra) => {
      decodeParams(ListParams, "tools/list")(input)
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
      const { name, arguments: args } = decodeParams(CallToolParams, "tools/call")(input)
      return runner.tool(Effect.provideService(callTool(name, args), AuditLog, clientAudit), extra.signal)
    },
    "prompts/list": async (input, extra) =>
      runner.request(listPrompts(decodeParams(ListParams, "prompts/list")(input)), extra.signal),
    "prompts/get": async (input, extra) => {
      const request = decodeParams(GetPromptParams, "prompts/get")(input)
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
      runner.request(listResources(decodeParams(ListParams, "resources/list")(input)), extra.signal),
    "resources/templates/list": async (input) => {
      decodeParams(ListParams, "resources/templates/list")(input)
      return { resourceTemplates: resourceTemplates() }
    },
    "resources/read": readAt("resources/read", UriParams, readResource),
    "resources/directory/read": readAt("resources/directory/read", DirectoryReadParams, readDirectory),
    "skills/list": async (input, extra) =>
      runner.request(
        listSkills(decodeParams(ListSkillsParams, "skills/list")(input), logLeftOut),
        extra.signal,
      ),
    "skills/get": readAt("skills/get", GetSkillParams, getSkill),
    "completion/complete": async (input, extra) => {
      const request = decodeParams(CompleteParams, "completion/complete")(input)
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
      clientLog.level = decodeParams(SetLevelParams, "logging/setLevel")(input).level
      return {}
    },
  }

  // Stateless, a subscription would end with its request: none is offered.
  const { subscriptions } = use
  if (subscriptions !== undefined) {
    handlers["resources/subscribe"] = async (input, extra) => {
      const { uri } = decodeParams(UriParams, "resources/subscribe")(input)
      return runner.request(
        audited(
          "resources/subscribe",
          uri,
          Effect.zipRight(
            subscriptions.subscribe(uri),
            Effect.suspend(() => Effect.as(subscriptions.follow(), {})),
          ),
        ),
        extra.signal,
        uri,
      )
    }
    handlers["resources/unsubscribe"] = async (input) => {
      const { uri } = decodeParams(UriParams, "resources/unsubscribe")(input)
      subscriptions.unsubscribe(uri)
      return {}
    }
  }

  // The SDK registers its own logging/setLevel handler (zod, errors as -32603); ours decodes
  // with Schema like every other method.
  server.removeRequestHandler("logging/setLevel")
  server.fallbackRequestHandler = async (request: JSONRPCRequest, extra: Extra) => {
    const handler = Object.hasOwn(handlers, request.method) ? handlers[request.method] : undefined
    // Only ping may come before initialize (the SDK answers initialize and ping itself);
    // stateless, every request comes to a server that saw no initialize.
    if (!stateless && server.getClientVersion() === undefined) {
      throw new ProtocolError(
        ErrorCode.InvalidRequest,
        `Server not initialized: send 'initialize' before '${echo(request.method)}'.`,
      )
    }
    const answer = async () => {
      if (handler === undefined) {
        throw new ProtocolError(ErrorCode.MethodNotFound, `Method not found: ${echo(request.method)}`)
      }
      return handler(request.params, extra)
    }
    if (!stateless) return answer()
    // Over HTTP every request is audited, so the log names the caller of each. Reads of skill
    // content audit themselves, with what they read, once their params are decoded.
    const selfAudited = READS.has(request.method)
    const started = performance.now()
    const outcome = (name: string) =>
      Effect.runSync(
        clientAudit.record({
          tool: request.method,
          outcome: name,
          durationMs: elapsedMs(started),
        }),
      )
    return answer().then(
      (result) => {
        if (!selfAudited) outcome("ok")
        return result
      },
      (error: unknown) => {
        if (!selfAudited || error instanceof InvalidParams) outcome(protocolOutcome(error))
        throw error
      },
    )
  }

  server.oninitialized = () => {
    clientLog.server = server
    use.onInitialized?.()
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
      result: { ...message.result, instructions: context.instructions(snapshot, "host") },
    }
  }
  return { server, outgoing }
}

/**
 * The SDK server for one request over HTTP, made without running an Effect: its instructions
 * describe the catalog as it is (`peek`), which is as fresh as the `ttlMs` its answers carry;
 * the request's own reads check freshness as always.
 */
export const statelessServer = (
  context: ServerContext,
  request: { readonly remote: string; readonly caller?: Caller | undefined },
) =>
  buildServer(context, {
    clientLog: { level: "warning", server: undefined },
    stateless: true,
    remote: request.remote,
    caller: request.caller,
    snapshot: context.peek(context.viewOf(request.caller)),
  })

/** Builds the SDK server for one connection (or, stateless, one request), with what `serve` needs of it. */
export const makeServer = (
  clientLog: ClientLog = { level: "warning", server: undefined },
  options: ServerOptions = {},
) =>
  Effect.gen(function* () {
    const context = yield* makeServerContext(options)
    const { settings } = context
    const stateless = options.stateless === true
    const snapshot = yield* context.viewOf(options.caller).catalog.snapshot
    if (!stateless)
      for (const warning of budgetWarnings(snapshot, settings)) yield* Effect.logWarning(warning)
    /** Set once the server is built (a subscription's update is sent through it). */
    let server: Server | undefined
    const subscriptions = yield* makeSubscriptions((uri) =>
      Effect.promise(() => server?.sendResourceUpdated({ uri }).catch(() => undefined) ?? Promise.resolve()),
    )
    /** What follows a new subscription (the watches take in its folder, once they are set up). */
    let afterSubscribe: Effect.Effect<void> = Effect.void
    const initialized = yield* Deferred.make<void>()
    const built = buildServer(context, {
      clientLog,
      stateless,
      remote: options.remote,
      caller: options.caller,
      snapshot,
      ...(stateless
        ? {}
        : {
            subscriptions: {
              subscribe: subscriptions.subscribe,
              unsubscribe: (uri: string) => void subscriptions.unsubscribe(uri),
              follow: () => afterSubscribe,
            },
          }),
      onInitialized: () => Deferred.unsafeDone(initialized, Exit.void),
    })
    server = built.server

    return {
      server: built.server,
      outgoing: built.outgoing,
      subscriptions,
      /** Sets what follows a new subscription. */
      afterSubscribe: (effect: Effect.Effect<void>) =>
        Effect.sync(() => {
          afterSubscribe = effect
        }),
      isInitialized: () => clientLog.server !== undefined,
      /** Completes when the client has sent `notifications/initialized`. */
      initialized: Deferred.await(initialized),
    }
  })
