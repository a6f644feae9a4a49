/**
 * The executable's first import (bin.ts): zod checks messages interpreted (`jitless`), for
 * every schema, the MCP SDK's included.
 *
 * The MCP SDK checks every message with zod, which by default compiles a parser with
 * `new Function` for each object schema the first time it parses with it, a cost paid by
 * `initialize` and by the first call of each kind. zod decides this when a schema is made,
 * not when it parses, and the SDK makes most of its schemas as its modules load: the setting
 * must be in place before they do, so this module sets it as it loads and the executable
 * imports it before anything else. The library leaves zod's settings to its user.
 */
import { config } from "zod/v4/core"

config({ jitless: true })
