/**
 * Benchmark floor: the smallest MCP server the SDK allows, unbundled (the SDK imported from
 * node_modules), answering `initialize` over stdio and nothing else.
 *
 * Given a skills folder (`node bare-server.mjs DIR`), it also answers one tool, `get_skill
 * {id}`, with the text of DIR/<id>/SKILL.md read by one `readFile`: no checks, no parsing, no
 * structured result. Its latency is the floor a `get_skill` on this machine is compared with.
 */
import { readFile } from "node:fs/promises"
import * as path from "node:path"
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js"

const dir = process.argv[2]
const server = new Server(
  { name: "bare", version: "0.0.0" },
  { capabilities: dir === undefined ? {} : { tools: {} } },
)
if (dir !== undefined) {
  const tool = {
    name: "get_skill",
    inputSchema: { type: "object", properties: { id: { type: "string" } }, required: ["id"] },
  }
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [tool] }))
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const id = String(request.params.arguments?.id ?? "")
    const text = await readFile(path.join(dir, id, "SKILL.md"), "utf8")
    return { content: [{ type: "text", text }] }
  })
}
await server.connect(new StdioServerTransport())
