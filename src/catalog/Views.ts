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

/** What a view holds of a snapshot: the skills `sees` permits, and their problems. */
const holding = (snapshot: Snapshot, sees: IdFilter) => ({
  skills: snapshot.skills.filter((skill) => sees(skill.id)),
  // A nested skill's reason names the skill whose folder holds it: kept only if that one is seen too.
  skipped: snapshot.skipped.filter(
    (skipped) => sees(skipped.id) && (skipped.within === undefined || sees(skipped.within)),
  ),
  // A shadowed skill has the id of the skill that shadows it: both are seen, or neither.
  shadowed: snapshot.shadowed.filter((shadowed) => sees(shadowed.id)),
})
type Holding = Pick<Snapshot, "skills" | "skipped" | "shadowed">

/** Two views hold the same skills (the same objects: unchanged metadata) and the same problems. */
const sameHolding = (a: Holding, b: Holding) => {
  const same = <A>(x: ReadonlyArray<A>, y: ReadonlyArray<A>, key: (item: A) => unknown) =>
    x.length === y.length && x.every((item, index) => key(item) === key(y[index] as A))
  return (
    same(a.skills, b.skills, (skill) => skill) &&
    same(a.skipped, b.skipped, (skipped) => `${skipped.file}\n${skipped.reason}`) &&
    same(a.shadowed, b.shadowed, (shadowed) => `${shadowed.file}\n${shadowed.shadowedBy}`)
  )
}

/** The view of a caller who sees only some skills; undefined for one who sees every skill. */
export const viewFor = (caller: Caller): View | undefined => {
  if (caller.sees === undefined || caller.policy === undefined) return undefined
  const { sees } = caller
  // A view's version is its own, bumped only when what it holds changes: the whole catalog's
  // would count changes to skills the caller may not see. Discovery notices are about folders
  // (a root with no skill, a folder not followed), which may be a hidden skill's: a view has none.
  let last: Snapshot | undefined
  const of = perSnapshot((snapshot) => {
    const held = holding(snapshot, sees)
    const version = last === undefined ? 1 : sameHolding(last, held) ? last.version : last.version + 1
    last = makeSnapshot({ ...held, notices: [], folders: snapshot.folders, version })
    return last
  })
  return { policy: caller.policy, of }
}
