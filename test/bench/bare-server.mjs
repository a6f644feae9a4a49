/**
 * Benchmark floor: the smallest MCP server the SDK allows, unbundled (the SDK imported from
 * node_modules), answering `initialize` over stdio and nothing else.
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"

const server = new Server({ name: "bare", version: "0.0.0" }, { capabilities: {} })
await server.connect(new StdioServerTransport())
