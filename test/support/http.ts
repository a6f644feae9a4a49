/**
 * End-to-end harness for `serve --http`: spawns the built bin on 127.0.0.1 and a free port
 * (unless the arguments say `--http`),
 * learns the address from its "Serving MCP over HTTP at ..." log line, and sends raw HTTP
 * requests (node:http, which lets a test set Host and Origin, and hold a body back).
 */
import type { ChildProcessWithoutNullStreams } from "node:child_process"
import { spawn } from "node:child_process"
import * as http from "node:http"
import { BIN } from "./server.js"

export interface HttpServer {
  readonly child: ChildProcessWithoutNullStreams
  /** http://HOST:PORT/mcp, as the server logged it */
  readonly url: string
  readonly port: number
  readonly stdout: () => string
  readonly stderr: () => string
  /** Resolves with the exit code once the process has exited. */
  readonly exited: Promise<number | null>
  /** SIGTERM, then the exit code. */
  readonly stop: () => Promise<number | null>
}

export const startHttpServer = (
  args: ReadonlyArray<string>,
  env: Record<string, string> = {},
): Promise<HttpServer> =>
  new Promise((resolve, reject) => {
    const listen = args.includes("--http") ? [] : ["--http", "127.0.0.1:0"]
    const child = spawn(process.execPath, [BIN, ...listen, ...args], {
      env: { PATH: process.env.PATH ?? "", ...env },
    })
    let stdout = ""
    let stderr = ""
    const exited = new Promise<number | null>((done) => child.on("close", (code) => done(code)))
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString("utf8")
    })
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8")
      const found = /Serving MCP over HTTP at (http:\/\/[^/\s]+:(\d+)\/mcp)/.exec(stderr)
      if (found?.[1] !== undefined && found[2] !== undefined) {
        resolve({
          child,
          url: found[1],
          port: Number(found[2]),
          stdout: () => stdout,
          stderr: () => stderr,
          exited,
          stop: () => {
            child.kill("SIGTERM")
            return exited
          },
        })
      }
    })
    child.on("error", reject)
    void exited.then((code) => reject(new Error(`the server exited (${code}) before listening:\n${stderr}`)))
  })

export interface HttpAnswer {
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
  readonly body: string
}

/** Headers an MCP client sends with a POST after initialize. */
export const MCP_HEADERS = {
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
  "mcp-protocol-version": "2025-06-18",
} as const

/** One request; `body` is sent whole (or, when a function, once the server said 100 Continue). */
export const send = (
  port: number,
  options: {
    readonly method?: string
    readonly path?: string
    readonly headers?: Record<string, string>
    readonly body?: string | Buffer
    /** Sends `Expect: 100-continue` and calls this once the server has taken the request in hand. */
    readonly onContinue?: (sendBody: () => void) => void
  } = {},
): Promise<HttpAnswer> =>
  new Promise((resolve, reject) => {
    const request = http.request(
      {
        host: "127.0.0.1",
        port,
        method: options.method ?? "GET",
        path: options.path ?? "/",
        headers: {
          host: `127.0.0.1:${port}`,
          ...(options.onContinue === undefined ? {} : { expect: "100-continue" }),
          ...options.headers,
        },
        agent: false,
      },
      (response) => {
        let body = ""
        response.on("data", (chunk: Buffer) => {
          body += chunk.toString("utf8")
        })
        response.on("end", () =>
          resolve({ status: response.statusCode ?? 0, headers: response.headers, body }),
        )
      },
    )
    request.on("error", reject)
    if (options.onContinue !== undefined) {
      const onContinue = options.onContinue
      request.on("continue", () => onContinue(() => request.end(options.body)))
    } else request.end(options.body)
  })

/** A JSON-RPC request body. */
export const rpc = (method: string, params: Record<string, unknown> = {}, id = 1) =>
  JSON.stringify({ jsonrpc: "2.0", id, method, params })

/** Waits until the server has read its skills folders (`/readyz` answers 200). */
export const whenReady = async (server: HttpServer): Promise<void> => {
  for (let tries = 0; tries < 400; tries++) {
    if ((await send(server.port, { path: "/readyz" })).status === 200) return
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  throw new Error(`the server was not ready after 10 s:\n${server.stderr()}`)
}
