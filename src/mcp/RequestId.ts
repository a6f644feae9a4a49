/**
 * Finds the `id` of a JSON-RPC request the transport will not parse (over the size limit, or
 * nested too deeply), so that its refusal carries the id the client waits on. The text is fed
 * as it streams in and never kept: the scanner follows strings, escapes and nesting across
 * chunks, and keeps only the key or value it is reading at the top level of the object. The
 * id may come anywhere in the object (the MCP SDK's client writes it after `params`); an `"id"`
 * inside `params`, or inside a string, is not the request's.
 */
import type { RequestId } from "@modelcontextprotocol/sdk/types.js"

/** Longest string id kept, in characters (a longer one is not echoed: the answer's id is null). */
const MAX_ID_CHARS = 200
/** Most bytes of a top-level key or of an id kept while reading it (a string id with escapes). */
const MAX_TOKEN_BYTES = MAX_ID_CHARS * 6

const QUOTE = 0x22
const BACKSLASH = 0x5c
const COLON = 0x3a
const COMMA = 0x2c
const OPEN_OBJECT = 0x7b
const CLOSE_OBJECT = 0x7d
const OPEN_ARRAY = 0x5b
const CLOSE_ARRAY = 0x5d

/** A byte that may continue a JSON number (digits, sign, point, exponent). */
const inNumber = (byte: number) =>
  (byte >= 0x30 && byte <= 0x39) ||
  byte === 0x2d ||
  byte === 0x2b ||
  byte === 0x2e ||
  byte === 0x65 ||
  byte === 0x45
const isSpace = (byte: number) => byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0d

/** A top-level key, or the value of a top-level `"id"`, being read. */
interface Token {
  readonly kind: "key" | "string" | "number"
  readonly bytes: Array<number>
  long: boolean
}

export class RequestIdScanner {
  /** Nesting of objects and arrays: 1 is inside the message's own object. */
  private depth = 0
  /** "object" while inside the message, once its first bracket was `{`; "other" after it, or for an array. */
  private message: "before" | "object" | "other" = "before"
  private inString = false
  private escaped = false
  /** In the message's object: a key comes next, a value comes next, or neither (until `,`). */
  private next: "key" | "value" | "none" = "none"
  private keyIsId = false
  private token: Token | null = null
  private found: RequestId | null = null

  /** The id found so far (the last top-level `"id"` wins, as in `JSON.parse`), or null. */
  get id(): RequestId | null {
    return this.found
  }

  feed(bytes: Uint8Array): void {
    for (let index = 0; index < bytes.length; index++) {
      const byte = bytes[index] ?? 0
      if (this.inString) {
        if (this.escaped) this.escaped = false
        else if (byte === BACKSLASH) this.escaped = true
        else if (byte === QUOTE) {
          this.inString = false
          this.endString()
          continue
        }
        if (this.token !== null) this.keep(byte)
        continue
      }
      if (this.token !== null) {
        // Only a number is read outside a string: it ends at the first byte that is not its own.
        if (inNumber(byte)) {
          this.keep(byte)
          continue
        }
        this.endNumber()
      }
      if (byte === QUOTE) {
        this.inString = true
        if (this.depth === 1 && this.message === "object") {
          if (this.next === "key") this.token = { kind: "key", bytes: [], long: false }
          else if (this.next === "value" && this.keyIsId)
            this.token = { kind: "string", bytes: [], long: false }
        }
      } else if (byte === OPEN_OBJECT || byte === OPEN_ARRAY) {
        if (this.depth === 0)
          this.message = this.message === "before" && byte === OPEN_OBJECT ? "object" : "other"
        this.next = this.depth === 0 ? "key" : "none"
        this.depth++
      } else if (byte === CLOSE_OBJECT || byte === CLOSE_ARRAY) {
        this.depth--
        if (this.depth <= 0) {
          this.depth = 0
          this.message = "other"
        }
      } else if (this.depth !== 1 || isSpace(byte)) {
        // Nothing to follow below the top level, nor in white space.
      } else if (byte === COLON) {
        this.next = "value"
        if (this.keyIsId) this.found = null
      } else if (byte === COMMA) {
        this.next = "key"
        this.keyIsId = false
      } else if (this.next === "value" && this.keyIsId && this.message === "object" && inNumber(byte)) {
        this.token = { kind: "number", bytes: [byte], long: false }
      } else {
        this.next = "none"
      }
    }
  }

  private keep(byte: number) {
    const token = this.token
    if (token === null) return
    if (token.bytes.length < MAX_TOKEN_BYTES) token.bytes.push(byte)
    else token.long = true
  }

  private endString() {
    const token = this.token
    this.token = null
    if (this.depth !== 1) return
    this.next = "none"
    if (token === null) return
    const text = token.long ? null : decodeString(token.bytes)
    if (token.kind === "key") this.keyIsId = text === "id"
    else if (text !== null && text.length <= MAX_ID_CHARS) this.found = text
  }

  private endNumber() {
    const token = this.token
    this.token = null
    this.next = "none"
    if (token === null || token.long) return
    try {
      const value: unknown = JSON.parse(Buffer.from(token.bytes).toString("latin1"))
      if (typeof value === "number" && Number.isFinite(value)) this.found = value
    } catch {
      // Not a JSON number: no id.
    }
  }
}

/** The content of a JSON string (without its quotes), decoded; null when it is not valid JSON. */
const decodeString = (bytes: ReadonlyArray<number>): string | null => {
  try {
    const value: unknown = JSON.parse(`"${Buffer.from(bytes).toString("utf8")}"`)
    return typeof value === "string" ? value : null
  } catch {
    return null
  }
}

/** The top-level `id` of a whole message's text, or null (see RequestIdScanner). */
export const findRequestId = (text: Uint8Array | string): RequestId | null => {
  const scanner = new RequestIdScanner()
  scanner.feed(typeof text === "string" ? Buffer.from(text, "utf8") : text)
  return scanner.id
}
