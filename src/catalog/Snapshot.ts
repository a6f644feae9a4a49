/**
 * Snapshot: one immutable view of the catalog (a change makes a new one) and the lookups on it.
 * A skill object is the same object from snapshot to snapshot while its metadata is unchanged,
 * so what is derived from a skill or a snapshot can be kept by identity (`perSnapshot`).
 */
import * as path from "node:path"
import type { FrontmatterRule } from "../Errors.js"
import type { Fingerprint } from "../platform/Paths.js"
import type { DiscoveryNotice } from "../skills/Discovery.js"
import type { ParsedFrontmatter } from "../skills/Frontmatter.js"
import type { Diagnostic } from "../skills/Validation.js"
import type { Publication } from "./Publication.js"
import { publish } from "./Publication.js"

export interface Skill {
  /** The folder name; the key in tool arguments. */
  readonly id: string
  readonly name: string
  readonly description: string
  /** Absolute skill folder. */
  readonly dir: string
  /** Absolute SKILL.md path. */
  readonly file: string
  readonly root: string
  /** The root's real path, pinned at start: the skill's files must stay below it. */
  readonly rootReal: string
  readonly rootIndex: number
  /** Folder path below its collection, for URIs. */
  readonly segments: ReadonlyArray<string>
  readonly fingerprint: Fingerprint
  readonly frontmatter: ParsedFrontmatter
  readonly diagnostics: ReadonlyArray<Diagnostic>
  /** From a git source: the source (`URL#REF:SUBDIR`, as shown) and the commit served. */
  readonly git?: SkillCommit
}

/** The git source and commit a skill was served from. */
export interface SkillCommit {
  readonly source: string
  readonly commit: string
}

/** A SKILL.md the server cannot serve, with the reason. */
export interface SkippedSkill {
  readonly id: string
  readonly file: string
  readonly root: string
  /** The `validate` rule the SKILL.md fails. */
  readonly rule: FrontmatterRule
  readonly reason: string
  readonly line?: number
  /** With `skill-nested`: the id of the skill whose folder holds it (its reason names that skill). */
  readonly within?: string
}

/** A skill hidden by an earlier one with the same id. */
export interface ShadowedSkill {
  readonly id: string
  readonly file: string
  readonly shadowedBy: string
}

/**
 * A catalog: its skills and problems, and its publication (src/catalog/Publication.ts): who is
 * listed over the Skills extension and who owns which `skill://` URI.
 */
export interface Snapshot extends Publication<Skill> {
  /** Served skills, in priority order (root order, then path order). */
  readonly skills: ReadonlyArray<Skill>
  readonly skipped: ReadonlyArray<SkippedSkill>
  readonly shadowed: ReadonlyArray<ShadowedSkill>
  readonly notices: ReadonlyArray<DiscoveryNotice>
  /** Folders to watch for changes: roots, groups (those at the depth limit too). */
  readonly folders: ReadonlyArray<string>
  /** Increases whenever the served set or any served skill's metadata changes. */
  readonly version: number
  readonly byId: ReadonlyMap<string, Skill>
}

/** `make`, run once per snapshot (by identity): for what requests page or filter through. */
export const perSnapshot = <A>(make: (snapshot: Snapshot) => A): ((snapshot: Snapshot) => A) => {
  const made = new WeakMap<Snapshot, { readonly value: A }>()
  return (snapshot) => {
    const known = made.get(snapshot)
    if (known !== undefined) return known.value
    const value = make(snapshot)
    made.set(snapshot, { value })
    return value
  }
}

export const makeSnapshot = (input: {
  readonly skills: ReadonlyArray<Skill>
  readonly skipped?: ReadonlyArray<SkippedSkill>
  readonly shadowed?: ReadonlyArray<ShadowedSkill>
  readonly notices?: ReadonlyArray<DiscoveryNotice>
  readonly folders?: ReadonlyArray<string>
  readonly version?: number
}): Snapshot => {
  const byId = new Map<string, Skill>()
  for (const skill of input.skills) if (!byId.has(skill.id)) byId.set(skill.id, skill)
  return {
    ...publish(input.skills),
    skills: input.skills,
    skipped: input.skipped ?? [],
    shadowed: input.shadowed ?? [],
    notices: input.notices ?? [],
    folders: input.folders ?? [],
    version: input.version ?? 0,
    byId,
  }
}

/** Every folder a watcher should follow for a catalog: collections, skill folders, broken skills. */
export const foldersToWatch = (snapshot: Snapshot): Array<string> => [
  ...snapshot.folders,
  ...snapshot.skills.map((skill) => skill.dir),
  ...snapshot.skipped.map((skipped) => path.dirname(skipped.file)),
]

/** An id or name as the looser lookups compare it: lowercase, then also NFC. */
const lower = (text: string) => text.toLowerCase()
const folded = (text: string) => text.normalize("NFC").toLowerCase()

/** A snapshot's lookups by name, by lowercase id and name, and by folded id and name. */
const lookups = perSnapshot((snapshot) => {
  const byName = new Map<string, Skill>()
  const byIdLower = new Map<string, Skill>()
  const byNameLower = new Map<string, Skill>()
  const byFolded = new Map<string, Skill>()
  const add = (map: Map<string, Skill>, key: string, skill: Skill) => {
    if (!map.has(key)) map.set(key, skill)
  }
  for (const skill of snapshot.skills) {
    add(byName, skill.name, skill)
    add(byIdLower, lower(skill.id), skill)
    add(byNameLower, lower(skill.name), skill)
    add(byFolded, folded(skill.id), skill)
  }
  for (const skill of snapshot.skills) add(byFolded, folded(skill.name), skill)
  return { byName, byIdLower, byNameLower, byFolded }
})

/**
 * Lookup by id or name: exact id, exact name, then the same ignoring case, then ignoring the
 * Unicode normalisation form too (`café` typed decomposed, or a folder name written so). The
 * first skill in catalog order wins a key.
 */
export const findSkill = (snapshot: Snapshot, query: string): Skill | undefined => {
  const exact = snapshot.byId.get(query)
  if (exact !== undefined) return exact
  const { byName, byIdLower, byNameLower, byFolded } = lookups(snapshot)
  return (
    byName.get(query) ??
    byIdLower.get(lower(query)) ??
    byNameLower.get(lower(query)) ??
    byFolded.get(folded(query))
  )
}
