/**
 * Access: which skills an operator exposes. `--allow` and `--deny` take glob patterns over
 * skill ids (`pdf-*`, `team-{a,b}-*`); deny wins over allow, and with no allow pattern every
 * id not denied is served. A skill that is not permitted is left out at discovery: it is
 * never read, listed, watched, searched or served on any surface.
 * Matching is picomatch's (case-sensitive, `*`, `?`, `[...]`, `{a,b}`, extglobs).
 */
import picomatch from "picomatch"

export type IdFilter = (id: string) => boolean

const compile = (patterns: ReadonlyArray<string>) =>
  patterns.length === 0 ? undefined : picomatch([...patterns], { dot: true })

/** The filter for the given patterns; `undefined` when every id is permitted. */
export const idFilter = (allow: ReadonlyArray<string>, deny: ReadonlyArray<string>): IdFilter | undefined => {
  const allowed = compile(allow)
  const denied = compile(deny)
  if (allowed === undefined && denied === undefined) return undefined
  return (id) => (allowed === undefined || allowed(id)) && (denied === undefined || !denied(id))
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
