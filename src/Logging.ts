/**
 * Logging: every log line goes to stderr. stdout belongs to JSON-RPC (`serve`) or to the
 * command's own output (`list`, `validate`, `instructions`).
 */
import { Layer, Logger, LogLevel } from "effect"

/** JSON lines on stderr, for the server (MCP clients keep stderr in their logs). */
export const StderrJsonLogging = Layer.mergeAll(
  Logger.replace(Logger.defaultLogger, Logger.withConsoleError(Logger.jsonLogger)),
  Logger.minimumLogLevel(LogLevel.Info),
)

/** `level=... message=...` lines on stderr, for the one-shot commands. */
export const StderrTextLogging = Layer.mergeAll(
  Logger.replace(Logger.defaultLogger, Logger.withConsoleError(Logger.logfmtLogger)),
  Logger.minimumLogLevel(LogLevel.Warning),
)
