/**
 * LoadStacks: no stack trace formatted while the bundled server's modules load.
 *
 * Effect's `Utils` module formats one stack trace as it loads, to choose between two call wrappers
 * (the bundler's minifier makes them identical). In the bundle (1.5 MB when this was measured)
 * that is the first source position V8 looks up, and it cost 1.8 to 2.9 ms of every start. So the
 * launcher (src/launch.ts) sets `Error.stackTraceLimit` to 0 while the bundle loads, and the
 * executable (src/bin.ts) sets it back first thing, once every module it imports has loaded; the
 * limit goes back as it was (Node's default, or the user's `--stack-trace-limit`). The launcher
 * also puts it back if the bundle returns or throws without doing so. An error thrown while the
 * modules load has no stack (the message still says what failed). Where the limit cannot be
 * changed (`--frozen-intrinsics`), nothing is changed. The bundle run without the launcher leaves
 * the limit alone. Only Node's globals are used here: the launcher imports it.
 */

/** Where the launcher keeps the limit it replaced: a global both bundles see. */
const SAVED_LIMIT = Symbol.for("skills-mcp/stackTraceLimit")

/** The launcher, before the bundle loads: no stack traces until `restoreStackTraces`. */
export const quietStackTraces = (): void => {
  const limit = Error.stackTraceLimit
  if (typeof limit !== "number") return
  try {
    Error.stackTraceLimit = 0
  } catch {
    // Read-only (frozen intrinsics): the start simply pays for the stack trace.
    return
  }
  Reflect.set(globalThis, SAVED_LIMIT, limit)
}

/** Once the modules have loaded: the limit the launcher replaced, if any (once). */
export const restoreStackTraces = (): void => {
  const saved: unknown = Reflect.get(globalThis, SAVED_LIMIT)
  if (typeof saved !== "number") return
  Reflect.deleteProperty(globalThis, SAVED_LIMIT)
  try {
    Error.stackTraceLimit = saved
  } catch {
    // It could be set a moment ago; nothing more to do if it cannot now.
  }
}
