/**
 * A stdio transport for the MCP SDK, written for what the SDK's own one (1.x) does not do:
 * - a line over the size limit is discarded and answered with a JSON-RPC error (the SDK's
 *   closes itself silently once its buffer passes 10 MiB);
 * - invalid JSON is answered with -32700 and a non-JSON-RPC message with -32600;
 * - end of input is reported (`onEnd`) instead of being ignored, and the requests still in
 *   flight are known (`pending`) so their responses can be delivered before the process exits;
 * - a request counts as in flight until its answer is flushed to the output (the write's
 *   callback ran), not merely handed to the stream;
 * - reading pauses while MAX_IN_FLIGHT requests are in flight, and while the output is backed
 *   up (a write returned false, until 'drain'): a client that sends thousands at once, or stops
 *   reading its input, waits in the pipe instead of in the server's memory; a request reusing
 *   the id of one in flight (which would escape that count) is refused, as is a second
 *   `initialize`;
 * - a message nested deeper than MAX_NESTING levels is refused before it is parsed into
 *   something the SDK would overflow its stack on;
 * - a message refused unparsed (too large, too deep) is answered with its own id when the id
 *   can be found anywhere in it (src/mcp/RequestId.ts).
 */
import type { Readable, Writable } from "node:stream"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import type { JSONRPCMessage, RequestId } from "@modelcontextprotocol/sdk/types.js"
import { ErrorCode, JSONRPCMessageSchema } from "@modelcontextprotocol/sdk/types.js"
import { findRequestId, RequestIdScanner } from "./RequestId.js"

/** Largest JSON-RPC message accepted on stdin. A skills request is a few hundred bytes. */
const DEFAULT_MAX_MESSAGE_BYTES = 1024 * 1024

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
 * memory (the thread pool has four threads).
 */
export const MAX_IN_FLIGHT = 16

/** Deepest nesting of arrays and objects accepted in a message; MCP messages are shallow. */
const MAX_NESTING = 64

/** True when the JSON text nests arrays or objects deeper than `limit` (strings skipped). */
const nestsDeeperThan = (text: string, limit: number): boolean => {
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

const errorResponse = (id: RequestId | null, code: number, message: string) => ({
  jsonrpc: "2.0" as const,
  id,
  error: { code, message },
})

/** A request read and not yet answered, or answered and its answer not yet flushed. */
interface InFlight {
  /** Its answer is written, waiting to be flushed. */
  answered: boolean
}

export class LineTransport implements Transport {
  onclose?: (() => void) | undefined
  onerror?: ((error: Error) => void) | undefined
  onmessage?: (<T extends JSONRPCMessage>(message: T) => void) | undefined

  private readonly maxMessageBytes: number
  private chunks: Array<Buffer> = []
  private buffered = 0
  /** An oversized line being discarded: its size so far, and the search for its id. */
  private oversized: { bytes: number; id: RequestIdScanner } | null = null
  /** Requests in flight (until their answer is flushed), oldest first. */
  private readonly inFlight = new Map<RequestId, InFlight>()
  /** Messages written and not yet flushed (answers, notifications, refusals). */
  private unflushedCount = 0
  /** Input read but not yet parsed, held while reading is paused. */
  private backlog: Buffer | null = null
  /** Reading is paused (for either reason below). */
  private paused = false
  /** MAX_IN_FLIGHT requests were in flight; reading waits until half of them are answered. */
  private full = false
  private drainWaiters: Array<() => void> = []
  private ended = false
  private closed = false
  /** The output failed (the client went away): nothing more is read. */
  private outputGone = false
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
    this.output.on("drain", this.readOn)
  }

  /** Requests received whose answer is not yet flushed to the output. */
  get pending(): number {
    return this.inFlight.size
  }

  /** Requests received and not yet answered (their answer not even written). */
  get unanswered(): number {
    let count = 0
    for (const request of this.inFlight.values()) if (!request.answered) count++
    return count
  }

  /** When (performance.now()) the output last took a message (its write's callback ran). */
  get lastFlushed(): number {
    return this.lastFlushedAt
  }
  private lastFlushedAt = 0

  /** Resolves when every request received so far is answered and every message flushed. */
  whenIdle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve()
    return new Promise((resolve) => this.drainWaiters.push(resolve))
  }

  /** Resolves once the message is flushed to the output (or the output failed). */
  async send(message: JSONRPCMessage): Promise<void> {
    if (this.closed) return
    let answers: RequestId | undefined
    if ("id" in message && ("result" in message || "error" in message) && message.id !== undefined) {
      if (this.initialize === message.id) this.initialize = "result" in message
      answers = message.id
    }
    await this.write(this.options.outgoing?.(message) ?? message, answers)
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.input.off("data", this.onData)
    this.input.off("end", this.onInputEnd)
    this.input.off("close", this.onInputEnd)
    this.input.off("error", this.onInputError)
    this.output.off("error", this.onOutputError)
    this.output.off("drain", this.readOn)
    this.input.pause()
    this.chunks = []
    this.inFlight.clear()
    this.releaseWaiters()
    this.onclose?.()
  }

  /**
   * Writes one message. The request it answers stays in flight until the output has taken the
   * line; while the output is backed up, reading pauses (resumed on 'drain', see `readOn`).
   */
  private write(message: unknown, answers?: RequestId): Promise<void> {
    const request = answers === undefined ? undefined : this.inFlight.get(answers)
    if (request !== undefined) request.answered = true
    this.unflushedCount++
    return new Promise<void>((resolve) => {
      const taken = this.output.write(`${JSON.stringify(message)}\n`, () => {
        // Called once the line is flushed, or with an error once it never will be: either way
        // the request is done with (a failed output also ends the session, onOutputError).
        this.unflushedCount--
        this.lastFlushedAt = performance.now()
        // Only the request this answers: a cancelled one's id may be in use again.
        if (answers !== undefined && this.inFlight.get(answers) === request) this.inFlight.delete(answers)
        this.readOn()
        this.checkIdle()
        resolve()
      })
      if (!taken) this.pauseReading()
    })
  }

  /** Pauses reading while MAX_IN_FLIGHT requests are in flight, or while the output is backed up. */
  private pauseReading() {
    if (this.paused || this.closed) return
    this.paused = true
    this.input.pause()
  }

  /** Reading resumes once half of the requests in flight are answered and the output took its lines. */
  private readonly readOn = () => {
    if (this.full && this.inFlight.size <= MAX_IN_FLIGHT / 2) this.full = false
    if (this.paused && !this.full && !this.output.writableNeedDrain) this.unpause()
  }

  private settle(id: RequestId) {
    this.inFlight.delete(id)
    this.readOn()
    this.checkIdle()
  }

  private isIdle() {
    return this.inFlight.size === 0 && this.backlog === null && this.unflushedCount === 0
  }

  /** Idle: every request read is answered, every message flushed, no read input waits to be parsed. */
  private checkIdle() {
    if (this.isIdle()) this.releaseWaiters()
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
      if (!this.paused && !this.closed && !this.outputGone) this.input.resume()
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
    while (data.length > 0 && !this.closed && !this.outputGone) {
      if (this.paused) {
        this.backlog = this.backlog === null ? data : Buffer.concat([this.backlog, data])
        return
      }
      const newline = data.indexOf(NEWLINE)
      const part = newline === -1 ? data : data.subarray(0, newline)
      if (this.oversized !== null) {
        this.oversized.bytes += part.length
        this.oversized.id.feed(part)
      } else if (this.buffered + part.length > this.maxMessageBytes) {
        // Discarded as it streams in; only the search for its id goes on.
        const id = new RequestIdScanner()
        for (const kept of this.chunks) id.feed(kept)
        id.feed(part)
        this.oversized = { bytes: this.buffered + part.length, id }
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
      const { bytes, id } = this.oversized
      this.oversized = null
      this.reply(
        errorResponse(
          id.id,
          ErrorCode.InvalidRequest,
          `Message too large: ${bytes} bytes; this server accepts at most ${this.maxMessageBytes} bytes per message.`,
        ),
      )
      return
    }
    const bytes = Buffer.concat(this.chunks)
    const line = bytes.toString("utf8")
    this.chunks = []
    this.buffered = 0
    if (line.trim() === "") return
    if (nestsDeeperThan(line, MAX_NESTING)) {
      this.reply(
        errorResponse(
          findRequestId(bytes),
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
      this.inFlight.set(message.id, { answered: false })
      if (this.inFlight.size >= MAX_IN_FLIGHT) {
        this.full = true
        this.pauseReading()
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
          message.id,
        )
      }
    }
  }

  /** The transport's own answers (refusals), under the same rules as the server's. */
  private reply(message: ReturnType<typeof errorResponse>, answers?: RequestId) {
    void this.write(message, answers)
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
    // The client went away (EPIPE): nothing more can be written, so nothing more is read.
    this.outputGone = true
    this.input.pause()
    this.backlog = null
    this.onerror?.(error)
    this.onInputEnd()
    this.checkIdle()
  }
}
