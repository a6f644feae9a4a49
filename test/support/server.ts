/**
 * End-to-end harness: copies fixtures/ to a temporary folder (tests edit skills on disk),
 * spawns the built bin (dist/bin.cjs) under the MCP SDK's own Client over stdio, as an
 * editor would, and keeps what the server wrote to stderr.
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import type { CallToolResult, ClientCapabilities } from "@modelcontextprotocol/sdk/types.js"
import { CallToolResultSchema, McpError, ResultSchema } from "@modelcontextprotocol/sdk/types.js"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"

export const PROJECT = fileURLToPath(new URL("../..", import.meta.url))
export const BIN = path.join(PROJECT, "dist", "bin.cjs")
export const CANARY = "CANARY-SECRET-5f1c9e2a"

/** The ids of fixtures/valid's skills, in catalog order (by folder path: data/csv-analysis is third). */
export const VALID_SKILL_IDS = [
  "api-design",
  "brand-guidelines",
  "csv-analysis",
  "sql-queries",
  "git-commit-messages",
  "pdf-processing",
  "release-notes",
  "webapp-testing",
] as const

/** A private copy of fixtures/ (symbolic links kept as links). */
export const copyFixtures = async (): Promise<string> => {
  const dir = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "skills-mcp-e2e-")))
  await fs.cp(path.join(PROJECT, "fixtures"), dir, { recursive: true, verbatimSymlinks: true })
  await fs.mkdir(path.join(dir, "home"))
  return dir
}

export interface RunningServer {
  readonly client: Client
  /** Every notification the server sent, in order. */
  readonly notifications: Array<{ readonly method: string; readonly params?: unknown }>
  readonly transport: StdioClientTransport
  /** Everything the server wrote to stderr so far. */
  readonly stderr: () => string
  /** Every message the server sent, serialized, in order (to search for leaks). */
  readonly received: Array<string>
  /** Errors the client met reading stdout (a non-JSON-RPC line shows up here). */
  readonly protocolErrors: Array<Error>
  readonly close: () => Promise<void>
}

export const startServer = async (
  args: ReadonlyArray<string>,
  options: {
    readonly cwd?: string
    readonly env?: Record<string, string>
    readonly clientName?: string
    /** Capabilities the client declares (e.g. the Skills extension). */
    readonly capabilities?: ClientCapabilities
  } = {},
): Promise<RunningServer> => {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, ...args],
    stderr: "pipe",
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    env: { PATH: process.env.PATH ?? "", ...options.env },
  })
  let stderr = ""
  transport.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString("utf8")
  })
  const protocolErrors: Array<Error> = []
  const client = new Client(
    { name: options.clientName ?? "skills-mcp-e2e", version: "1.0.0" },
    { capabilities: options.capabilities ?? {} },
  )
  client.onerror = (error) => protocolErrors.push(error)
  const notifications: Array<{ method: string; params?: unknown }> = []
  client.fallbackNotificationHandler = async (notification) => {
    notifications.push(notification)
  }
  await client.connect(transport)
  const received: Array<string> = []
  const deliver = transport.onmessage
  transport.onmessage = (message) => {
    received.push(JSON.stringify(message))
    deliver?.(message)
  }
  return {
    received,
    client,
    transport,
    notifications,
    stderr: () => stderr,
    protocolErrors,
    close: () => client.close(),
  }
}

/** A tools/call answer, decoded with the SDK's schema. */
export const callTool = async (
  server: RunningServer,
  name: string,
  args: Record<string, unknown> = {},
): Promise<CallToolResult> =>
  CallToolResultSchema.parse(await server.client.callTool({ name, arguments: args }))

/** The text parts of a tool's answer, joined. */
export const toolText = (result: CallToolResult): string =>
  result.content.map((part) => (part.type === "text" ? part.text : "")).join("")

/** Decodes `value` with `schema`, or throws the parse error (prefixed with `what`). */
export const decode = <A, I>(schema: Schema.Schema<A, I>, value: unknown, what = "value"): A => {
  const decoded = Schema.decodeUnknownEither(schema)(value)
  if (Either.isLeft(decoded)) throw new Error(`${what} is malformed: ${decoded.left.message}`)
  return decoded.right
}

/** Any request, its result decoded with `schema` (`Schema.Unknown` keeps it whole). */
export const request = async <A, I>(
  server: RunningServer,
  method: string,
  params: Record<string, unknown>,
  schema: Schema.Schema<A, I>,
): Promise<A> =>
  decode(schema, await server.client.request({ method, params }, ResultSchema), `${method} result`)

/** The JSON-RPC error of a request that must fail (code, message, data). */
export const rpcError = async (
  server: RunningServer,
  method: string,
  params: Record<string, unknown>,
): Promise<McpError> => {
  try {
    await server.client.request({ method, params }, ResultSchema)
  } catch (error) {
    if (error instanceof McpError) return error
    throw error
  }
  throw new Error(`${method} ${JSON.stringify(params)} succeeded; an error was expected`)
}

/** The bytes of a resource's first content, text or base64 blob. */
export const resourceBytes = async (server: RunningServer, uri: string): Promise<Buffer> => {
  const [content] = (await server.client.readResource({ uri })).contents
  if (content === undefined) throw new Error(`no content at ${uri}`)
  return "text" in content ? Buffer.from(content.text, "utf8") : Buffer.from(content.blob, "base64")
}

/** The text of a resource's first content (throws when it is missing or a blob). */
export const resourceText = async (server: RunningServer, uri: string): Promise<string> => {
  const [content] = (await server.client.readResource({ uri })).contents
  if (content === undefined || !("text" in content)) throw new Error(`no text content at ${uri}`)
  return content.text
}

/** Every skills/list page, following nextCursor, each decoded with `page`, and their entries. */
export const listAllSkills = async <
  P extends { readonly skills: ReadonlyArray<unknown>; readonly nextCursor?: string | undefined },
  I,
>(
  server: RunningServer,
  page: Schema.Schema<P, I>,
): Promise<{ readonly entries: Array<P["skills"][number]>; readonly pages: Array<P> }> => {
  const pages: Array<P> = []
  let cursor: string | undefined
  do {
    const next = await request(server, "skills/list", cursor === undefined ? {} : { cursor }, page)
    pages.push(next)
    cursor = next.nextCursor
  } while (cursor !== undefined)
  return { entries: pages.flatMap((each) => [...each.skills]), pages }
}

export interface RawRun {
  readonly stdout: string
  readonly stderr: string
  readonly code: number | null
}

/**
 * Writes `lines` to the bin's stdin, closes it, and waits for the process to exit, like
 * `printf '...' | skills-mcp`.
 */
export const runRaw = (
  args: ReadonlyArray<string>,
  lines: ReadonlyArray<string>,
  env: Record<string, string> = {},
  options: {
    readonly closeStderr?: boolean
    /** Run as this user and group (e.g. nobody, to test unreadable files when the tests run as root). */
    readonly uid?: number
    readonly gid?: number
  } = {},
) =>
  new Promise<RawRun>((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { PATH: process.env.PATH ?? "", ...env },
      ...(options.uid === undefined ? {} : { uid: options.uid }),
      ...(options.gid === undefined ? {} : { gid: options.gid }),
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString("utf8")
    })
    // A reader that goes away: every later write of the server to stderr fails with EPIPE.
    if (options.closeStderr === true) child.stderr.destroy()
    else
      child.stderr.on("data", (chunk: Buffer) => {
        stderr += chunk.toString("utf8")
      })
    child.on("error", reject)
    child.on("close", (code) => resolve({ stdout, stderr, code }))
    child.stdin.end(lines.map((line) => `${line}\n`).join(""))
  })

export const initializeLine = (id: number | string = 0, capabilities: Record<string, unknown> = {}) =>
  JSON.stringify({
    jsonrpc: "2.0",
    id,
    method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities, clientInfo: { name: "raw", version: "1" } },
  })

/** Every stdout line parsed; throws on a line that is not a JSON-RPC message. */
export const jsonRpcLines = (stdout: string): Array<Record<string, unknown>> =>
  stdout
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => {
      const parsed: unknown = JSON.parse(line)
      if (
        typeof parsed !== "object" ||
        parsed === null ||
        !("jsonrpc" in parsed) ||
        parsed.jsonrpc !== "2.0"
      ) {
        throw new Error(`not a JSON-RPC line on stdout: ${line}`)
      }
      return parsed as Record<string, unknown>
    })

/** Waits until `check` passes (it throws until then), or fails with its last error after `timeoutMs`. */
export const eventually = async <A>(check: () => A | Promise<A>, timeoutMs = 10_000): Promise<A> => {
  const started = Date.now()
  for (;;) {
    try {
      return await check()
    } catch (error) {
      if (Date.now() - started > timeoutMs) throw error
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
  }
}
