/**
 * Argument completion: skill names and ids for the `skill` prompt, skill paths and file paths for the
 * skill file resource template. Anything else (unknown prompts, templates or arguments)
 * completes to an empty list, not an error.
 */
import { Effect, Schema } from "effect"
import { Catalog, findSkill } from "../Catalog.js"
import { SkillFiles } from "../SkillFiles.js"
import { MAX_URI_CHARS, pathKey } from "../Uris.js"
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

const completion = (candidates: ReadonlyArray<string>, value: string) => {
  const needle = value.toLowerCase()
  const matches = [...new Set(candidates)].filter((candidate) => candidate.toLowerCase().startsWith(needle))
  return {
    completion: {
      values: matches.slice(0, MAX_VALUES),
      total: matches.length,
      hasMore: matches.length > MAX_VALUES,
    },
  }
}

const EMPTY = { completion: { values: [], total: 0, hasMore: false } }

export const complete = (params: typeof CompleteParams.Type) =>
  Effect.gen(function* () {
    const catalog = yield* Catalog
    const snapshot = yield* catalog.snapshot
    const { ref, argument } = params
    if (ref.type === "ref/prompt") {
      if (ref.name !== SKILL_PROMPT || argument.name !== "name") return EMPTY
      // The argument takes a name or an id: both complete (one entry when they are equal).
      return completion(
        snapshot.skills.flatMap((skill) => [skill.name, skill.id]),
        argument.value,
      )
    }
    if (ref.uri !== SKILL_FILE_TEMPLATE) return EMPTY
    if (argument.name === "skill") {
      return completion(
        snapshot.skills.flatMap((skill) => {
          const address = addressOf(snapshot, skill)
          return address === undefined ? [] : [pathKey(address.base)]
        }),
        argument.value,
      )
    }
    if (argument.name !== "path") return EMPTY
    const chosen = params.context?.arguments?.skill
    const skill =
      chosen === undefined ? undefined : (snapshot.bySkillPath.get(chosen) ?? findSkill(snapshot, chosen))
    if (skill === undefined) return EMPTY
    const files = yield* SkillFiles
    const listing = yield* files.list(skill, "").pipe(Effect.orElseSucceed(() => undefined))
    if (listing === undefined) return EMPTY
    return completion(
      listing.entries.map((entry) => entry.path),
      argument.value,
    )
  })
