/**
 * AuditLog: one JSON object per line on stderr for every access to skill content (tool calls,
 * resources/read, resources/directory/read, resources/subscribe, skills/get, prompts/get,
 * completion/complete): when, which client (and, over HTTP, from which address and which authenticated caller), what, which skill, path or URI, the outcome, how long.
 * A port: `AuditLog.stderr` in the server, an in-memory sink in tests.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { writeStderr } from "./Logging.js"

export interface AuditRecord {
  /** The tool, or the protocol method for non-tool operations. */
  readonly tool: string
  readonly skill?: string
  /** The commit the skill was served from, when it comes from a git source. */
  readonly commit?: string
  readonly path?: string
  /** The URI read or subscribed to; a prompt get's prompt and argument; a completion's ref and argument. */
  readonly uri?: string
  /** The client's name from `initialize` (clientInfo.name), when known. */
  readonly client?: string
  /** Over HTTP: the address the request came from (`ip:port`). */
  readonly remote?: string
  /** Over HTTP with `--auth`: who sent the request (a token's name, a JWT's subject). */
  readonly caller?: string
  /** `ok`, or the tag of the failure (`PathEscape`, `SkillNotFound`, `Defect`, ...). */
  readonly outcome: string
  /** Over HTTP, a POST refused before any handler (`outcome: "Refused"`): the HTTP status answered. */
  readonly status?: number
  readonly durationMs: number
}

export interface AuditLogShape {
  readonly record: (record: AuditRecord) => Effect.Effect<void>
}

/** A record's `durationMs`: the time since `started` (a `performance.now()`), to 0.01 ms. */
export const elapsedMs = (started: number): number => Math.round((performance.now() - started) * 100) / 100

/** The JSON line written for a record. */
export const formatAuditLine = (record: AuditRecord, time: Date): string =>
  `${JSON.stringify({ audit: true, time: time.toISOString(), ...record })}\n`

export class AuditLog extends Context.Tag("skills-mcp/AuditLog")<AuditLog, AuditLogShape>() {
  static readonly stderr: Layer.Layer<AuditLog> = Layer.succeed(AuditLog, {
    record: (record) =>
      Effect.sync(() => {
        writeStderr(formatAuditLine(record, new Date()))
      }),
  })

  static readonly silent: Layer.Layer<AuditLog> = Layer.succeed(AuditLog, { record: () => Effect.void })
}
