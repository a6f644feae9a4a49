/**
 * Prompts: `init-skills` (the usage guide, the same text as `skills-mcp instructions`),
 * `skill {name}` (load any skill; its argument completes), and one prompt per skill, named by
 * its id. A skill prompt embeds SKILL.md as a resource meant for the assistant.
 */
import { pathToFileURL } from "node:url"
import type { GetPromptResult, Prompt } from "@modelcontextprotocol/sdk/types.js"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { Catalog } from "../catalog/Catalog.js"
import { paginate } from "../catalog/Paging.js"
import type { Skill, Snapshot } from "../catalog/Snapshot.js"
import { findSkill, perSnapshot } from "../catalog/Snapshot.js"
import { echo, InvalidArgument, SkillNotFound } from "../Errors.js"
import { SkillFiles } from "../files/SkillFiles.js"
import { usageGuide } from "../instructions.js"
import { Settings } from "../Settings.js"
import type { ListParams } from "./Run.js"
import { skillResourceUri } from "./resources.js"

const INIT_SKILLS = "init-skills"
export const SKILL_PROMPT = "skill"
const BUILT_IN = new Set([INIT_SKILLS, SKILL_PROMPT])

/** A prompt's name or argument: a skill id or name is at most this long. */
const PromptText = Schema.String.pipe(
  Schema.maxLength(1_000, { message: () => "longer than 1000 characters" }),
)

export const GetPromptParams = Schema.Struct({
  name: PromptText,
  arguments: Schema.optional(Schema.Record({ key: PromptText, value: PromptText })),
})

const builtIns: ReadonlyArray<Prompt> = [
  {
    name: INIT_SKILLS,
    title: "Use Agent Skills",
    description:
      "How to find, load and use the Agent Skills this server provides (the skills-mcp usage guide).",
  },
  {
    name: SKILL_PROMPT,
    title: "Load a skill",
    description: "Load one skill's instructions (its SKILL.md) into the conversation.",
    arguments: [
      { name: "name", description: "The skill's id or name (completes as you type).", required: true },
    ],
  },
]

/** Skills that get a prompt of their own: those whose id does not clash with a built-in prompt. */
const promptedSkills = (snapshot: Snapshot) => snapshot.skills.filter((skill) => !BUILT_IN.has(skill.id))

/** What `prompts/list` pages through, once per snapshot. */
const promptsOf = perSnapshot(
  (snapshot): ReadonlyArray<Prompt | Skill> => [...builtIns, ...promptedSkills(snapshot)],
)

export const listPrompts = (params: typeof ListParams.Type) =>
  Effect.gen(function* () {
    const catalog = yield* Catalog
    const { protocolPageSize } = yield* Settings
    const snapshot = yield* catalog.snapshot
    const { page, nextCursor } = yield* paginate(promptsOf(snapshot), protocolPageSize, params.cursor)
    const prompts = page.map(
      (item): Prompt =>
        "id" in item ? { name: item.id, title: item.name, description: item.description } : item,
    )
    return { prompts, ...(nextCursor === undefined ? {} : { nextCursor }) }
  })

/** A skill as a prompt: a line naming it and its base directory, then SKILL.md for the assistant. */
const skillPrompt = (snapshot: Snapshot, skill: Skill) =>
  Effect.gen(function* () {
    const files = yield* SkillFiles
    // SKILL.md is text by contract; bytes that are not UTF-8 become U+FFFD.
    const file = yield* files.readBytes(skill, "SKILL.md")
    const text = Buffer.from(file.bytes).toString("utf8")
    const result: GetPromptResult = {
      description: skill.description,
      messages: [
        {
          role: "user",
          content: {
            type: "text",
            text: `Use the skill '${skill.id}'. Its instructions follow; relative paths in them resolve against its base directory: ${skill.dir}`,
          },
        },
        {
          role: "user",
          content: {
            type: "resource",
            resource: {
              // A skill no skill:// URI leads to (see addressOf) is named by its file on disk.
              uri: skillResourceUri(snapshot, skill) ?? pathToFileURL(skill.file).href,
              mimeType: "text/markdown",
              text,
            },
            annotations: { audience: ["assistant"], priority: 1 },
          },
        },
      ],
    }
    return result
  })

export const getPrompt = (params: typeof GetPromptParams.Type) =>
  Effect.gen(function* () {
    if (params.name === INIT_SKILLS) {
      const result: GetPromptResult = {
        description: "How to use the Agent Skills this server provides.",
        messages: [{ role: "user", content: { type: "text", text: usageGuide({ xml: true }) } }],
      }
      return result
    }
    const catalog = yield* Catalog
    const snapshot = yield* catalog.snapshot
    if (params.name === SKILL_PROMPT) {
      const wanted = params.arguments?.name
      if (wanted === undefined || wanted.trim() === "") {
        return yield* new InvalidArgument({
          argument: "name",
          reason: "the skill prompt needs the skill's id or name",
        })
      }
      const skill = yield* catalog.get(wanted)
      return yield* skillPrompt(snapshot, skill)
    }
    const skill = BUILT_IN.has(params.name) ? undefined : snapshot.byId.get(params.name)
    if (skill === undefined) {
      const known = findSkill(snapshot, params.name)
      return yield* known === undefined
        ? new InvalidArgument({
            argument: "name",
            reason: `no prompt '${echo(params.name)}'; call prompts/list to see the prompts`,
          })
        : new SkillNotFound({ query: params.name, suggestions: [known.id] })
    }
    return yield* skillPrompt(snapshot, skill)
  })
