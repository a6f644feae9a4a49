#!/usr/bin/env node
/**
 * The build's code cache (`npm run build:bin` runs this after bundling): starts the freshly
 * built server (dist/bin.cjs) on fixtures/valid with an empty cache folder of its own, makes
 * one request of each kind an editor makes, ends its input, and keeps the code cache the
 * launcher wrote at exit as dist/skills-mcp.cjs.v8cache: the bundle's SHA-256, then V8's data.
 * The launcher (src/launch.ts) uses it whenever the user has no cache of their own yet. Only
 * Node's own modules are used; the server's stdout is read as JSON-RPC, its stderr left alone.
 */
import { spawn } from "node:child_process"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const PROJECT = fileURLToPath(new URL("..", import.meta.url))
const DIST = path.join(PROJECT, "dist")
const BUNDLE = path.join(DIST, "skills-mcp.cjs")
const TARGET = `${BUNDLE}.v8cache`
/** A request gets this long; the whole session takes well under a second. */
const REQUEST_TIMEOUT_MS = 20_000

/** One request of each kind, in an editor's order (the ids and URIs are fixtures/valid's). */
const session = [
  [
    "initialize",
    {
      protocolVersion: "2025-06-18",
      capabilities: { extensions: { "io.modelcontextprotocol/skills": {} } },
      clientInfo: { name: "skills-mcp-build", version: "1" },
    },
  ],
  ["tools/list", {}],
  ["tools/call", { name: "list_skills", arguments: {} }],
  ["tools/call", { name: "list_skills", arguments: { query: "pdf forms" } }],
  ["tools/call", { name: "get_skill", arguments: { id: "pdf-processing" } }],
  ["tools/call", { name: "get_skill", arguments: { id: "pdf-procesing" } }],
  [
    "tools/call",
    { name: "read_skill_file", arguments: { id: "pdf-processing", path: "references/forms.md" } },
  ],
  ["resources/list", {}],
  ["resources/read", { uri: "skill://pdf-processing/SKILL.md" }],
  ["prompts/list", {}],
  ["skills/list", {}],
  ["skills/get", { uri: "skill://pdf-processing/SKILL.md" }],
]

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "skills-mcp-code-cache-"))
const cacheDir = path.join(scratch, "cache")
let child
try {
  // A cache from an earlier build must not stand in for the one made now.
  fs.rmSync(TARGET, { force: true })
  child = spawn(
    process.execPath,
    [path.join(DIST, "bin.cjs"), "--skills-dir", path.join(PROJECT, "fixtures", "valid")],
    {
      cwd: PROJECT,
      // No NODE_OPTIONS: V8 records its flags in the cache and rejects it under others.
      env: { PATH: process.env.PATH ?? "", HOME: scratch, SKILLS_MCP_CACHE_DIR: cacheDir },
      stdio: ["pipe", "pipe", "ignore"],
    },
  )
  const exited = new Promise((resolve) => child.on("close", resolve))
  const answers = new Map()
  let buffered = ""
  child.stdout.setEncoding("utf8")
  child.stdout.on("data", (chunk) => {
    buffered += chunk
    for (let end = buffered.indexOf("\n"); end !== -1; end = buffered.indexOf("\n")) {
      const line = buffered.slice(0, end)
      buffered = buffered.slice(end + 1)
      let message
      try {
        message = JSON.parse(line)
      } catch {
        process.stderr.write(`code-cache: not JSON-RPC on the server's stdout: ${line.slice(0, 200)}\n`)
        child.kill()
        return
      }
      answers.get(message.id)?.(message)
    }
  })
  const request = (id, method, params) =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${method}: no answer`)), REQUEST_TIMEOUT_MS)
      answers.set(id, (message) => {
        clearTimeout(timer)
        resolve(message)
      })
      child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`)
    })
  for (const [index, [method, params]] of session.entries()) {
    const answer = await request(index + 1, method, params)
    if (answer.error !== undefined) throw new Error(`${method}: ${JSON.stringify(answer.error)}`)
    if (index === 0)
      child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })}\n`)
  }
  child.stdin.end()
  const code = await exited
  if (code !== 0) throw new Error(`the server exited with code ${code}`)
  const written = fs.readdirSync(cacheDir).filter((name) => name.endsWith(".v8cache"))
  if (written.length !== 1) throw new Error(`the server left ${written.length} code caches, not one`)
  const data = fs.readFileSync(path.join(cacheDir, written[0]))
  const digest = createHash("sha256").update(fs.readFileSync(BUNDLE)).digest()
  const temporary = `${TARGET}.${process.pid}.tmp`
  fs.writeFileSync(temporary, Buffer.concat([digest, data]), { mode: 0o644 })
  fs.renameSync(temporary, TARGET)
} catch (error) {
  process.stderr.write(`code-cache: ${error instanceof Error ? error.message : String(error)}\n`)
  process.exitCode = 1
} finally {
  child?.kill()
  fs.rmSync(scratch, { recursive: true, force: true })
}
