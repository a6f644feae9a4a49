/**
 * The MCP boundary: typed failures become readable results, defects a generic one with the
 * cause logged (on the server's logger, which writes to stderr), never the cause itself.
 */

import { describe, expect, it } from "@effect/vitest"
import { ErrorCode } from "@modelcontextprotocol/sdk/types.js"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import { SkillNotFound } from "../src/Errors.js"
import { INTERNAL_ERROR_TEXT, makeRunner, ProtocolError } from "../src/mcp/Run.js"
import { makeCalls } from "../src/platform/EventLoop.js"

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

  it.effect("counts each request as a call while it runs, failed or not", () =>
    Effect.gen(function* () {
      const calls = makeCalls()
      const runner = yield* makeRunner<never>({ calls })
      const signal = new AbortController().signal
      const quietInside: Array<number> = []
      const seen = Effect.sync(() => quietInside.push(calls.quietFor()))
      yield* Effect.promise(() =>
        Promise.all([
          runner.tool(
            Effect.zipRight(seen, Effect.fail(new SkillNotFound({ query: "x", suggestions: [] }))),
            signal,
          ),
          runner.request(Effect.zipRight(seen, Effect.die(new Error("boom"))), signal).catch(() => undefined),
        ]),
      )
      expect(quietInside).toEqual([0, 0])
      // Both ended: the calls are quiet again.
      expect(calls.quietFor()).toBeGreaterThan(0)
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
      // The limit is a plain timer (cheaper per request than an Effect race): a short one here.
      const runner = yield* makeRunner<never>({ timeoutMs: 50 })
      const signal = new AbortController().signal
      let stopped = false
      const never = Effect.onInterrupt(Effect.never, () =>
        Effect.sync(() => {
          stopped = true
        }),
      )
      const [result, failure] = yield* Effect.promise(() =>
        Promise.all([
          runner.tool(never, signal),
          runner.request(never, signal).then(
            () => undefined,
            (error: unknown) => error,
          ),
        ]),
      )
      expect(result.isError).toBe(true)
      expect(JSON.stringify(result.content)).toContain("longer than 0.05 s")
      expect(failure).toBeInstanceOf(ProtocolError)
      expect(failure).toMatchObject({ code: ErrorCode.InternalError })
      expect(String((failure as ProtocolError).message)).toContain("longer than 0.05 s")
      // Its work was interrupted, not left running.
      expect(stopped).toBe(true)
    }),
  )
})
