/**
 * Logging: every log line goes to stderr. stdout belongs to JSON-RPC (`serve`) or to the
 * command's own output (`list`, `validate`, `instructions`). Lines are written straight to
 * `process.stderr` (Effect's console loggers go through `console`, and its default ones to
 * stdout).
 */
import * as Cause from "effect/Cause"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import { forTerminal, linesForTerminal } from "./Terminal.js"

let stderrBroken = false

/**
 * Writes to stderr, the one way every module logs. When the reader of stderr has gone
 * (EPIPE), logging stops quietly: the server keeps answering on stdout. Without the error
 * listener the failed write would surface as an uncaught exception, whose report is itself
 * a write to stderr: a loop.
 */
export const writeStderr = (text: string): void => {
  if (stderrBroken) return
  if (process.stderr.listenerCount("error") === 0) {
    process.stderr.on("error", () => {
      stderrBroken = true
    })
  }
  try {
    process.stderr.write(text)
  } catch {
    stderrBroken = true
  }
}

const text = (message: unknown): string =>
  Array.isArray(message) ? message.map((part) => String(part)).join(" ") : String(message)

/** One JSON object per line: time, level, message, and the cause of a failure when there is one. */
const stderrJsonLogger = Logger.make(({ date, logLevel, message, cause }) => {
  const line: Record<string, string> = {
    time: date.toISOString(),
    level: logLevel.label,
    message: text(message),
  }
  if (!Cause.isEmpty(cause)) line.cause = Cause.pretty(cause, { renderErrorCause: true })
  writeStderr(`${JSON.stringify(line)}\n`)
})

/**
 * `skills-mcp: warning: message` lines, for people running the one-shot commands. Messages quote
 * folder and skill names: their control characters are shown escaped (src/Terminal.ts), so one
 * message is one line; a failure's trace keeps its own lines.
 */
export const stderrTextLogger = Logger.make(({ logLevel, message, cause }) => {
  const detail = Cause.isEmpty(cause)
    ? ""
    : `\n${linesForTerminal(Cause.pretty(cause, { renderErrorCause: true }))}`
  writeStderr(`skills-mcp: ${logLevel.label.toLowerCase()}: ${forTerminal(text(message))}${detail}\n`)
})

/** JSON lines on stderr, for the server (MCP clients keep stderr in their logs). */
export const StderrJsonLogging = Layer.mergeAll(
  Logger.replace(Logger.defaultLogger, stderrJsonLogger),
  Logger.minimumLogLevel(LogLevel.Info),
)

/** Readable lines on stderr, for the one-shot commands (warnings and errors only). */
export const StderrTextLogging = Layer.mergeAll(
  Logger.replace(Logger.defaultLogger, stderrTextLogger),
  Logger.minimumLogLevel(LogLevel.Warning),
)
