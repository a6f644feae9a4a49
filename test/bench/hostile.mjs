#!/usr/bin/env node
/**
 * Memory under attack: drives the built bin over stdio with the hardening suite's worst cases
 * and prints resident memory (from /proc/<pid>/status) at each step:
 *   1. idle after initialize (baseline), on a tree with a 100,000-file skill and a
 *      100,000-entry group folder;
 *   2. after listing, directory-reading and skills/list over that tree;
 *   3. after 10 lines of 10 MB and 5,000 requests sent at once;
 *   4. 5 and 15 seconds later (V8's memory reducer shrinks the heap once allocation stops,
 *      after about 8 s), and the peak (VmHWM).
 * Usage: npm run build:bin && node test/bench/hostile.mjs
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const BIN = fileURLToPath(new URL("../../dist/bin.cjs", import.meta.url))
const ENTRIES = 100_000

const memory = async (pid) => {
  const status = await fs.readFile(`/proc/${pid}/status`, "utf8")
  const field = (name) => Number(status.match(new RegExp(`${name}:\\s+(\\d+)`))?.[1] ?? 0) / 1024
  return { rss: field("VmRSS"), peak: field("VmHWM") }
}

const makeTree = async () => {
  const root = await fs.mkdtemp(path.join(os.tmpdir(), "skills-mcp-hostile-bench-"))
  const skill = (name) => `---\nname: ${name}\ndescription: The ${name} skill.\n---\n\n# ${name}\n`
  await fs.mkdir(path.join(root, "crowded", "assets"), { recursive: true })
  await fs.writeFile(path.join(root, "crowded", "SKILL.md"), skill("crowded"))
  await fs.mkdir(path.join(root, "busy-group"))
  for (let start = 0; start < ENTRIES; start += 1_000) {
    await Promise.all(
      Array.from({ length: 1_000 }, (_, i) =>
        Promise.all([
          fs.writeFile(path.join(root, "crowded", "assets", `f${start + i}.txt`), "x"),
          fs.writeFile(path.join(root, "busy-group", `f${start + i}.txt`), ""),
        ]),
      ),
    )
  }
  for (let i = 0; i < 50; i++) {
    await fs.mkdir(path.join(root, `skill-${i}`))
    await fs.writeFile(path.join(root, `skill-${i}`, "SKILL.md"), skill(`skill-${i}`))
  }
  return root
}

const main = async () => {
  const root = await makeTree()
  const child = spawn(process.execPath, [BIN, root], {
    stdio: ["pipe", "pipe", "ignore"],
    env: { PATH: process.env.PATH ?? "", HOME: root },
  })
  const waiting = new Map()
  let buffer = ""
  child.stdout.on("data", (chunk) => {
    buffer += chunk
    for (let at = buffer.indexOf("\n"); at !== -1; at = buffer.indexOf("\n")) {
      const message = JSON.parse(buffer.slice(0, at))
      buffer = buffer.slice(at + 1)
      const done = waiting.get(message.id)
      if (done !== undefined) {
        waiting.delete(message.id)
        done(message)
      }
    }
  })
  let nextId = 1
  const send = (method, params) => {
    const id = nextId++
    const answered = new Promise((resolve) => waiting.set(id, resolve))
    child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`)
    return answered
  }
  const rows = []
  const note = async (step) => rows.push({ step, ...(await memory(child.pid)) })

  await send("initialize", {
    protocolVersion: "2025-06-18",
    capabilities: {},
    clientInfo: { name: "bench", version: "1" },
  })
  child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })}\n`)
  await new Promise((resolve) => setTimeout(resolve, 1_000))
  await note("idle after initialize")

  await send("tools/call", { name: "read_skill_file", arguments: { id: "crowded", path: "assets" } })
  let cursor
  do {
    const page = await send("resources/directory/read", {
      uri: "skill://crowded/assets",
      ...(cursor ? { cursor } : {}),
    })
    cursor = page.result?.nextCursor
  } while (cursor !== undefined)
  await send("skills/list", {})
  await note("after walking the 100,000-file skill")

  const huge = "x".repeat(10 * 1024 * 1024)
  const floods = []
  for (let i = 0; i < 10; i++) floods.push(send("tools/call", { name: "get_skill", arguments: { id: huge } }))
  for (let i = 0; i < 5_000; i++) {
    floods.push(
      i % 2 === 0
        ? send("tools/call", { name: "get_skill", arguments: { id: "skill-1" } })
        : send("resources/read", { uri: "skill://skill-2/SKILL.md" }),
    )
  }
  await Promise.all(floods)
  await note("after 10 x 10 MB lines and 5,000 requests at once")
  for (const seconds of [5, 15]) {
    await new Promise((resolve) => setTimeout(resolve, (seconds === 5 ? 5 : 10) * 1_000))
    await note(`${seconds} s later`)
  }

  const closed = new Promise((resolve) => child.on("close", resolve))
  const stopping = performance.now()
  child.stdin.end()
  await closed
  const exitMs = performance.now() - stopping
  await fs.rm(root, { recursive: true, force: true })

  console.log("| step | RSS MB | peak RSS MB |\n|---|---:|---:|")
  for (const row of rows) console.log(`| ${row.step} | ${row.rss.toFixed(1)} | ${row.peak.toFixed(1)} |`)
  const base = rows[0].rss
  const last = rows[rows.length - 1].rss
  console.log(
    `\nafter the flood / baseline: ${(last / base).toFixed(2)}x; exit after stdin closed: ${exitMs.toFixed(0)} ms`,
  )
}

await main()
