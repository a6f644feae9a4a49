/**
 * Argument completion: skill names and ids for the `skill` prompt (those the typed text begins,
 * then the skills a search for it ranks, as `list_skills {query}` ranks them), skill paths and
 * file paths for the skill file resource template. Anything else completes to an empty list, not
 * an error.
 */
import * as Cache from "effect/Cache"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { Catalog } from "../catalog/Catalog.js"
import type { Skill } from "../catalog/Snapshot.js"
import { findSkill, perSnapshot } from "../catalog/Snapshot.js"
import { MAX_URI_CHARS, pathKey, uriKey } from "../skills/Uris.js"
import { SKILL_PROMPT } from "./prompts.js"
import { addressOf, SKILL_FILE_TEMPLATE } from "./resources.js"

/** A name or value in a completion request: skill ids, names and paths are shorter. */
const Text = Schema.String.pipe(Schema.maxLength(MAX_URI_CHARS))

export const CompleteParams = Schema.Struct({
  ref: Schema.Union(
    Schema.Struct({ type: Schema.Literal("ref/prompt"), name: Text }),
    Schema.Struct({ type: Schema.Literal("ref/resource"), uri: Text }),
  ),
  argument: Schema.Struct({ name: Text, value: Text }),
  context: Schema.optional(
    Schema.Struct({
      arguments: Schema.optional(Schema.Record({ key: Text, value: Text })),
    }),
  ),
})

/** The MCP limit on values in one completion result. */
const MAX_VALUES = 100

/** Values to complete, each once (first occurrence), with their lower-case forms. */
interface Candidates {
  readonly values: ReadonlyArray<string>
  readonly lower: ReadonlyArray<string>
}

const candidatesOf = (all: ReadonlyArray<string>): Candidates => {
  const values = [...new Set(all)]
  return { values, lower: values.map((value) => value.toLowerCase()) }
}

/** The `skill` prompt's argument takes a name or an id: both complete (one entry when equal). */
const namesAndIds = perSnapshot((snapshot) =>
  candidatesOf(snapshot.skills.flatMap((skill) => [skill.name, skill.id])),
)

/** Skill paths, for the skill file template's `skill` argument. */
const skillPaths = perSnapshot((snapshot) =>
  candidatesOf(
    snapshot.skills.flatMap((skill) => {
      const address = addressOf(snapshot, skill)
      return address === undefined ? [] : [pathKey(address.base)]
    }),
  ),
)

/** The values `value` begins, without case. */
const beginning = ({ values, lower }: Candidates, value: string) => {
  const needle = value.toLowerCase()
  return values.filter((_, index) => lower[index]?.startsWith(needle) === true)
}

/** A completion result: at most MAX_VALUES of `values`; `more` when others exist beyond them. */
const answer = (values: ReadonlyArray<string>, more: boolean) => {
  const hasMore = more || values.length > MAX_VALUES
  return {
    completion: { values: values.slice(0, MAX_VALUES), hasMore, ...(more ? {} : { total: values.length }) },
  }
}

const completion = (candidates: Candidates, value: string) => answer(beginning(candidates, value), false)

const EMPTY = { completion: { values: [], total: 0, hasMore: false } }

/** How long a skill's file list is kept for completing paths: a client asks at every keystroke. */
const FILE_LIST_TTL = "5 seconds"

/**
 * The completion handler. `listFiles` lists a skill's file paths (SkillFiles' recursive
 * listing); a list is kept for FILE_LIST_TTL, not walked again at every keystroke.
 */
export const makeCompleter = <R>(
  listFiles: (skill: Skill) => Effect.Effect<ReadonlyArray<string> | undefined, never, R>,
) =>
  Effect.gen(function* () {
    const fileLists = yield* Cache.make({
      capacity: 64,
      timeToLive: FILE_LIST_TTL,
      lookup: (skill: Skill) =>
        Effect.map(listFiles(skill), (paths) => (paths === undefined ? undefined : candidatesOf(paths))),
    })
    return (params: typeof CompleteParams.Type) =>
      Effect.gen(function* () {
        const catalog = yield* Catalog
        const snapshot = yield* catalog.snapshot
        const { ref, argument } = params
        if (ref.type === "ref/prompt") {
          if (ref.name !== SKILL_PROMPT || argument.name !== "name") return EMPTY
          const begun = beginning(namesAndIds(snapshot), argument.value)
          if (argument.value.trim() === "" || begun.length > MAX_VALUES) return answer(begun, false)
          const ranked = yield* catalog.searchTop(argument.value, MAX_VALUES)
          return answer([...new Set([...begun, ...ranked.skills.map((skill) => skill.id)])], ranked.more)
        }
        if (ref.uri !== SKILL_FILE_TEMPLATE) return EMPTY
        if (argument.name === "skill") return completion(skillPaths(snapshot), argument.value)
        if (argument.name !== "path") return EMPTY
        const chosen = params.context?.arguments?.skill
        const skill =
          chosen === undefined
            ? undefined
            : (snapshot.claims.get(uriKey(chosen.split("/")))?.skill ?? findSkill(snapshot, chosen))
        if (skill === undefined) return EMPTY
        const paths = yield* fileLists.get(skill)
        return paths === undefined ? EMPTY : completion(paths, argument.value)
      })
  })
