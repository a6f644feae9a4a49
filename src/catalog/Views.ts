/**
 * Views: the catalog as one caller sees it (over HTTP with `--auth`, src/Access.ts `Caller`).
 * A view holds only the skills the caller's policy permits, as if the others were missing: it
 * publishes, addresses, looks up, pages and searches among them alone, and its diagnostics name
 * only their problems. So a skill the caller may not see answers exactly like a missing one, on
 * every surface, and no URI, reason or count tells of it.
 *
 * A view's snapshot is made once per snapshot; the catalog keeps a view per policy, so callers
 * holding the same policy share it.
 */
import type { Caller, IdFilter } from "../Access.js"
import type { Snapshot } from "./Snapshot.js"
import { makeSnapshot, perSnapshot } from "./Snapshot.js"

/** One policy's view of any snapshot. */
export interface View {
  /** Names the policy (equal policies see the same skills): rankings and cursors are kept per policy. */
  readonly policy: string
  readonly of: (snapshot: Snapshot) => Snapshot
}

/**
 * A snapshot with only the skills `sees` permits. Discovery notices are about folders (a root
 * with no skill, a folder not followed), which may be a hidden skill's: a view has none.
 */
export const viewOf = (snapshot: Snapshot, sees: IdFilter): Snapshot =>
  makeSnapshot({
    skills: snapshot.skills.filter((skill) => sees(skill.id)),
    skipped: snapshot.skipped.filter((skipped) => sees(skipped.id)),
    // A shadowed skill has the id of the skill that shadows it: both are seen, or neither.
    shadowed: snapshot.shadowed.filter((shadowed) => sees(shadowed.id)),
    notices: [],
    folders: snapshot.folders,
    version: snapshot.version,
  })

/** The view of a caller who sees only some skills; undefined for one who sees every skill. */
export const viewFor = (caller: Caller): View | undefined => {
  if (caller.sees === undefined || caller.policy === undefined) return undefined
  const { sees } = caller
  return { policy: caller.policy, of: perSnapshot((snapshot) => viewOf(snapshot, sees)) }
}
