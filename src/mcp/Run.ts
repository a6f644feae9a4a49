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
import * as Match from "effect/Match"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import type { AuditLogShape, AuditRecord } from "../AuditLog.js"
import type { SkillError } from "../Errors.js"
import { echo, InvalidArgument, MAX_ECHO } from "../Errors.js"

export const INTERNAL_ERROR_TEXT = "Internal error in skills-mcp; the server log (stderr) has the details."

export interface ToolOutput {
  /** The result as `structuredContent` (matches the tool's outputSchema). */
  readonly structured: Record<string, unknown>
  /** The same for people and models: readable text. */
  readonly text: string
  /** The skill the call resolved to (its id), for the audit log. */
  readonly skill?: string
}

const textContent = (text: string) => [{ type: "text" as const, text }]

/** The tag to audit for an exit: `ok`, a failure's tag, `Interrupted` or `Defect`. */
export const outcomeOf = (exit: Exit.Exit<unknown, SkillError>): string =>
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
        durationMs: Math.round((performance.now() - started) * 100) / 100,
      }),
    )
  })

export const toToolResult = (exit: Exit.Exit<ToolOutput, SkillError>): CallToolResult =>
  Exit.match(exit, {
    onSuccess: ({ structured, text }) => ({ content: textContent(text), structuredContent: structured }),
    onFailure: (cause) =>
      Option.match(Cause.failureOption(cause), {
        onSome: (error) => ({ isError: true, content: textContent(error.message) }),
        onNone: () => ({ isError: true, content: textContent(INTERNAL_ERROR_TEXT) }),
      }),
  })

/** JSON-RPC error code for a typed failure of a protocol method. */
export const errorCodeOf: (error: SkillError) => number = Match.type<SkillError>().pipe(
  Match.tagsExhaustive({
    SkillNotFound: () => ErrorCode.InvalidParams,
    PathEscape: () => ErrorCode.InvalidParams,
    FileNotFound: () => ErrorCode.InvalidParams,
    FileTooLarge: () => ErrorCode.InvalidParams,
    BinaryFile: () => ErrorCode.InvalidParams,
    InvalidArgument: () => ErrorCode.InvalidParams,
    SkillNotPublished: () => ErrorCode.InvalidParams,
    UnknownUri: () => ErrorCode.InvalidParams,
    MalformedFrontmatter: () => ErrorCode.InternalError,
    SkillUnreadable: () => ErrorCode.InternalError,
  }),
)

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

/** Failures that mean "no resource is served at this URI". */
const isResourceNotFound: (error: SkillError) => boolean = Match.type<SkillError>().pipe(
  Match.tagsExhaustive({
    UnknownUri: () => true,
    SkillNotPublished: () => true,
    FileNotFound: () => true,
    PathEscape: () => true,
    SkillNotFound: () => false,
    FileTooLarge: () => false,
    BinaryFile: () => false,
    InvalidArgument: () => false,
    MalformedFrontmatter: () => false,
    SkillUnreadable: () => false,
  }),
)

/**
 * The JSON-RPC error for a failed protocol method. For a method on a resource `uri`, a failure
 * meaning nothing is served there carries `data: { uri }`, as MCP's specification recommends,
 * when the URI is at most MAX_ECHO characters (a refusal never repeats more of a client's value).
 */
export const toProtocolError = (cause: Cause.Cause<SkillError>, uri?: string): ProtocolError =>
  Option.match(Cause.failureOption(cause), {
    onSome: (error) =>
      uri !== undefined && uri.length <= MAX_ECHO && isResourceNotFound(error)
        ? new ProtocolError(errorCodeOf(error), error.message, { uri })
        : new ProtocolError(errorCodeOf(error), error.message),
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

/** Decodes tool arguments strictly (unknown arguments are refused); failures name the argument. */
export const decodeArguments =
  <A, I>(schema: Schema.Schema<A, I>) =>
  (input: unknown): Effect.Effect<A, InvalidArgument> =>
    Schema.decodeUnknown(schema, { errors: "first", onExcessProperty: "error" })(input ?? {}).pipe(
      Effect.mapError((error) => {
        const issue = ParseResult.ArrayFormatter.formatErrorSync(error)[0]
        const argument =
          issue === undefined || issue.path.length === 0 ? "arguments" : issue.path.map(String).join(".")
        return new InvalidArgument({
          argument,
          reason: issueMessage(issue?.message, "does not match the input schema"),
        })
      }),
    )

/** Decodes protocol parameters; a mismatch is JSON-RPC -32602 naming the field. */
export const decodeParams =
  <A, I>(schema: Schema.Schema<A, I>, method: string) =>
  (input: unknown): Either.Either<A, ProtocolError> =>
    Either.mapLeft(Schema.decodeUnknownEither(schema, { errors: "first" })(input ?? {}), (error) => {
      const issue = ParseResult.ArrayFormatter.formatErrorSync(error)[0]
      const field =
        issue === undefined || issue.path.length === 0 ? "params" : issue.path.map(String).join(".")
      return new ProtocolError(
        ErrorCode.InvalidParams,
        `Invalid ${method} params: '${field}' ${issueMessage(issue?.message, "does not match")}`,
      )
    })

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

export const makeRunner = <R>(): Effect.Effect<Runner<R>, never, R> =>
  Effect.map(Effect.runtime<R>(), (runtime) => {
    /** Runs a request's effect to its exit; a defect is logged with its cause on stderr. */
    const run = <A, E>(effect: Effect.Effect<A, E, R>, signal: AbortSignal): Promise<Exit.Exit<A, E>> =>
      Runtime.runPromiseExit(runtime)(logDefects(effect), { signal })
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
  })
