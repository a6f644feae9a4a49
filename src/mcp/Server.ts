/**
 * The MCP server over stdio: the SDK's low-level `Server` with one dispatch table whose
 * handlers decode their params with Effect Schema and run as Effects (src/mcp/Run.ts).
 * The process serves until stdin ends (or a signal interrupts it), then answers the
 * requests still in flight and closes.
 */
import type { Readable, Writable } from "node:stream"
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js"
import type { JSONRPCRequest, ServerNotification, ServerRequest } from "@modelcontextprotocol/sdk/types.js"
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js"
import { Deferred, Effect, Either, Exit, Runtime, Schema, Stream } from "effect"
import type { AuditLog } from "../AuditLog.js"
import { Catalog } from "../Catalog.js"
import { usageGuide } from "../instructions.js"
import { Settings } from "../Settings.js"
import type { SkillFiles } from "../SkillFiles.js"
import { VERSION } from "../version.js"
import { GetPromptParams, getPrompt, promptDefinitions } from "./prompts.js"
import { decodeParams, makeRunner } from "./Run.js"
import { LineTransport } from "./Transport.js"
import { callTool, toolDefinitions } from "./tools.js"

export const SERVER_NAME = "skills-mcp"

/** How long requests in flight may take to finish after stdin ends, before the process exits. */
const DRAIN_TIMEOUT = "900 millis"

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>
type Handler = (params: unknown, extra: Extra) => Promise<Record<string, unknown>>

const CallToolParams = Schema.Struct({
  name: Schema.String,
  arguments: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
})
const ListParams = Schema.Struct({ cursor: Schema.optional(Schema.String) })

const params =
  <A, I>(schema: Schema.Schema<A, I>, method: string) =>
  (input: unknown): A =>
    Either.getOrThrowWith(decodeParams(schema, method)(input), (error) => error)

export type ServerServices = Catalog | SkillFiles | AuditLog | Settings

/** Builds the SDK server for one connection. */
export const makeServer = Effect.gen(function* () {
  const settings = yield* Settings
  const catalog = yield* Catalog
  const runner = yield* makeRunner<ServerServices>()

  const server = new Server(
    { name: SERVER_NAME, version: VERSION },
    {
      capabilities: { tools: { listChanged: true }, prompts: { listChanged: true } },
      instructions: usageGuide({ xml: false }),
    },
  )

  const handlers: Record<string, Handler> = {
    "tools/list": async (input, extra) => {
      params(ListParams, "tools/list")(input)
      return runner.request(
        Effect.map(catalog.snapshot, (snapshot) => ({
          tools: toolDefinitions(snapshot, settings.catalogBudget),
        })),
        extra.signal,
      )
    },
    "tools/call": async (input, extra) => {
      const { name, arguments: args } = params(CallToolParams, "tools/call")(input)
      return runner.tool(callTool(name, args), extra.signal)
    },
    "prompts/list": async (input) => {
      params(ListParams, "prompts/list")(input)
      return { prompts: promptDefinitions() }
    },
    "prompts/get": async (input, extra) =>
      runner.request(getPrompt(params(GetPromptParams, "prompts/get")(input)), extra.signal),
  }

  server.fallbackRequestHandler = async (request: JSONRPCRequest, extra: Extra) => {
    const handler = Object.hasOwn(handlers, request.method) ? handlers[request.method] : undefined
    if (handler === undefined) {
      throw new McpError(ErrorCode.MethodNotFound, `Method not found: ${request.method.slice(0, 100)}`)
    }
    return handler(request.params, extra)
  }
  return server
})

/**
 * Serves MCP on `input`/`output` until the input ends; then waits (briefly) for the
 * requests in flight to be answered and closes the server.
 */
export const serve = (io: { readonly input: Readable; readonly output: Writable }) =>
  Effect.gen(function* () {
    const catalog = yield* Catalog
    const server = yield* makeServer
    const ended = yield* Deferred.make<void>()
    const transport = new LineTransport(io.input, io.output, {
      onEnd: () => Deferred.unsafeDone(ended, Exit.void),
    })
    let initialized = false
    server.oninitialized = () => {
      initialized = true
    }
    const runtime = yield* Effect.runtime<never>()
    server.onerror = (error) => {
      Runtime.runFork(runtime)(Effect.logDebug(`MCP transport: ${error.message}`))
    }
    yield* Effect.acquireRelease(
      Effect.promise(() => server.connect(transport)),
      () => Effect.promise(() => server.close()),
    )
    yield* catalog.changes.pipe(
      Stream.runForEach(() =>
        initialized ? Effect.promise(() => server.sendToolListChanged().catch(() => undefined)) : Effect.void,
      ),
      Effect.forkScoped,
    )
    yield* Deferred.await(ended)
    yield* Effect.promise(() => transport.whenIdle()).pipe(Effect.timeoutOption(DRAIN_TIMEOUT))
  })
