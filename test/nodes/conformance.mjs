/**
 * The official MCP conformance suite against `skills-mcp serve --http` (no bridge), run by
 * `npm run test:nodes` on its Node 22 (the suite needs 22 or later): the active suite at protocol
 * version 2025-11-25, the newest our SDK speaks, with the failures test/nodes/conformance-baseline.yml
 * expects (and says why), then the Skills extension's scenarios (SEP-2640), which must pass whole.
 * Those are tagged `extension`, so they run only when named, with `--force` at that version.
 *
 * `node test/nodes/conformance.mjs NODE`: NODE is the Node.js binary to run the server and the
 * suite on. Exits 0 when every run passed.
 */
import { spawn, spawnSync } from "node:child_process"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const HERE = fileURLToPath(new URL(".", import.meta.url))
const PROJECT = path.resolve(HERE, "..", "..")
const SUITE = path.join(HERE, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
const VERSION = "2025-11-25"
const SKILLS_SCENARIOS = [
  "sep-2640-skills-enumeration",
  "sep-2640-skills-manifest",
  "sep-2640-skills-directory",
]

const node = process.argv[2] ?? process.execPath

/** `serve --http` on a free port of 127.0.0.1; resolves with its /mcp URL once it listens. */
const startServer = () =>
  new Promise((resolve, reject) => {
    const child = spawn(
      node,
      [
        path.join(PROJECT, "dist", "bin.cjs"),
        "serve",
        "--http",
        "127.0.0.1:0",
        "--skills-dir",
        "fixtures/valid",
      ],
      { cwd: PROJECT, stdio: ["ignore", "ignore", "pipe"] },
    )
    let text = ""
    child.stderr.setEncoding("utf8")
    child.stderr.on("data", (chunk) => {
      text += chunk
      const found = /Serving MCP over HTTP at (http:\/\/\S+\/mcp)/.exec(text)
      if (found !== null) resolve({ url: found[1], child })
    })
    child.once("exit", (code) => reject(new Error(`serve --http exited (${code}):\n${text}`)))
  })

/** Polls /readyz until the first scan is done. */
const waitReady = async (url) => {
  for (let tries = 0; tries < 100; tries++) {
    const response = await fetch(new URL("/readyz", url)).catch(() => undefined)
    if (response?.status === 200) return
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`${url}: /readyz never answered 200`)
}

const run = (label, args) => {
  console.log(`\n--- conformance: ${label} ---`)
  const result = spawnSync(node, [SUITE, "server", ...args], { cwd: PROJECT, stdio: "inherit" })
  return { label, passed: result.status === 0 }
}

const { url, child } = await startServer()
const results = []
try {
  await waitReady(url)
  const common = ["--url", url, "--spec-version", VERSION]
  results.push(
    run(`active suite at ${VERSION}, baseline test/nodes/conformance-baseline.yml`, [
      ...common,
      "--expected-failures",
      path.join(HERE, "conformance-baseline.yml"),
    ]),
  )
  for (const scenario of SKILLS_SCENARIOS)
    results.push(run(scenario, [...common, "--scenario", scenario, "--force"]))
} finally {
  child.kill("SIGTERM")
}
console.log(
  `\nConformance:\n${results.map(({ label, passed }) => `  ${label}: ${passed ? "passed" : "FAILED"}`).join("\n")}`,
)
process.exit(results.every(({ passed }) => passed) ? 0 : 1)
