/**
 * The executable's first import (bin.ts): zod checks messages interpreted (`jitless`), the MCP
 * SDK's schemas included. By default zod compiles a parser with `new Function` for each object
 * schema on its first use, a cost paid by `initialize` and by the first call of each kind. zod
 * decides this when a schema is made, and the SDK makes its schemas as its modules load, so this
 * must load first. The library leaves zod's settings to its user.
 */
import { config } from "zod/v4/core"

config({ jitless: true })
