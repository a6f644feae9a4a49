/**
 * The MCP boundary: runs handler Effects on one runtime and maps their outcome, once.
 * Tools answer typed failures as `isError` results the model can read; protocol methods
 * answer them as JSON-RPC errors (-32602 for a bad request, -32603 for the rest). A defect
 * is logged with its cause on stderr and answered generically.
 */
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import { ErrorCode } from "@modelcontextprotocol/sdk/types.js"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import type { AuditLogShape, AuditRecord } from "../AuditLog.js"
import { elapsedMs } from "../AuditLog.js"
import type { SkillError } from "../Errors.js"
import { echo, InvalidArgument, MAX_ECHO, RequestTimeout } from "../Errors.js"
import type { Calls } from "../platform/EventLoop.js"

/** The params of every list request (tools, prompts, resources, templates, skills): a cursor. */
export const ListParams = Schema.Struct({ cursor: Schema.optional(Schema.String) })

export const INTERNAL_ERROR_TEXT = "Internal error in skills-mcp; the server log (stderr) has the details."

export interface ToolOutput {
  /** The result as `structuredContent` (matches the tool's outputSchema). */
  readonly structured: Record<string, unknown>
  /** The same for people and models: readable text. */
  readonly text: string
  /** The skill the call resolved to (its id), for the audit log. */
  readonly skill?: string
  /** The commit that skill is served from, when it comes from a git source (audit log). */
  readonly commit?: string
}

const textContent = (text: string) => [{ type: "text" as const, text }]

/** The tag to audit for an exit: `ok`, a failure's tag, `Interrupted` or `Defect`. */
const outcomeOf = (exit: Exit.Exit<unknown, SkillError>): string =>
  Exit.match(exit, {
    onSuccess: () => "ok",
    onFailure: (cause) =>
      Option.match(Cause.failureOption(cause), {
        onSome: (error) => error._tag,
        onNone: () => (Cause.isInterruptedOnly(cause) ? "Interrupted" : "Defect"),
      }),
  })

/**
 * Runs `effect` and records it in `audit` with its outcome and duration; `fromValue` adds
 * what only a success knows (the skill a call resolved to).
 */
export const auditedRun = <A, R>(
  audit: AuditLogShape,
  record: Omit<AuditRecord, "outcome" | "durationMs">,
  effect: Effect.Effect<A, SkillError, R>,
  fromValue: (value: A) => Partial<AuditRecord> = () => ({}),
): Effect.Effect<A, SkillError, R> =>
  Effect.suspend(() => {
    const started = performance.now()
    return Effect.onExit(effect, (exit) =>
      audit.record({
        ...record,
        ...(Exit.isSuccess(exit) ? fromValue(exit.value) : {}),
        outcome: outcomeOf(exit),
        durationMs: elapsedMs(started),
      }),
    )
  })

const toToolResult = (exit: Exit.Exit<ToolOutput, SkillError>): CallToolResult =>
  Exit.match(exit, {
    onSuccess: ({ structured, text }) => ({ content: textContent(text), structuredContent: structured }),
    onFailure: (cause) =>
      Option.match(Cause.failureOption(cause), {
        onSome: (error) => ({ isError: true, content: textContent(error.message) }),
        onNone: () => ({ isError: true, content: textContent(INTERNAL_ERROR_TEXT) }),
      }),
  })

/**
 * What a typed failure of a protocol method means: a bad request (-32602), nothing served at the
 * URI asked for (-32602, with the URI as data), or a fault of the server's (-32603).
 */
const FAILURE_KIND: Record<SkillError["_tag"], "bad-request" | "not-served" | "internal"> = {
  UnknownUri: "not-served",
  SkillNotPublished: "not-served",
  FileNotFound: "not-served",
  PathEscape: "not-served",
  SkillNotFound: "bad-request",
  FileTooLarge: "bad-request",
  BinaryFile: "bad-request",
  InvalidArgument: "bad-request",
  MalformedFrontmatter: "internal",
  SkillUnreadable: "internal",
  RequestTimeout: "internal",
}

/**
 * A JSON-RPC error for the SDK to send: it answers with `code`, `message` and `data` as they are
 * (the SDK's McpError would prefix the message with "MCP error <code>:").
 */
export class ProtocolError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: { readonly uri: string },
  ) {
    super(message)
  }
}

/** A request whose params do not decode (-32602), thrown before its work starts. */
export class InvalidParams extends ProtocolError {
  constructor(message: string) {
    super(ErrorCode.InvalidParams, message)
  }
}

/**
 * The JSON-RPC error for a failed protocol method. For a method on a resource `uri`, a failure
 * meaning nothing is served there carries `data: { uri }`, as MCP's specification recommends,
 * when the URI is at most MAX_ECHO characters (a refusal never repeats more of a client's value).
 */
const toProtocolError = (cause: Cause.Cause<SkillError>, uri?: string): ProtocolError =>
  Option.match(Cause.failureOption(cause), {
    onSome: (error) => {
      const kind = FAILURE_KIND[error._tag]
      const code = kind === "internal" ? ErrorCode.InternalError : ErrorCode.InvalidParams
      return uri !== undefined && uri.length <= MAX_ECHO && kind === "not-served"
        ? new ProtocolError(code, error.message, { uri })
        : new ProtocolError(code, error.message)
    },
    onNone: () => new ProtocolError(ErrorCode.InternalError, INTERNAL_ERROR_TEXT),
  })

/** A decoding issue's message, repeating only the start of the value (see `echo`). */
const issueMessage = (message: string | undefined, fallback: string): string => {
  if (message === undefined) return fallback
  const at = message.indexOf(", actual ")
  if (at === -1) return message.slice(0, 500)
  const actual = message.slice(at + ", actual ".length)
  return `${message.slice(0, Math.min(at, 400))}, actual ${echo(actual)}`
}

/** The first issue of a decoding: where (its path, else `whole`) and what is wrong. */
const firstIssue = (error: ParseResult.ParseError, whole: string, fallback: string) => {
  const issue = ParseResult.ArrayFormatter.formatErrorSync(error)[0]
  return {
    where: issue === undefined || issue.path.length === 0 ? whole : issue.path.map(String).join("."),
    what: issueMessage(issue?.message, fallback),
  }
}

/** Decodes tool arguments strictly (unknown arguments are refused); failures name the argument. */
export const decodeArguments =
  <A, I>(schema: Schema.Schema<A, I>) =>
  (input: unknown): Effect.Effect<A, InvalidArgument> =>
    Schema.decodeUnknown(schema, { errors: "first", onExcessProperty: "error" })(input ?? {}).pipe(
      Effect.mapError((error) => {
        const { where, what } = firstIssue(error, "arguments", "does not match the input schema")
        return new InvalidArgument({ argument: where, reason: what })
      }),
    )

/**
 * Decodes a protocol method's parameters; a mismatch throws JSON-RPC -32602 naming the field
 * (the SDK answers a handler's throw).
 */
export const decodeParams =
  <A, I>(schema: Schema.Schema<A, I>, method: string) =>
  (input: unknown): A => {
    const decoded = Schema.decodeUnknownEither(schema, { errors: "first" })(input ?? {})
    if (Either.isRight(decoded)) return decoded.right
    const { where, what } = firstIssue(decoded.left, "params", "does not match")
    throw new InvalidParams(`Invalid ${method} params: '${where}' ${what}`)
  }

export interface Runner<R> {
  /** Runs a tool's Effect; always resolves to a CallToolResult. */
  readonly tool: (
    effect: Effect.Effect<ToolOutput, SkillError, R>,
    signal: AbortSignal,
  ) => Promise<CallToolResult>
  /**
   * Runs a protocol method's Effect; rejects with a ProtocolError (with `data: { uri }` when the
   * method is on a resource `uri` that is not served).
   */
  readonly request: <A>(
    effect: Effect.Effect<A, SkillError, R>,
    signal: AbortSignal,
    uri?: string,
  ) => Promise<A>
}

const logDefects = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.tapErrorCause(effect, (cause) =>
    Cause.isFailure(cause) || Cause.isInterruptedOnly(cause)
      ? Effect.void
      : Effect.logError("Unexpected failure while handling a request", cause),
  )

export interface RunnerOptions {
  /** Longest a request may run (ms); past it, its work is interrupted and it fails with RequestTimeout. */
  readonly timeoutMs?: number | undefined
  /** Counts each request while it runs (the catalog's background work waits for a pause). */
  readonly calls?: Calls | undefined
}

export const makeRunner = <R>(options: RunnerOptions = {}): Effect.Effect<Runner<R>, never, R> =>
  Effect.map(Effect.runtime<R>(), (runtime) => runnerOn(runtime, options))

/** A runner of request effects on `runtime` (see makeRunner). */
export const runnerOn = <R>(runtime: Runtime.Runtime<R>, options: RunnerOptions = {}): Runner<R> => {
  const { timeoutMs, calls } = options
  /** Runs a request's effect to its exit, counted in `calls` while it runs. */
  const run = async <A, E>(
    effect: Effect.Effect<A, E, R>,
    signal: AbortSignal,
  ): Promise<Exit.Exit<A, E | RequestTimeout>> => {
    const end = calls?.begin()
    try {
      return await runTimed(effect, signal)
    } finally {
      end?.()
    }
  }
  /**
   * Runs a request's effect to its exit; a defect is logged with its cause on stderr. Past
   * `timeoutMs` its work is interrupted, as when the client cancels, and it fails with
   * RequestTimeout: a plain timer and abort signal, which cost a request far less than racing
   * its effect against a timer fiber (Effect.timeout).
   */
  const runTimed = async <A, E>(
    effect: Effect.Effect<A, E, R>,
    signal: AbortSignal,
  ): Promise<Exit.Exit<A, E | RequestTimeout>> => {
    if (timeoutMs === undefined) return Runtime.runPromiseExit(runtime)(logDefects(effect), { signal })
    const stop = new AbortController()
    const cancel = () => stop.abort()
    signal.addEventListener("abort", cancel, { once: true })
    let timedOut = false
    const timer = setTimeout(() => {
      timedOut = true
      stop.abort()
    }, timeoutMs)
    try {
      const exit = await Runtime.runPromiseExit(runtime)(logDefects(effect), { signal: stop.signal })
      return timedOut && Exit.isInterrupted(exit)
        ? Exit.fail(new RequestTimeout({ limitMs: timeoutMs }))
        : exit
    } finally {
      clearTimeout(timer)
      signal.removeEventListener("abort", cancel)
    }
  }
  const request = async <A>(
    effect: Effect.Effect<A, SkillError, R>,
    signal: AbortSignal,
    uri?: string,
  ): Promise<A> => {
    const exit = await run(effect, signal)
    if (Exit.isSuccess(exit)) return exit.value
    throw toProtocolError(exit.cause, uri)
  }
  return { tool: (effect, signal) => run(effect, signal).then(toToolResult), request }
}
