/**
 * The executable: run one command line and exit with its code. Effect's error reporting and
 * pretty logger are off (they write to stdout); every log goes to stderr (src/Logging.ts).
 */
// Before every module that makes zod schemas, the MCP SDK's (src/ZodJitless.ts).
import "./ZodJitless.js"
import { runMain } from "@effect/platform-node/NodeRuntime"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { run } from "./Cli.js"
import { writeStderr } from "./Logging.js"

/** Exits once stdout has taken everything written to it (or after a second, if it is gone). */
const exitAfterFlush = (code: number) => {
  const finish = () => process.exit(code)
  if (process.stdout.writableLength === 0) return finish()
  process.stdout.once("drain", finish)
  setTimeout(finish, 1_000).unref()
}

let exitCode = 0

runMain(
  Effect.map(run(process.argv.slice(2)), (code) => {
    exitCode = code
  }),
  {
    disableErrorReporting: true,
    disablePrettyLogger: true,
    // Interrupted by SIGINT/SIGTERM: a clean stop.
    teardown: (exit) => exitAfterFlush(Exit.isSuccess(exit) ? exitCode : Exit.isInterrupted(exit) ? 0 : 1),
  },
)

// A defect outside every fiber must not kill the server, nor reach stdout.
process.on("uncaughtException", (error) => {
  writeStderr(`skills-mcp: uncaught exception: ${error.stack ?? error}\n`)
})
process.on("unhandledRejection", (reason) => {
  writeStderr(
    `skills-mcp: unhandled rejection: ${reason instanceof Error ? (reason.stack ?? reason) : String(reason)}\n`,
  )
})
