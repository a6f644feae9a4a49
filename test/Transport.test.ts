import { PassThrough, Writable } from "node:stream"
import { describe, expect, it } from "@effect/vitest"
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js"
import { findRequestId, RequestIdScanner } from "../src/mcp/RequestId.js"
import { LineTransport, MAX_IN_FLIGHT } from "../src/mcp/Transport.js"
import { heldOutput } from "./support/streams.js"

const setup = (maxMessageBytes = 200) => {
  const input = new PassThrough()
  const output = new PassThrough()
  const written: Array<unknown> = []
  output.on("data", (chunk: Buffer) => {
    for (const line of chunk.toString("utf8").split("\n")) if (line !== "") written.push(JSON.parse(line))
  })
  const received: Array<JSONRPCMessage> = []
  let ended = 0
  const transport = new LineTransport(input, output, { maxMessageBytes, onEnd: () => ended++ })
  transport.onmessage = (message) => received.push(message)
  return { input, output, written, received, transport, ended: () => ended }
}

const tick = () => new Promise((resolve) => setImmediate(resolve))

describe("LineTransport", () => {
  it("delivers messages split across chunks and joined in one chunk", async () => {
    const { input, received, transport } = setup()
    await transport.start()
    input.write('{"jsonrpc":"2.0","id":1,"meth')
    input.write('od":"ping"}\n{"jsonrpc":"2.0","method":"notifications/initialized"}\r\n')
    await tick()
    expect(received).toEqual([
      { jsonrpc: "2.0", id: 1, method: "ping" },
      { jsonrpc: "2.0", method: "notifications/initialized" },
    ])
  })

  it("answers invalid JSON with -32700 and a non-JSON-RPC object with -32600", async () => {
    const { input, written, received, transport } = setup()
    await transport.start()
    input.write('not json\n{"id":7,"hello":"world"}\n')
    await tick()
    expect(received).toEqual([])
    expect(written).toMatchObject([
      { jsonrpc: "2.0", id: null, error: { code: -32700 } },
      { jsonrpc: "2.0", id: 7, error: { code: -32600 } },
    ])
  })

  it("refuses a request reusing the id of one in flight, so floods of one id stay bounded", async () => {
    const { input, written, received, transport } = setup()
    await transport.start()
    input.write('{"jsonrpc":"2.0","id":7,"method":"ping"}\n{"jsonrpc":"2.0","id":7,"method":"ping"}\n')
    await tick()
    expect(received).toEqual([{ jsonrpc: "2.0", id: 7, method: "ping" }])
    expect(written).toMatchObject([
      { id: 7, error: { code: -32600, message: expect.stringContaining("already in use") } },
    ])
    expect(transport.pending).toBe(1)
    // Once answered, the id may be used again.
    await transport.send({ jsonrpc: "2.0", id: 7, result: {} })
    input.write('{"jsonrpc":"2.0","id":7,"method":"ping"}\n')
    await tick()
    expect(received).toHaveLength(2)
  })

  it("refuses a second initialize once one was answered", async () => {
    const { input, written, received, transport } = setup(2_000)
    await transport.start()
    const initialize = (id: number) =>
      `${JSON.stringify({ jsonrpc: "2.0", id, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: `c${id}`, version: "1" } } })}\n`
    input.write(initialize(1))
    await tick()
    await transport.send({ jsonrpc: "2.0", id: 1, result: {} })
    input.write(initialize(2))
    await tick()
    expect(received.map((message) => ("id" in message ? message.id : undefined))).toEqual([1])
    expect(written).toMatchObject([
      { id: 1 },
      { id: 2, error: { code: -32600, message: expect.stringContaining("already initialized") } },
    ])
  })

  it("refuses a message nested too deeply before parsing it, and reads on", async () => {
    const { input, written, received, transport } = setup(1_000_000)
    await transport.start()
    const deep = `${"[".repeat(100_000)}${"]".repeat(100_000)}`
    input.write(`{"jsonrpc":"2.0","id":"deep","method":"tools/call","params":{"arguments":{"x":${deep}}}}\n`)
    input.write(
      '{"jsonrpc":"2.0","id":2,"method":"ping","params":{"note":"[[[[ in a string is not nesting"}}\n',
    )
    await tick()
    expect(written).toMatchObject([
      { id: "deep", error: { code: -32600, message: expect.stringContaining("nested deeper") } },
    ])
    expect(received).toMatchObject([{ id: 2, method: "ping" }])
  })

  it("keeps reading after a message the server fails on, answering that request", async () => {
    const { input, written, transport } = setup()
    const received: Array<unknown> = []
    transport.onmessage = (message) => {
      if ("id" in message && message.id === 1) throw new RangeError("Maximum call stack size exceeded")
      received.push(message)
    }
    const errors: Array<string> = []
    transport.onerror = (error) => errors.push(error.message)
    await transport.start()
    input.write('{"jsonrpc":"2.0","id":1,"method":"ping"}\n{"jsonrpc":"2.0","id":2,"method":"ping"}\n')
    await tick()
    expect(received).toMatchObject([{ id: 2 }])
    expect(written).toMatchObject([{ id: 1, error: { code: -32603 } }])
    expect(errors).toEqual(["Maximum call stack size exceeded"])
    expect(transport.pending).toBe(1)
  })

  it("discards an oversized message, answers it with its id, and keeps reading", async () => {
    const { input, written, received, transport } = setup(200)
    await transport.start()
    input.write(`{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"x":"${"a".repeat(150)}`)
    input.write(`${"a".repeat(500)}"}}\n{"jsonrpc":"2.0","id":2,"method":"ping"}\n`)
    await tick()
    expect(written).toEqual([
      {
        jsonrpc: "2.0",
        id: "big",
        error: { code: -32600, message: expect.stringContaining("accepts at most 200 bytes") },
      },
    ])
    expect(received).toEqual([{ jsonrpc: "2.0", id: 2, method: "ping" }])
  })

  it("reports the end of input once and knows the requests still unanswered", async () => {
    const { input, transport, ended } = setup()
    await transport.start()
    input.write('{"jsonrpc":"2.0","id":1,"method":"ping"}\n{"jsonrpc":"2.0","id":2,"method":"ping"}\n')
    input.end()
    await tick()
    expect(ended()).toBe(1)
    expect(transport.pending).toBe(2)
    let idle = false
    const waiting = transport.whenIdle().then(() => {
      idle = true
    })
    await transport.send({ jsonrpc: "2.0", id: 1, result: {} })
    await tick()
    expect(idle).toBe(false)
    await transport.send({ jsonrpc: "2.0", id: 2, result: {} })
    await waiting
    expect(transport.pending).toBe(0)
  })

  it("forgets a cancelled request", async () => {
    const { input, transport } = setup()
    await transport.start()
    input.write('{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"x"}}\n')
    input.write('{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}\n')
    await tick()
    expect(transport.pending).toBe(0)
  })

  it("pauses reading at MAX_IN_FLIGHT unanswered requests, and answers all of them in order", async () => {
    const { input, written, transport, ended } = setup(10_000)
    const order: Array<unknown> = []
    let inFlight = 0
    let most = 0
    transport.onmessage = (message) => {
      if (!("id" in message) || message.id === undefined) return
      const id = message.id
      order.push(id)
      inFlight++
      most = Math.max(most, inFlight)
      // Answer later, a few at a time, like a busy server.
      setTimeout(
        () => {
          inFlight--
          void transport.send({ jsonrpc: "2.0", id, result: {} })
        },
        1 + (Number(id) % 5),
      )
    }
    await transport.start()
    const count = 2_000
    input.end(
      Array.from({ length: count }, (_, i) => `{"jsonrpc":"2.0","id":${i},"method":"ping"}\n`).join(""),
    )
    const idle = new Promise<void>((resolve) => {
      const check = () => (ended() > 0 ? void transport.whenIdle().then(resolve) : setTimeout(check, 5))
      check()
    })
    await idle
    expect(most).toBeLessThanOrEqual(MAX_IN_FLIGHT)
    expect(order).toEqual(Array.from({ length: count }, (_, i) => i))
    expect(written).toHaveLength(count)
    expect(transport.pending).toBe(0)
  })

  it("stops reading while the output is backed up, and counts a request until its answer is taken", async () => {
    const input = new PassThrough()
    const { output, taken, take } = heldOutput()
    const transport = new LineTransport(input, output)
    const received: Array<unknown> = []
    transport.onmessage = (message) => {
      if (!("id" in message) || message.id === undefined) return
      received.push(message.id)
      void transport.send({ jsonrpc: "2.0", id: message.id, result: {} })
    }
    await transport.start()
    const count = 40
    input.write(
      Array.from({ length: count }, (_, i) => `{"jsonrpc":"2.0","id":${i},"method":"ping"}\n`).join(""),
    )
    await tick()
    // The first answer waits for the output: nothing more is read, and request 0 is in flight.
    expect(received).toEqual([0])
    expect(transport.pending).toBe(1)
    await tick()
    expect(received).toEqual([0])
    take()
    expect(transport.pending).toBe(0)
    await tick()
    expect(received).toEqual([0, 1])
    expect(transport.pending).toBe(1)
    // The client reads on: every request is read, one answer at a time, each exactly once.
    for (let step = 0; step < 1_000 && taken.length < count; step++) {
      take()
      await tick()
    }
    expect(taken.map((line) => line.id)).toEqual(Array.from({ length: count }, (_, i) => i))
    expect(received).toHaveLength(count)
    expect(transport.pending).toBe(0)
  })

  it("holds reading for its own refusals too while the output is backed up", async () => {
    const input = new PassThrough()
    const { output, taken, take } = heldOutput()
    const transport = new LineTransport(input, output)
    const received: Array<unknown> = []
    transport.onmessage = (message) => received.push(message)
    await transport.start()
    input.write('not json\n{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    await tick()
    expect(received).toEqual([])
    take()
    await tick()
    expect(taken).toMatchObject([{ id: null, error: { code: -32700 } }])
    expect(received).toEqual([{ jsonrpc: "2.0", method: "notifications/initialized" }])
  })

  it("is idle only once the last answer is taken by the output", async () => {
    const input = new PassThrough()
    const { output, take } = heldOutput()
    const transport = new LineTransport(input, output)
    transport.onmessage = (message) => {
      if ("id" in message && message.id !== undefined)
        void transport.send({ jsonrpc: "2.0", id: message.id, result: {} })
    }
    await transport.start()
    input.end('{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
    await tick()
    let idle = false
    const waiting = transport.whenIdle().then(() => {
      idle = true
    })
    await tick()
    expect(idle).toBe(false)
    expect(transport.pending).toBe(1)
    expect(transport.unanswered).toBe(0)
    take()
    await waiting
    expect(transport.pending).toBe(0)
  })

  it("reads nothing more once the output has failed (the client went away), and winds down", async () => {
    const input = new PassThrough()
    const output = new Writable({
      write(_chunk, _encoding, callback) {
        callback(Object.assign(new Error("write EPIPE"), { code: "EPIPE" }))
      },
    })
    let ended = 0
    const transport = new LineTransport(input, output, { onEnd: () => ended++ })
    const received: Array<unknown> = []
    transport.onmessage = (message) => {
      if (!("id" in message) || message.id === undefined) return
      received.push(message.id)
      void transport.send({ jsonrpc: "2.0", id: message.id, result: {} })
    }
    transport.onerror = () => undefined
    await transport.start()
    input.write(Array.from({ length: 5 }, (_, i) => `{"jsonrpc":"2.0","id":${i},"method":"ping"}\n`).join(""))
    await transport.whenIdle()
    input.write('{"jsonrpc":"2.0","id":9,"method":"ping"}\n')
    await tick()
    expect(received).toEqual([0])
    expect(ended).toBe(1)
    expect(transport.pending).toBe(0)
  })

  it("answers an oversized request whose id comes after params with that id", async () => {
    const { input, written, transport } = setup(200)
    await transport.start()
    input.write(`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"get_skill","arguments":{"id":"`)
    input.write(`${"x".repeat(1_000)}"}},"id":`)
    input.write("17}\n")
    await tick()
    expect(written).toMatchObject([
      { id: 17, error: { code: -32600, message: expect.stringContaining("too large") } },
    ])
  })

  it("answers an over-nested request whose id comes last with that id", async () => {
    const { input, written, transport } = setup(1_000_000)
    await transport.start()
    const deep = `${"[".repeat(1_000)}${"]".repeat(1_000)}`
    input.write(`{"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"x":${deep}}},"id":"last"}\n`)
    await tick()
    expect(written).toMatchObject([{ id: "last", error: { code: -32600 } }])
  })
})

describe("RequestIdScanner", () => {
  /** Feeds the text in pieces of `size` bytes. */
  const scan = (text: string, size: number) => {
    const bytes = Buffer.from(text, "utf8")
    const scanner = new RequestIdScanner()
    for (let at = 0; at < bytes.length; at += size) scanner.feed(bytes.subarray(at, at + size))
    return scanner.id
  }
  const everyWay = (text: string) => [1, 2, 3, 7, 1_000_000].map((size) => scan(text, size))

  it("finds the top-level id before or after params", () => {
    expect(findRequestId('{"jsonrpc":"2.0","id":42,"method":"x","params":{"a":1}}')).toBe(42)
    expect(findRequestId('{"method":"tools/call","params":{"name":"x"},"jsonrpc":"2.0","id":7}')).toBe(7)
    expect(findRequestId('{ "params" : { } , "id" : -3 }')).toBe(-3)
    expect(findRequestId('{"params":{},"id":"req-1"}')).toBe("req-1")
  })

  it("finds it whatever the chunks, even split inside the key, the number or an escape", () => {
    expect(everyWay('{"params":{"q":"a\\"b"},"id":12345}')).toEqual([12345, 12345, 12345, 12345, 12345])
    expect(everyWay('{"params":{},"id":"a\\"b\\u00e9é"}')).toEqual(Array(5).fill('a"béé'))
  })

  it("ignores an id inside params, in nested objects or arrays, or inside a string", () => {
    expect(findRequestId('{"method":"x","params":{"id":1}}')).toBeNull()
    expect(findRequestId('{"method":"x","params":[{"id":1}]}')).toBeNull()
    expect(findRequestId('{"note":"\\"id\\": 5, ","method":"x"}')).toBeNull()
    expect(findRequestId('{"params":{"text":"{\\"id\\":9}","id":8},"id":"real"}')).toBe("real")
    expect(findRequestId('[{"jsonrpc":"2.0","id":1,"method":"x"}]')).toBeNull()
  })

  it("follows escaped quotes and backslashes in strings", () => {
    expect(findRequestId('{"params":{"s":"\\"}{\\\\","t":"\\\\"},"id":3}')).toBe(3)
    expect(findRequestId('{"\\u0069d":4,"params":{}}')).toBe(4)
  })

  it("gives null for an id that is null, not a number or string, or too long to echo", () => {
    expect(findRequestId('{"id":null,"params":{}}')).toBeNull()
    expect(findRequestId('{"id":{"a":1},"params":{}}')).toBeNull()
    expect(findRequestId('{"id":true}')).toBeNull()
    expect(findRequestId(`{"id":"${"i".repeat(201)}"}`)).toBeNull()
    expect(findRequestId(`{"id":"${"i".repeat(200)}"}`)).toBe("i".repeat(200))
    expect(findRequestId('{"params":{}')).toBeNull()
  })

  it("finds the id at the end of a long message fed in pieces", () => {
    const text = `{"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"id":"${'x\\"'.repeat(500_000)}"}},"id":99}`
    expect(scan(text, 65_536)).toBe(99)
  })
})
