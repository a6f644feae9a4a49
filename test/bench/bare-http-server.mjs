/**
 * Benchmark floor over HTTP: the smallest Streamable HTTP MCP server the SDK allows, unbundled
 * (the SDK imported from node_modules), served as skills-mcp serves it: stateless, answering in
 * JSON, a `Server` and a `StreamableHTTPServerTransport` made for every POST to /mcp.
 *
 * `node bare-http-server.mjs GET_BYTES SEARCH_BYTES` answers `tools/call` of `get_skill` and of
 * `list_skills` with a fixed text result whose JSON is about that many bytes (what skills-mcp's
 * answers weigh, measured by the bench): no files read, no search. It listens on a free port of
 * 127.0.0.1 and writes `http://127.0.0.1:PORT/mcp` on stdout once it listens.
 */
import * as http from "node:http"
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js"

/** A tool result whose JSON takes about `bytes` bytes. */
const fixedResult = (bytes) => {
  const empty = JSON.stringify({ content: [{ type: "text", text: "" }] }).length
  return { content: [{ type: "text", text: "x".repeat(Math.max(0, bytes - empty)) }] }
}
const results = {
  get_skill: fixedResult(Number(process.argv[2])),
  list_skills: fixedResult(Number(process.argv[3])),
}
const tools = Object.keys(results).map((name) => ({ name, inputSchema: { type: "object" } }))

const httpServer = http.createServer(async (req, res) => {
  if (req.method !== "POST" || req.url !== "/mcp") {
    res.writeHead(404).end()
    return
  }
  const server = new Server({ name: "bare-http", version: "0.0.0" }, { capabilities: { tools: {} } })
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }))
  server.setRequestHandler(CallToolRequestSchema, async (request) => results[request.params.name])
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  })
  res.once("close", () => {
    void server.close()
  })
  await server.connect(transport)
  await transport.handleRequest(req, res)
})
httpServer.listen(0, "127.0.0.1", () => {
  process.stdout.write(`http://127.0.0.1:${httpServer.address().port}/mcp\n`)
})
process.on("SIGTERM", () => process.exit(0))
