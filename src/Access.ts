/**
 * Access: which skills an operator exposes. `--allow` and `--deny` take glob patterns over
 * skill ids (`pdf-*`, `team-{a,b}-*`); deny wins over allow, and with no allow pattern every
 * id not denied is served. A skill that is not permitted is left out at discovery: it is
 * never read, listed, watched, searched or served on any surface.
 * Matching is picomatch's (case-sensitive, `*`, `?`, `[...]`, `{a,b}`, extglobs), of patterns and
 * ids in Unicode's composed form (NFC): a folder named in the decomposed form (`cafe` and a
 * combining accent, as macOS writes names) is matched as lookups find it, by either spelling.
 */
import picomatch from "picomatch"

export type IdFilter = (id: string) => boolean

const compile = (patterns: ReadonlyArray<string>) =>
  patterns.length === 0
    ? undefined
    : picomatch(
        patterns.map((pattern) => pattern.normalize("NFC")),
        { dot: true },
      )

/** The filter for the given patterns; `undefined` when every id is permitted. */
export const idFilter = (allow: ReadonlyArray<string>, deny: ReadonlyArray<string>): IdFilter | undefined => {
  const allowed = compile(allow)
  const denied = compile(deny)
  if (allowed === undefined && denied === undefined) return undefined
  return (id) => {
    const composed = id.normalize("NFC")
    return (allowed === undefined || allowed(composed)) && (denied === undefined || !denied(composed))
  }
}

/** Why a pattern cannot be used, or `undefined` when it can. */
export const globProblem = (pattern: string): string | undefined => {
  if (pattern.includes("/")) return "skill ids have no '/'; match the folder name of the skill."
  try {
    picomatch.makeRe(pattern, { strictBrackets: true })
    return undefined
  } catch (error) {
    return error instanceof Error ? error.message : "not a glob pattern"
  }
}

/**
 * Who sent a request (over HTTP with `--auth`), and which skills they may see. Made by the
 * authentication of a request (src/mcp/Auth.ts); every surface of the server a caller reaches
 * shows only the skills `sees` permits, and a skill it does not permit answers like a missing one.
 */
export interface Caller {
  /** The name in the audit log: a static token's `name`, or a JWT's subject. */
  readonly name: string
  /** The skill ids this caller may see; `undefined`: every skill the server serves. */
  readonly sees: IdFilter | undefined
  /**
   * Names what `sees` permits (for instance its allow and deny patterns, sorted and joined):
   * callers with equal policies see the same skills, so a catalog filtered for one policy is
   * reused by every caller holding it. `undefined` exactly when `sees` is.
   */
  readonly policy: string | undefined
}
