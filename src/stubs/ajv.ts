/**
 * Stands in for Ajv in the bundled bin. The MCP SDK's server builds an Ajv validator only
 * when it is given none; this server gives its own (`noValidation` in mcp/Server.ts). If the
 * SDK ever built one anyway, this fails loudly instead of validating nothing.
 */
export default class Ajv {
  constructor() {
    throw new Error("Ajv is not bundled with skills-mcp (the server passes its own JSON Schema validator)")
  }
}
