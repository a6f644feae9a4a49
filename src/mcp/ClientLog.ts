/**
 * ClientLog: log lines also go to the client (`notifications/message`), at or above the level it
 * set with `logging/setLevel` (default warning), once it has initialized.
 */
import type { Server } from "@modelcontextprotocol/sdk/server/index.js"
import type { LoggingLevel } from "@modelcontextprotocol/sdk/types.js"
import * as Logger from "effect/Logger"
import type * as LogLevel from "effect/LogLevel"
import * as Schema from "effect/Schema"
import { SERVER_NAME } from "../version.js"

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
export const SetLevelParams = Schema.Struct({ level: Schema.Literal(...LOGGING_LEVELS) })

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

/** The client log lines go to (once it has initialized), and the level it set. */
export interface ClientLog {
  level: LoggingLevel
  server: Server | undefined
}

export const clientLogger = (sink: ClientLog) =>
  Logger.make<unknown, void>(({ logLevel, message }) => {
    const level = levelOf(logLevel)
    if (sink.server === undefined || severity(level) < severity(sink.level)) return
    const text = Array.isArray(message) ? message.map(String).join(" ") : String(message)
    sink.server.sendLoggingMessage({ level, logger: SERVER_NAME, data: text }).catch(() => undefined)
  })
