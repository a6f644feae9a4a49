/**
 * A stdio transport for the MCP SDK, written for what the SDK's own one (1.x) does not do:
 * - a line over the size limit is discarded and answered with a JSON-RPC error (the SDK's
 *   closes itself silently once its buffer passes 10 MiB);
 * - invalid JSON is answered with -32700 and a non-JSON-RPC message with -32600;
 * - end of input is reported (`onEnd`) instead of being ignored, and the requests still in
 *   flight are known (`pending`) so their responses can be written before the process exits;
 * - reading pauses while MAX_IN_FLIGHT requests are unanswered: a client that sends thousands
 *   at once waits in the pipe instead of in the server's memory; a request reusing the id of
 *   one in flight (which would escape that count) is refused, as is a second `initialize`;
 * - a message nested deeper than MAX_NESTING levels is refused before it is parsed into
 *   something the SDK would overflow its stack on.
 */
import type { Readable, Writable } from "node:stream"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import type { JSONRPCMessage, RequestId } from "@modelcontextprotocol/sdk/types.js"
import { ErrorCode, JSONRPCMessageSchema } from "@modelcontextprotocol/sdk/types.js"

/** Largest JSON-RPC message accepted on stdin. A skills request is a few hundred bytes. */
export const DEFAULT_MAX_MESSAGE_BYTES = 1024 * 1024

export interface LineTransportOptions {
  readonly maxMessageBytes?: number
  /** Called once when the input ends (the client closed stdin). */
  readonly onEnd?: () => void
  /** Gives each message about to be written the chance to be replaced (default: as is). */
  readonly outgoing?: (message: JSONRPCMessage) => JSONRPCMessage
}

const NEWLINE = 0x0a
/**
 * Requests in flight at which reading pauses; it resumes when half of them are answered. An
 * editor has a few requests out at a time; more in flight only keep more half-done work in
 * memory (the thread pool has four threads). At 10,000 skills, a burst of 1,000 `get_skill`
 * calls peaked at 140 MB with 128 in flight, 131 with 32 and 124 with 16, and took no longer
 * (medians of four starts each: 1,020, 977 and 965 ms); 8 saved nothing more and was slower.
 */
export const MAX_IN_FLIGHT = 16

/** Deepest nesting of arrays and objects accepted in a message; MCP messages are shallow. */
export const MAX_NESTING = 64

/** True when the JSON text nests arrays or objects deeper than `limit` (strings skipped). */
export const nestsDeeperThan = (text: string, limit: number): boolean => {
  let depth = 0
  let inString = false
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index)
    if (inString) {
      if (code === 0x5c)
        index++ // backslash: skip the escaped character
      else if (code === 0x22) inString = false
    } else if (code === 0x22) inString = true
    else if (code === 0x7b || code === 0x5b) {
      if (++depth > limit) return true
    } else if (code === 0x7d || code === 0x5d) depth--
  }
  return false
}

/** Reads the `id` of a truncated request from its first bytes, when it comes before `params`. */
export const peekRequestId = (head: string): RequestId | null => {
  const match = /"id"\s*:\s*(-?\d{1,15}|"(?:[^"\\]|\\.){0,200}")/.exec(head)
  if (match === null || match[1] === undefined) return null
  const params = head.indexOf('"params"')
  if (params !== -1 && params < match.index) return null
  try {
    const value: unknown = JSON.parse(match[1])
    return typeof value === "string" || typeof value === "number" ? value : null
  } catch {
    return null
  }
}

const errorResponse = (id: RequestId | null, code: number, message: string) => ({
  jsonrpc: "2.0" as const,
  id,
  error: { code, message },
})

export class LineTransport implements Transport {
  onclose?: (() => void) | undefined
  onerror?: ((error: Error) => void) | undefined
  onmessage?: (<T extends JSONRPCMessage>(message: T) => void) | undefined

  private readonly maxMessageBytes: number
  private chunks: Array<Buffer> = []
  private buffered = 0
  /** Bytes of an oversized line seen so far; its first bytes are kept to find its id. */
  private oversized: { bytes: number; head: string } | null = null
  /** Requests read and not yet answered, with when each was read (performance.now()), oldest first. */
  private readonly inFlight = new Map<RequestId, number>()
  /** Input read but not yet parsed, held while reading is paused. */
  private backlog: Buffer | null = null
  private paused = false
  private drainWaiters: Array<() => void> = []
  private ended = false
  private closed = false
  /** The id of the `initialize` request being answered, then true once one was answered. */
  private initialize: RequestId | boolean = false

  constructor(
    private readonly input: Readable,
    private readonly output: Writable,
    private readonly options: LineTransportOptions = {},
  ) {
    this.maxMessageBytes = options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES
  }

  async start(): Promise<void> {
    this.input.on("data", this.onData)
    this.input.on("end", this.onInputEnd)
    this.input.on("close", this.onInputEnd)
    this.input.on("error", this.onInputError)
    this.output.on("error", this.onOutputError)
  }

  /** Requests received since the start. */
  get received(): number {
    return this.receivedCount
  }
  private receivedCount = 0

  /** Requests received and not yet answered. */
  get pending(): number {
    return this.inFlight.size
  }

  /** How long the oldest request not yet answered has waited, in ms; 0 when none waits. */
  oldestWaitMs(): number {
    const oldest = this.inFlight.values().next()
    return oldest.done === true ? 0 : performance.now() - oldest.value
  }

  /** When (performance.now()) the last message was written. */
  get lastSent(): number {
    return this.lastSentAt
  }
  private lastSentAt = 0

  /** Resolves when every request received so far has been answered. */
  whenIdle(): Promise<void> {
    if (this.inFlight.size === 0 && this.backlog === null) return Promise.resolve()
    return new Promise((resolve) => this.drainWaiters.push(resolve))
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.closed) return
    if ("id" in message && ("result" in message || "error" in message) && message.id !== undefined) {
      if (this.initialize === message.id) this.initialize = "result" in message
      this.settle(message.id)
    }
    const line = `${JSON.stringify(this.options.outgoing?.(message) ?? message)}\n`
    this.lastSentAt = performance.now()
    if (!this.output.write(line)) await this.outputDrained()
  }

  /** One shared wait for the output to drain, however many sends are waiting for it. */
  private drainWait: Promise<void> | null = null
  private outputDrained(): Promise<void> {
    if (this.drainWait === null) {
      this.drainWait = new Promise<void>((resolve) => {
        const done = () => {
          this.output.off("drain", done)
          this.output.off("close", done)
          this.drainWait = null
          resolve()
        }
        this.output.on("drain", done)
        this.output.on("close", done)
      })
    }
    return this.drainWait
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.input.off("data", this.onData)
    this.input.off("end", this.onInputEnd)
    this.input.off("close", this.onInputEnd)
    this.input.off("error", this.onInputError)
    this.output.off("error", this.onOutputError)
    this.input.pause()
    this.chunks = []
    this.inFlight.clear()
    this.releaseWaiters()
    this.onclose?.()
  }

  private settle(id: RequestId) {
    this.inFlight.delete(id)
    if (this.paused && this.inFlight.size <= MAX_IN_FLIGHT / 2) this.unpause()
    this.checkIdle()
  }

  /** Idle: every request read so far is answered and no read input waits to be parsed. */
  private checkIdle() {
    if (this.inFlight.size === 0 && this.backlog === null) this.releaseWaiters()
  }

  private unpause() {
    this.paused = false
    const backlog = this.backlog
    // Still counted as waiting input until parsed (see checkIdle).
    this.backlog = backlog === null ? null : Buffer.alloc(0)
    // Later, not inside the response being sent: parse what was held, then read on.
    setImmediate(() => {
      if (this.backlog !== null && this.backlog.length === 0) this.backlog = null
      if (backlog !== null) this.onData(backlog)
      if (!this.paused && !this.closed) this.input.resume()
      this.checkIdle()
    })
  }

  private releaseWaiters() {
    const waiters = this.drainWaiters
    this.drainWaiters = []
    for (const resolve of waiters) resolve()
  }

  private readonly onData = (chunk: Buffer | string) => {
    let data = typeof chunk === "string" ? Buffer.from(chunk) : chunk
    while (data.length > 0 && !this.closed) {
      if (this.paused) {
        this.backlog = this.backlog === null ? data : Buffer.concat([this.backlog, data])
        return
      }
      const newline = data.indexOf(NEWLINE)
      const part = newline === -1 ? data : data.subarray(0, newline)
      if (this.oversized !== null) {
        this.oversized.bytes += part.length
      } else if (this.buffered + part.length > this.maxMessageBytes) {
        const head = Buffer.concat([...this.chunks, part.subarray(0, 4096)]).toString("utf8", 0, 4096)
        this.oversized = { bytes: this.buffered + part.length, head }
        this.chunks = []
        this.buffered = 0
      } else if (part.length > 0) {
        this.chunks.push(part)
        this.buffered += part.length
      }
      if (newline === -1) return
      data = data.subarray(newline + 1)
      this.endOfLine()
    }
  }

  private endOfLine() {
    if (this.oversized !== null) {
      const { bytes, head } = this.oversized
      this.oversized = null
      this.reply(
        errorResponse(
          peekRequestId(head),
          ErrorCode.InvalidRequest,
          `Message too large: ${bytes} bytes; this server accepts at most ${this.maxMessageBytes} bytes per message.`,
        ),
      )
      return
    }
    const line = Buffer.concat(this.chunks).toString("utf8")
    this.chunks = []
    this.buffered = 0
    if (line.trim() === "") return
    if (nestsDeeperThan(line, MAX_NESTING)) {
      this.reply(
        errorResponse(
          peekRequestId(line.slice(0, 4096)),
          ErrorCode.InvalidRequest,
          `Invalid request: nested deeper than ${MAX_NESTING} levels.`,
        ),
      )
      return
    }
    let json: unknown
    try {
      json = JSON.parse(line)
    } catch (error) {
      const reason = error instanceof Error ? error.message : "invalid JSON"
      this.reply(errorResponse(null, ErrorCode.ParseError, `Parse error: ${reason}`))
      return
    }
    const parsed = JSONRPCMessageSchema.safeParse(json)
    if (!parsed.success) {
      const id = typeof json === "object" && json !== null && "id" in json ? json.id : null
      this.reply(
        errorResponse(
          typeof id === "string" || typeof id === "number" ? id : null,
          ErrorCode.InvalidRequest,
          "Invalid request: expected a JSON-RPC 2.0 request, notification or response object.",
        ),
      )
      return
    }
    const message = parsed.data
    if ("method" in message && "id" in message) {
      const refusal = this.inFlight.has(message.id)
        ? `Invalid request: id ${JSON.stringify(message.id).slice(0, 100)} is already in use by a request in flight.`
        : message.method === "initialize" && this.initialize !== false
          ? "Invalid request: the session is already initialized (or being initialized)."
          : undefined
      if (refusal !== undefined) {
        this.reply(errorResponse(message.id, ErrorCode.InvalidRequest, refusal))
        return
      }
      if (message.method === "initialize") this.initialize = message.id
      this.receivedCount++
      this.inFlight.set(message.id, performance.now())
      if (this.inFlight.size >= MAX_IN_FLIGHT && !this.paused) {
        this.paused = true
        this.input.pause()
      }
    }
    if ("method" in message && message.method === "notifications/cancelled") {
      const requestId = message.params?.requestId
      if (typeof requestId === "string" || typeof requestId === "number") this.settle(requestId)
    }
    try {
      this.onmessage?.(message)
    } catch (error) {
      // The rest of the input is still read; a request that could not be taken is answered.
      this.onerror?.(error instanceof Error ? error : new Error(String(error)))
      if ("method" in message && "id" in message) {
        this.reply(
          errorResponse(
            message.id,
            ErrorCode.InternalError,
            "Internal error: the request could not be handled.",
          ),
        )
        this.settle(message.id)
      }
    }
  }

  private reply(message: ReturnType<typeof errorResponse>) {
    const line = `${JSON.stringify(message)}\n`
    this.output.write(line)
  }

  private readonly onInputEnd = () => {
    if (this.ended) return
    this.ended = true
    this.options.onEnd?.()
  }

  private readonly onInputError = (error: Error) => {
    this.onerror?.(error)
    this.onInputEnd()
  }

  private readonly onOutputError = (error: Error) => {
    // The client went away (EPIPE): nothing more can be written.
    this.onerror?.(error)
    this.onInputEnd()
  }
}
