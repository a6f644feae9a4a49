/**
 * Benchmark comparison: the skills server a newcomer would write with the MCP SDK, unbundled.
 * Before serving, it reads every `<dir>/<id>/SKILL.md` whole, parses its frontmatter with
 * `yaml` and keeps every skill (id, name, description, the whole frontmatter) in an array.
 * `list_skills {query?}` lists them (those whose id, name or description contains the query);
 * `get_skill {id}` reads the file again and returns it. No paging, no watcher, no checks.
 *
 * Usage: node naive-server.mjs DIR
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import { parse } from "yaml"
import { z } from "zod"

const dir = process.argv[2]
const skills = []
for (const id of fs.readdirSync(dir)) {
  const file = path.join(dir, id, "SKILL.md")
  if (!fs.existsSync(file)) continue
  const text = fs.readFileSync(file, "utf8")
  const match = /^---\n([\s\S]*?)\n---/.exec(text)
  if (match === null) continue
  const frontmatter = parse(match[1])
  skills.push({ id, name: frontmatter.name, description: frontmatter.description, frontmatter })
}

const server = new McpServer({ name: "naive-skills", version: "0.0.0" })
server.registerTool(
  "list_skills",
  {
    description: "List the skills, optionally those matching a query.",
    inputSchema: { query: z.string().optional() },
  },
  async ({ query }) => {
    const words = query?.toLowerCase()
    const found = skills.filter(
      (skill) =>
        words === undefined || `${skill.id} ${skill.name} ${skill.description}`.toLowerCase().includes(words),
    )
    const text = found.map((skill) => `${skill.id}: ${skill.description}`).join("\n")
    return { content: [{ type: "text", text }] }
  },
)
server.registerTool(
  "get_skill",
  { description: "The SKILL.md of a skill.", inputSchema: { id: z.string() } },
  async ({ id }) => {
    const skill = skills.find((candidate) => candidate.id === id)
    if (skill === undefined) return { content: [{ type: "text", text: `No skill ${id}` }], isError: true }
    const text = await fs.promises.readFile(path.join(dir, id, "SKILL.md"), "utf8")
    return { content: [{ type: "text", text }] }
  },
)
await server.connect(new StdioServerTransport())
