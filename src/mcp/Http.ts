/**
 * Serving MCP over Streamable HTTP (`serve --http`), stateless: every POST to /mcp gets a server
 * and a transport of its own (the SDK's `StreamableHTTPServerTransport` without session ids,
 * answering in JSON), over the one catalog and watcher of the process, so any replica can
 * answer any request. Beside /mcp: `GET /healthz` (200 while the process runs) and
 * `GET /readyz` (503 until the first scan is done, then 200); anything else is 404.
 *
 * The server listens before the first scan (`listenHttp`), then serves /mcp once the services
 * are built (`serveHttp`). Every request is checked against DNS rebinding (src/mcp/HttpGuard.ts)
 * and bounded (LIMITS). With `--auth`, a POST to /mcp needs a bearer token the auth file accepts
 * (src/mcp/Auth.ts; else 401 with `WWW-Authenticate`), and the RFC 9728 protected-resource
 * document is served at /.well-known/oauth-protected-resource. On SIGTERM/SIGINT it stops
 * accepting, answers the requests in flight, then the process exits.
 */
import * as http from "node:http"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { Caller } from "../Access.js"
import { elapsedMs, formatAuditLine } from "../AuditLog.js"
import { Catalog } from "../catalog/Catalog.js"
import { watchCatalog } from "../catalog/Watching.js"
import { UsageError } from "../Errors.js"
import { appLayer } from "../Live.js"
import { writeStderr } from "../Logging.js"
import type { Listen, SettingsShape } from "../Settings.js"
import { Settings } from "../Settings.js"
import type { Auth } from "./Auth.js"
import { makeAuth } from "./Auth.js"
import { makeGitHook, NOT_SERVED } from "./GitHook.js"
import { budgetWarnings } from "./Guide.js"
import type { HostRules } from "./HttpGuard.js"
import { hostProblem, originProblem } from "./HttpGuard.js"
import { makeServerContext, statelessServer } from "./Server.js"

/** What one request may take: its body, its time, and how many may be in flight at once. */
const LIMITS = {
  /** Largest request body; a larger one is answered 413. */
  bodyBytes: 1024 * 1024,
  /** Longest a request's work may run; past it, it is stopped and answered with an error. */
  requestMs: 30_000,
  /** Requests in flight at once; more are answered 503 with Retry-After. */
  inFlight: 64,
  /** Webhooks (POST /hooks/git) in flight at once, apart from /mcp's; more are answered 503. */
  hooksInFlight: 8,
} as const

/** Answers `status` with a JSON-RPC error (id null: the request was not read). */
const refuse = (
  res: http.ServerResponse,
  status: number,
  message: string,
  headers: Readonly<Record<string, string>> = {},
) => {
  if (res.headersSent) return void res.end()
  res.writeHead(status, { "content-type": "application/json", ...headers })
  res.end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32000, message } }))
}

/** The caller's address, for the audit log. */
const remoteOf = (req: http.IncomingMessage) =>
  `${req.socket.remoteAddress ?? "?"}:${req.socket.remotePort ?? "?"}`

/**
 * The audit line of a POST to /mcp that no handler recorded: refused with `status` before
 * reaching one (by the front, or by the SDK's transport: invalid JSON, Accept, content type,
 * protocol version, size). Written as AuditLog.stderr writes: the services, and their AuditLog,
 * come after the front. `caller` is unknown when refused before the token is checked.
 */
const auditRefusal = (remote: string, caller: Caller | undefined, status: number, started: number) =>
  writeStderr(
    formatAuditLine(
      {
        tool: "POST /mcp",
        outcome: "Refused",
        status,
        remote,
        ...(caller === undefined ? {} : { caller: caller.name }),
        durationMs: elapsedMs(started),
      },
      new Date(),
    ),
  )

const plain = (res: http.ServerResponse, status: number, text: string) => {
  res.writeHead(status, { "content-type": "text/plain; charset=utf-8", "cache-control": "no-store" })
  res.end(`${text}\n`)
}

/**
 * Serves one POST to /mcp; `remote` is the caller's address, for the audit log; `caller` who
 * sent it (with `--auth`; undefined without).
 */
type McpHandler = (
  req: http.IncomingMessage,
  res: http.ServerResponse,
  remote: string,
  caller: Caller | undefined,
) => Promise<void>

/**
 * Where the RFC 9728 protected-resource document is served (with `--auth`): for the server, for
 * /mcp, and at the path the 401's challenge names (`Auth.metadataPath`, after the resource's path).
 */
const RESOURCE_METADATA_PATHS: ReadonlyArray<string> = [
  "/.well-known/oauth-protected-resource",
  "/.well-known/oauth-protected-resource/mcp",
]

interface Front {
  /** The address listened on (the port the system chose, for port 0). */
  readonly url: string
  /** From now on /mcp is served by `handler` (and /hooks/git by `gitHook`), and /readyz answers 200. */
  readonly ready: (handler: McpHandler, gitHook?: FrontState["gitHook"]) => Effect.Effect<void>
  /** Stops accepting, then waits until every request in flight is answered. */
  readonly drain: Effect.Effect<void>
}

interface FrontState {
  /** Serves /mcp once the first scan is done. */
  handler: McpHandler | undefined
  /** Draining: new requests are refused. */
  closing: boolean
  /** Requests to /mcp accepted and not yet answered (their response closed). */
  inFlight: number
  /** Webhooks accepted and not yet answered; the drain waits for them too. */
  hooksInFlight: number
  /** Serves POST /hooks/git (src/mcp/GitHook.ts), once the services are built, when configured. */
  gitHook?: ((req: http.IncomingMessage, res: http.ServerResponse) => void) | undefined
}

/**
 * How a request is routed before the MCP server sees it; `serve` runs an accepted /mcp POST,
 * `serveHook` an accepted webhook.
 */
const route = (
  rules: () => HostRules,
  state: FrontState,
  auth: Auth | undefined,
  serve: (req: http.IncomingMessage, res: http.ServerResponse) => void,
  serveHook: (req: http.IncomingMessage, res: http.ServerResponse) => void,
) => {
  return (req: http.IncomingMessage, res: http.ServerResponse) => {
    const problem = hostProblem(rules(), req.headers.host) ?? originProblem(rules(), req.headers.origin)
    if (problem !== undefined) return refuse(res, 403, `Forbidden: ${problem}.`)
    const pathname = (req.url ?? "/").split("?")[0]
    const isGet = req.method === "GET" || req.method === "HEAD"
    if (pathname === "/healthz" && isGet) return plain(res, 200, "ok")
    if (pathname === "/readyz" && isGet) {
      if (state.closing) return plain(res, 503, "shutting down")
      return state.handler === undefined
        ? plain(res, 503, "scanning the skills folders")
        : plain(res, 200, "ready")
    }
    if (
      auth !== undefined &&
      isGet &&
      (RESOURCE_METADATA_PATHS.includes(pathname ?? "") ||
        pathname === auth.metadataPath(req.headers.host ?? ""))
    ) {
      res.writeHead(200, { "content-type": "application/json", "cache-control": "no-store" })
      return void res.end(JSON.stringify(auth.metadata(req.headers.host ?? "")))
    }
    if (pathname === "/hooks/git") {
      if (state.closing || state.gitHook === undefined) return refuse(res, 404, NOT_SERVED)
      if (state.hooksInFlight >= LIMITS.hooksInFlight) {
        return refuse(
          res,
          503,
          `Too many webhooks in flight (at most ${LIMITS.hooksInFlight}); try again shortly.`,
          {
            "retry-after": "1",
            connection: "close",
          },
        )
      }
      return serveHook(req, res)
    }
    if (pathname !== "/mcp") return refuse(res, 404, "Not found: MCP is served at /mcp.")
    if (req.method !== "POST") {
      // Stateless: there is no stream to open with GET nor session to end with DELETE.
      return refuse(res, 405, "Method not allowed: this server is stateless; send requests with POST.", {
        allow: "POST",
      })
    }
    // Refused from here on before the token is checked: audited without a caller.
    const started = performance.now()
    let served = false
    res.once("finish", () => {
      if (!served) auditRefusal(remoteOf(req), undefined, res.statusCode, started)
    })
    if (state.closing) return refuse(res, 503, "The server is shutting down.", { connection: "close" })
    if (state.handler === undefined) {
      return refuse(res, 503, "The server is still reading its skills folders; try again shortly.", {
        "retry-after": "1",
      })
    }
    if (Number(req.headers["content-length"]) > LIMITS.bodyBytes) {
      return refuse(
        res,
        413,
        `Payload too large: a request body may take at most ${LIMITS.bodyBytes} bytes.`,
        {
          connection: "close",
        },
      )
    }
    if (state.inFlight >= LIMITS.inFlight) {
      return refuse(
        res,
        503,
        `Too many requests in flight (at most ${LIMITS.inFlight}); try again shortly.`,
        {
          "retry-after": "1",
        },
      )
    }
    served = true
    serve(req, res)
  }
}

/**
 * Listens on `listen` now, answering /healthz, /readyz (503) and the Host/Origin checks; /mcp
 * waits for `ready`. Closing the scope closes every connection left.
 */
const listenHttp = (listen: Listen, allowedHosts: ReadonlyArray<string>, auth: Auth | undefined) =>
  Effect.gen(function* () {
    const state: FrontState = { handler: undefined, closing: false, inFlight: 0, hooksInFlight: 0 }
    const idle: Array<() => void> = []
    const settled = () => state.inFlight === 0 && state.hooksInFlight === 0
    const resumeIfSettled = () => {
      if (settled()) for (const resume of idle.splice(0)) resume()
    }
    const serveHook = (req: http.IncomingMessage, res: http.ServerResponse) => {
      const hook = state.gitHook
      if (hook === undefined) return
      state.hooksInFlight++
      res.once("close", () => {
        state.hooksInFlight--
        resumeIfSettled()
      })
      hook(req, res)
    }
    let rules: HostRules = { host: listen.host, port: listen.port, allowedHosts }
    const serve = (req: http.IncomingMessage, res: http.ServerResponse) => {
      const handler = state.handler
      if (handler === undefined) return
      state.inFlight++
      res.once("close", () => {
        state.inFlight--
        resumeIfSettled()
      })
      const remote = remoteOf(req)
      const started = performance.now()
      authenticate(req, res, remote)
        .then((caller) => {
          if (caller === false) return
          // Answered with an HTTP error status: refused before any handler (which answer 200 or
          // 202, their errors in JSON-RPC), so not in the audit log yet.
          res.once("finish", () => {
            if (res.statusCode >= 400) auditRefusal(remote, caller, res.statusCode, started)
          })
          // A client that waits for 100 Continue sends its body only now that it is accepted.
          if (req.headers.expect !== undefined) res.writeContinue()
          return handler(req, res, remote, caller)
        })
        .catch((error: unknown) => {
          writeStderr(
            `${JSON.stringify({ message: `HTTP request failed: ${error instanceof Error ? error.message : String(error)}`, logLevel: "ERROR" })}\n`,
          )
          refuse(res, 500, "Internal error; the server log has the details.")
        })
    }
    /**
     * The caller of a request (undefined without --auth), or false once it is answered 401: no
     * valid bearer token. A refused token is logged with why (never the token itself).
     */
    const authenticate = async (
      req: http.IncomingMessage,
      res: http.ServerResponse,
      remote: string,
    ): Promise<Caller | undefined | false> => {
      if (auth === undefined) return undefined
      const started = performance.now()
      const outcome = await auth.authenticate(req.headers.authorization)
      if (outcome._tag === "Caller") return outcome.caller
      // In the audit log too, as every request is (written as AuditLog.stderr writes: the
      // services, and their AuditLog, come after the front).
      writeStderr(
        formatAuditLine(
          {
            tool: "POST /mcp",
            outcome: outcome._tag === "Missing" ? "MissingToken" : "InvalidToken",
            remote,
            durationMs: elapsedMs(started),
          },
          new Date(),
        ),
      )
      if (outcome._tag === "Invalid") {
        writeStderr(
          `${JSON.stringify({ message: `Refused a bearer token from ${remote}: ${outcome.reason}`, logLevel: "INFO" })}\n`,
        )
      }
      refuse(
        res,
        401,
        outcome._tag === "Missing"
          ? "Unauthorized: this server needs a bearer token (Authorization: Bearer <token>)."
          : "Unauthorized: the bearer token is not valid (unknown, expired, or not for this server).",
        {
          "www-authenticate": auth.challenge(req.headers.host ?? "", outcome),
          // Its body, if any, is not read: a client waiting for 100 Continue never sends it.
          ...(req.headers.expect === undefined ? {} : { connection: "close" }),
        },
      )
      return false
    }
    const routed = route(() => rules, state, auth, serve, serveHook)
    const server = http.createServer(
      // A client that sends its request too slowly is cut off (408) rather than kept; Node looks
      // for such connections every second (its default, 30 s, would double the limits).
      { requestTimeout: LIMITS.requestMs, headersTimeout: 10_000, connectionsCheckingInterval: 1_000 },
      routed,
    )
    // `Expect: 100-continue`: a refused request (too large, too many) is refused before its body is sent.
    server.on("checkContinue", routed)
    /** The server has stopped: closed, and its last connection gone. */
    const closed = new Promise<void>((resolve) => server.once("close", () => resolve()))
    const address = yield* Effect.acquireRelease(
      Effect.async<{ address: string; family: string; port: number }, UsageError>((resume) => {
        const failed = (error: Error) =>
          resume(
            Effect.fail(
              new UsageError({ reason: `Cannot listen on ${listen.host}:${listen.port}: ${error.message}` }),
            ),
          )
        server.once("error", failed)
        server.listen(listen.port, listen.host, () => {
          server.off("error", failed)
          const info = server.address()
          resume(
            info !== null && typeof info === "object"
              ? Effect.succeed(info)
              : Effect.die(new Error("the HTTP server has no address after listening")),
          )
        })
      }),
      // Closed once: by `drain`, or here (interrupted before it, e.g. during the first scan).
      () =>
        Effect.promise(() => {
          if (server.listening) server.close()
          server.closeAllConnections()
          return closed
        }),
    )
    rules = { ...rules, port: address.port }
    const host = address.family === "IPv6" ? `[${address.address}]` : address.address
    const front: Front = {
      url: `http://${host}:${address.port}/mcp`,
      ready: (handler, gitHook) =>
        Effect.sync(() => {
          state.handler = handler
          state.gitHook = gitHook
        }),
      drain: Effect.async<void>((resume) => {
        state.closing = true
        server.close()
        server.closeIdleConnections()
        if (settled()) resume(Effect.void)
        else idle.push(() => resume(Effect.void))
      }).pipe(Effect.tap(() => Effect.sync(() => server.closeIdleConnections()))),
    }
    return front
  })

/**
 * The handler of /mcp POSTs: a stateless SDK server and transport per request, made without
 * running an Effect from what every request shares (made once, `makeServerContext`).
 */
const makeMcpHandler = Effect.gen(function* () {
  const context = yield* makeServerContext({ timeoutMs: LIMITS.requestMs })
  const handler: McpHandler = async (req, res, remote, caller) => {
    const { server } = statelessServer(context, { remote, caller })
    // No session id: stateless. JSON answers: nothing is streamed.
    const transport = new StreamableHTTPServerTransport({
      enableJsonResponse: true,
      maxRequestBodySize: LIMITS.bodyBytes,
    })
    res.once("close", () => {
      void server.close()
    })
    await server.connect(transport)
    await transport.handleRequest(req, res)
  }
  return handler
})

/**
 * `serve --http`: listens at once, builds the services (the first scan) meanwhile, then serves
 * /mcp until interrupted (SIGTERM, SIGINT); then drains before the services close.
 */
export const serveHttp = (settings: SettingsShape, listen: Listen) =>
  Effect.scoped(
    Effect.gen(function* () {
      // A bad auth file stops the start (a usage error), before anything listens.
      const auth = settings.auth === undefined ? undefined : yield* makeAuth(settings.auth)
      const front = yield* listenHttp(listen, settings.allowedHosts, auth)
      yield* Effect.logInfo(`Serving MCP over HTTP at ${front.url}`)
      if (auth !== undefined) {
        yield* Effect.logInfo(`Requests need a bearer token of ${settings.auth}: ${auth.summary()}`)
        yield* auth.watch.pipe(Effect.forkScoped)
      }
      yield* Effect.scoped(
        Effect.gen(function* () {
          const catalog = yield* Catalog
          for (const warning of budgetWarnings(yield* catalog.peek, settings))
            yield* Effect.logWarning(warning)
          const handler = yield* makeMcpHandler
          // Runs before the services close: requests in flight still have them.
          // At most a request's time: a client that never sends its body does not keep the
          // process (server.close() also stops Node's checks of slow requests).
          yield* Effect.addFinalizer(() =>
            front.drain.pipe(
              Effect.timeoutTo({
                duration: LIMITS.requestMs,
                onSuccess: () => Effect.void,
                onTimeout: () =>
                  Effect.logWarning(
                    `Requests still in flight ${LIMITS.requestMs / 1000} s after the stop signal: closing their connections.`,
                  ),
              }),
              Effect.flatten,
            ),
          )
          yield* catalog.warmSearch.pipe(Effect.forkScoped)
          if (settings.watch) {
            yield* watchCatalog({ extraFolders: () => [], afterChanges: Effect.void }).pipe(Effect.forkScoped)
          }
          const gitHook = auth === undefined ? undefined : yield* makeGitHook(auth.webhookSecret)
          yield* front.ready(handler, gitHook)
          yield* Effect.logInfo("Ready: the skills folders are read")
          return yield* Effect.never
        }),
      ).pipe(Effect.provide(appLayer(Layer.succeed(Settings, settings))))
    }),
  )
