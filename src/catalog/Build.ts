/**
 * Build: what a discovery's candidates make of the catalog: the skills served (the first
 * candidate of each id that parses; a broken copy in an earlier root hides nothing), the ones
 * skipped (with the reason), shadowed or nested, within `--max-skills`. Only SKILL.md files whose
 * fingerprint changed since they were last parsed are read again (`ParseCache`).
 */

import { mapLimit } from "../platform/Fs.js"
import type { Fingerprint } from "../platform/Paths.js"
import { sameFingerprint } from "../platform/Paths.js"
import type { Candidate, DiscoveryResult } from "../skills/Discovery.js"
import { nestedReason } from "../skills/Discovery.js"
import type { ShadowedSkill, Skill, SkippedSkill, Snapshot } from "./Snapshot.js"

/** What a candidate's SKILL.md makes of it. */
export type Parsed =
  | { readonly _tag: "Skill"; readonly skill: Skill }
  | { readonly _tag: "Skipped"; readonly skipped: SkippedSkill }

/** Parse results by SKILL.md path, each valid while the file's fingerprint holds. */
export class ParseCache {
  private readonly entries = new Map<string, { readonly fingerprint: Fingerprint; readonly parsed: Parsed }>()

  get(candidate: Candidate): Parsed | undefined {
    const entry = this.entries.get(candidate.file)
    return entry !== undefined && sameFingerprint(entry.fingerprint, candidate.fingerprint)
      ? entry.parsed
      : undefined
  }

  set(candidate: Candidate, parsed: Parsed): Parsed {
    this.entries.set(candidate.file, { fingerprint: candidate.fingerprint, parsed })
    return parsed
  }

  /** Forgets every file but these. */
  keepOnly(files: ReadonlySet<string>): void {
    for (const file of this.entries.keys()) if (!files.has(file)) this.entries.delete(file)
  }
}

/** The parts of a snapshot a discovery makes. */
export type Built = Pick<Snapshot, "skills" | "skipped" | "shadowed" | "notices" | "folders"> & {
  /** Skill ids left out for `--max-skills`. */
  readonly overLimit: number
}

export const skippedAs = (
  candidate: Candidate,
  rule: SkippedSkill["rule"],
  reason: string,
  line?: number,
): SkippedSkill => ({
  id: candidate.id,
  file: candidate.file,
  root: candidate.root.path,
  rule,
  reason,
  ...(line === undefined ? {} : { line }),
})

/**
 * Builds the catalog's parts from discovered candidates: candidates by id in priority order,
 * the first of each id served; when it cannot be (skipped), the next with that id is tried.
 * Only candidates tried are parsed, `concurrency` at a time.
 */
export const build = async (
  found: DiscoveryResult,
  options: { readonly maxSkills: number; readonly concurrency: number },
  cache: ParseCache,
  parse: (candidate: Candidate) => Promise<Parsed>,
): Promise<Built> => {
  const sameId = new Map<string, Array<Candidate>>()
  /** Candidates to parse next: at first the first of each id, then the next of each one skipped. */
  let round: Array<Candidate> = []
  let overLimit = 0
  for (const candidate of found.candidates) {
    const group = sameId.get(candidate.id)
    if (group !== undefined) group.push(candidate)
    else if (sameId.size >= options.maxSkills) overLimit++
    else {
      sameId.set(candidate.id, [candidate])
      round.push(candidate)
    }
  }
  const results = new Map<Candidate, Parsed>()
  while (round.length > 0) {
    const stale = round.filter((candidate) => {
      const cached = cache.get(candidate)
      if (cached !== undefined) results.set(candidate, cached)
      return cached === undefined
    })
    await mapLimit(stale, options.concurrency, async (candidate) => {
      results.set(candidate, cache.set(candidate, await parse(candidate)))
    })
    round = round.flatMap((candidate) => {
      if (results.get(candidate)?._tag !== "Skipped") return []
      const group = sameId.get(candidate.id) ?? []
      return group.slice(group.indexOf(candidate) + 1, group.indexOf(candidate) + 2)
    })
  }
  cache.keepOnly(new Set(Array.from(results.keys(), (candidate) => candidate.file)))

  const skills: Array<Skill> = []
  const skipped: Array<SkippedSkill> = []
  const shadowed: Array<ShadowedSkill> = []
  for (const candidate of found.candidates) {
    const result = results.get(candidate)
    if (result?._tag === "Skill") skills.push(result.skill)
    else if (result?._tag === "Skipped") skipped.push(result.skipped)
    else {
      // Not parsed: shadowed by the copy of its id that is served, or over --max-skills.
      const winner = sameId.get(candidate.id)?.find((other) => results.get(other)?._tag === "Skill")
      if (winner !== undefined)
        shadowed.push({ id: candidate.id, file: candidate.file, shadowedBy: winner.file })
    }
  }
  for (const nested of found.nested)
    skipped.push({
      ...skippedAs(nested.candidate, "skill-nested", nestedReason(nested)),
      within: nested.outerId,
    })
  return {
    skills,
    skipped,
    shadowed,
    notices: found.notices,
    folders: [...found.folders, ...found.edges],
    overLimit,
  }
}

const sameItems = <A>(left: ReadonlyArray<A>, right: ReadonlyArray<A>, same: (a: A, b: A) => boolean) =>
  left.length === right.length && left.every((item, index) => same(item, right[index] as A))

/** Whether a rebuilt catalog is the one a snapshot holds: same skills (the very objects), same problems. */
export const sameCatalog = (snapshot: Snapshot, next: Built): boolean =>
  sameItems(snapshot.skills, next.skills, (a, b) => a === b) &&
  sameItems(
    snapshot.skipped,
    next.skipped,
    (a, b) => a.file === b.file && a.id === b.id && a.reason === b.reason && a.line === b.line,
  ) &&
  sameItems(snapshot.shadowed, next.shadowed, (a, b) => a.file === b.file && a.shadowedBy === b.shadowedBy) &&
  sameItems(snapshot.notices, next.notices, (a, b) => a.path === b.path && a.reason === b.reason) &&
  sameItems(snapshot.folders, next.folders, (a, b) => a === b)

/** Which skill ids a rebuild added, removed, or changed (another file or fingerprint). */
export const describeChange = (before: Snapshot, after: ReadonlyArray<Skill>) => {
  const added: Array<string> = []
  const changed: Array<string> = []
  const seen = new Set<string>()
  for (const skill of after) {
    seen.add(skill.id)
    const old = before.byId.get(skill.id)
    if (old === undefined) added.push(skill.id)
    else if (old.file !== skill.file || !sameFingerprint(old.fingerprint, skill.fingerprint))
      changed.push(skill.id)
  }
  const removed = before.skills.filter((skill) => !seen.has(skill.id)).map((skill) => skill.id)
  return { added, removed, changed }
}
