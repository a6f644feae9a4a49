#!/usr/bin/env node
/**
 * The executable's first stage (`dist/bin.cjs`): turns on Node's own compile cache, then loads
 * the bundled server next to it (`dist/skills-mcp.cjs`). From Node 22.1, V8's compiled code for
 * the bundle is kept between starts in the user's cache folder (`$XDG_CACHE_HOME/skills-mcp` or
 * `~/.cache/skills-mcp`), never in a shared temporary folder; Node checks each entry against the
 * source it was made for. Where Node has no compile cache (Node 20), the bundle loads as is.
 * `SKILLS_MCP_COMPILE_CACHE=0` turns the cache off.
 */
import * as module from "node:module"
import * as os from "node:os"
import * as path from "node:path"

const enableCompileCache: unknown = Reflect.get(module, "enableCompileCache")
if (typeof enableCompileCache === "function" && process.env.SKILLS_MCP_COMPILE_CACHE !== "0") {
  // An empty or relative XDG_CACHE_HOME is ignored, as the XDG spec says.
  const xdg = process.env.XDG_CACHE_HOME
  const cacheHome = xdg !== undefined && path.isAbsolute(xdg) ? xdg : path.join(os.homedir(), ".cache")
  try {
    enableCompileCache(path.join(cacheHome, "skills-mcp", "compile-cache"))
  } catch {
    // No cache this time: the bundle loads as is.
  }
}
require("./skills-mcp.cjs")
