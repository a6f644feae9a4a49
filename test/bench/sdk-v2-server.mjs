/**
 * Benchmark comparison: the official MCP TypeScript SDK v2 server with its Skills extension
 * (`@modelcontextprotocol/server` 2.4.0, `loadSkills`), as its documentation shows it. It loads
 * (and hashes) every skill before it serves. The package is not a dependency of the project: the
 * bench installs it in its work folder and passes its path.
 *
 * Usage: node sdk-v2-server.mjs PACKAGE_DIR SKILLS_DIR
 */
import * as path from "node:path"
import { pathToFileURL } from "node:url"

const [packageDir, skillsDir] = process.argv.slice(2)
const load = (sub) => import(pathToFileURL(path.join(packageDir, "dist", sub)).href)
const { McpServer } = await load("index.mjs")
const { StdioServerTransport } = await load("stdio.mjs")
const { loadSkills } = await load("ext/skills/node.mjs")

const skills = await loadSkills(skillsDir)
const server = new McpServer({ name: "sdk-v2-skills", version: "0.0.0" })
skills.attach(server)
await server.connect(new StdioServerTransport())
