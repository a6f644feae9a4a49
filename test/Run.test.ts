/**
 * The MCP boundary: typed failures become readable results, defects a generic one with the
 * cause logged (on the server's logger, which writes to stderr), never the cause itself.
 */

import { describe, expect, it } from "@effect/vitest"
import { ErrorCode } from "@modelcontextprotocol/sdk/types.js"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Logger from "effect/Logger"
import * as TestClock from "effect/TestClock"
import { SkillNotFound } from "../src/Errors.js"
import { INTERNAL_ERROR_TEXT, makeRunner, ProtocolError } from "../src/mcp/Run.js"

const capture = () => {
  const lines: Array<string> = []
  const logger = Logger.make(({ message, cause }) => {
    lines.push(`${String(message)} ${JSON.stringify(String(cause))}`)
  })
  return { lines, layer: Logger.replace(Logger.defaultLogger, logger) }
}

describe("the MCP boundary (Run)", () => {
  it.effect("maps a typed failure to an isError result with its message, logging nothing", () =>
    Effect.gen(function* () {
      const { lines, layer } = capture()
      const runner = yield* makeRunner<never>().pipe(Effect.provide(layer))
      const signal = new AbortController().signal
      const result = yield* Effect.promise(() =>
        runner.tool(Effect.fail(new SkillNotFound({ query: "nope", suggestions: [] })), signal),
      )
      expect(result.isError).toBe(true)
      expect(JSON.stringify(result.content)).toContain("Skill 'nope' not found.")
      expect(lines).toEqual([])
    }),
  )

  it.effect("answers a defect with a generic result and logs its cause", () =>
    Effect.gen(function* () {
      const { lines, layer } = capture()
      const runner = yield* makeRunner<never>().pipe(Effect.provide(layer))
      const signal = new AbortController().signal
      const result = yield* Effect.promise(() =>
        runner.tool(Effect.die(new Error("disk on fire /secret")), signal),
      )
      expect(result).toEqual({ isError: true, content: [{ type: "text", text: INTERNAL_ERROR_TEXT }] })
      expect(lines.join("\n")).toContain("disk on fire")
      const failure = yield* Effect.promise(() =>
        runner.request(Effect.die(new Error("again")), signal).then(
          () => undefined,
          (error: unknown) => error,
        ),
      )
      expect(failure).toBeInstanceOf(ProtocolError)
      expect(failure).toMatchObject({ code: ErrorCode.InternalError })
      expect(String((failure as ProtocolError).message)).not.toContain("again")
      expect(lines.join("\n")).toContain("again")
    }),
  )

  it.effect("stops a request past its time limit and answers why, as a tool result or a JSON-RPC error", () =>
    Effect.gen(function* () {
      const runner = yield* makeRunner<never>({ timeoutMs: 30_000 })
      const signal = new AbortController().signal
      const tool = yield* Effect.fork(Effect.promise(() => runner.tool(Effect.never, signal)))
      const request = yield* Effect.fork(
        Effect.promise(() =>
          runner.request(Effect.never, signal).then(
            () => undefined,
            (error: unknown) => error,
          ),
        ),
      )
      // Both requests are waiting on their time limit, then it passes.
      while (Chunk.size(yield* TestClock.sleeps()) < 2) yield* Effect.yieldNow()
      yield* TestClock.adjust("30 seconds")
      const result = yield* Fiber.join(tool)
      expect(result.isError).toBe(true)
      expect(JSON.stringify(result.content)).toContain("longer than 30 s")
      const failure = yield* Fiber.join(request)
      expect(failure).toBeInstanceOf(ProtocolError)
      expect(failure).toMatchObject({ code: ErrorCode.InternalError })
      expect(String((failure as ProtocolError).message)).toContain("longer than 30 s")
    }),
  )
})
