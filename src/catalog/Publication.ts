/**
 * Publication: which skill owns which `skill://` URI, decided once per catalog snapshot and
 * used by every surface (resources, directory reads, the Skills extension, prompts,
 * completion). docs/SECURITY.md states the rule; in short:
 *
 * - Skills are taken in priority order (root order, then path order). Each claims one URI
 *   space: its `<skill-path>` when the Skills extension can list it (published), else, for
 *   clients written before the extension, its id (`skill://<id>/...`).
 * - A claim that equals, contains or lies inside an earlier claim is refused: a skill can never
 *   answer for a URI below another skill's URI, whatever roots or folders it comes from.
 * - A skill is published only if a host that verifies `skills/list` accepts it: a name of 1-64
 *   lowercase ASCII letters, digits and single hyphens, a description of at most 1,024
 *   characters, and a name that is not another served skill's id (`get_skill xlsx` and
 *   `skill://xlsx/SKILL.md` must be the same skill).
 */

import type { Address, UriClaim, UriSpace, UriSubject } from "../skills/Uris.js"
import { DIAGNOSTICS_DOCUMENT, PROMPT_XML_DOCUMENT, pathKey, skillPathOf, uriKey } from "../skills/Uris.js"
import { codePoints, MAX_DESCRIPTION, MAX_NAME, nameProblems } from "../skills/Validation.js"

/** What publication looks at of a skill. */
interface Publishable extends UriSubject {
  readonly id: string
  readonly description: string
  /** Its SKILL.md, to name it in reasons. */
  readonly file: string
}

/** A served skill left out of the Skills extension's listing (still reachable through the tools). */
export interface UnpublishedSkill {
  readonly id: string
  readonly file: string
  readonly reason: string
}

export interface Publication<S extends Publishable> extends UriSpace<S> {
  /** Skills listed by `skills/list`, in catalog order. */
  readonly published: ReadonlyArray<S>
  /** Served skills left out of that listing, with the reason. */
  readonly unpublished: ReadonlyArray<UnpublishedSkill>
  /** Each skill's address; a skill with none is reached through the tools only. */
  readonly addresses: ReadonlyMap<S, Address>
}

/** Single-segment URIs the server keeps for its own documents. */
const RESERVED = new Set([PROMPT_XML_DOCUMENT, DIAGNOSTICS_DOCUMENT])

/** What a host that verifies `skills/list` accepts as a name (SEP-2640 hosts check ASCII only). */
const LISTABLE_NAME = /^[a-z0-9]+(?:-[a-z0-9]+)*$/

/** Why a host verifying `skills/list` would reject the skill's frontmatter, if it would. */
const verificationProblem = (skill: Publishable): string | undefined => {
  if (skill.name.length > MAX_NAME || !LISTABLE_NAME.test(skill.name)) {
    const problems = nameProblems(skill.name)
    const detail =
      problems.length > 0
        ? problems.join("; ")
        : "it has characters outside a-z, 0-9 and '-', which hosts that verify skills/list reject"
    return `its name '${skill.name}' breaks the Agent Skills naming rules (${detail})`
  }
  // No more code points than UTF-16 units: most descriptions need no count.
  const length =
    skill.description.length <= MAX_DESCRIPTION ? skill.description.length : codePoints(skill.description)
  if (length > MAX_DESCRIPTION) {
    return `its description is ${length} characters, over the ${MAX_DESCRIPTION}-character limit that hosts verify`
  }
  return undefined
}

const segmentsOf = (key: string) => key.split("/")

/** Decides publication and URI ownership for skills in priority order. */
export const publish = <S extends Publishable>(skills: ReadonlyArray<S>): Publication<S> => {
  type Claim = UriClaim<S>
  const claims = new Map<string, Claim>()
  /** Every proper prefix of a claimed key, with the claim below it. */
  const below = new Map<string, Claim>()
  const addresses = new Map<S, Address>()
  let deepest = 0
  const published: Array<S> = []
  const unpublished: Array<UnpublishedSkill> = []
  /** Skills by the key of `skill://<id>`, to find a name that is another skill's id. */
  const ids = new Map<string, S>()
  for (const skill of skills) {
    const id = uriKey([skill.id])
    if (!ids.has(id)) ids.set(id, skill)
  }

  /** The claim `key` would overlap, if any. */
  const overlap = (key: string): Claim | undefined => {
    const same = claims.get(key) ?? below.get(key)
    if (same !== undefined) return same
    const segments = segmentsOf(key)
    for (let length = segments.length - 1; length > 0; length--) {
      const above = claims.get(segments.slice(0, length).join("/"))
      if (above !== undefined) return above
    }
    return undefined
  }

  /** Claims `base` for `skill`; its first claim is its address. */
  const claim = (skill: S, base: ReadonlyArray<string>, isPublished: boolean) => {
    const key = uriKey(base)
    const entry: Claim = { skill, base, published: isPublished }
    claims.set(key, entry)
    deepest = Math.max(deepest, base.length)
    const segments = segmentsOf(key)
    for (let length = 1; length < segments.length; length++) {
      const prefix = segments.slice(0, length).join("/")
      if (!below.has(prefix)) below.set(prefix, entry)
    }
    if (!addresses.has(skill)) addresses.set(skill, { base, published: isPublished })
  }

  const described = (owner: Claim) =>
    `${owner.published ? "skill" : "the older-client URI of"} ${owner.skill.file}`

  for (const skill of skills) {
    const skillPath = skillPathOf(skill)
    const twin = ids.get(uriKey([skill.name]))
    const owner = overlap(uriKey(skillPath))
    const reason =
      verificationProblem(skill) ??
      (twin !== undefined && twin !== skill
        ? `its name '${skill.name}' is the id of another skill (${twin.file}), which owns skill://${skill.name}`
        : owner !== undefined
          ? `skill://${pathKey(skillPath)} overlaps the URIs of ${described(owner)} (the first skill in root and path order keeps them)`
          : undefined)
    if (reason === undefined) {
      claim(skill, skillPath, true)
      published.push(skill)
    } else {
      unpublished.push({ id: skill.id, file: skill.file, reason })
    }
  }
  // URIs for clients written before the extension: `skill://<id>`, where no claim overlaps it
  // (for a published skill whose id differs from its name, a second way in).
  for (const skill of skills) {
    if (RESERVED.has(skill.id) || overlap(uriKey([skill.id])) !== undefined) continue
    claim(skill, [skill.id], false)
  }
  return { published, unpublished, claims, deepest, addresses }
}
