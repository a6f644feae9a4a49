/**
 * Prompts: `init-skills`, the usage guide (the same text as `skills-mcp instructions`).
 */
import type { GetPromptResult, Prompt } from "@modelcontextprotocol/sdk/types.js"
import { Effect, Schema } from "effect"
import { InvalidArgument } from "../Errors.js"
import { usageGuide } from "../instructions.js"

export const INIT_SKILLS = "init-skills"

export const GetPromptParams = Schema.Struct({
  name: Schema.String,
  arguments: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String })),
})

export const promptDefinitions = (): Array<Prompt> => [
  {
    name: INIT_SKILLS,
    title: "Use Agent Skills",
    description:
      "How to find, load and use the Agent Skills this server provides (the skills-mcp usage guide).",
  },
]

export const getPrompt = (
  params: typeof GetPromptParams.Type,
): Effect.Effect<GetPromptResult, InvalidArgument> =>
  params.name === INIT_SKILLS
    ? Effect.succeed({
        description: "How to use the Agent Skills this server provides.",
        messages: [{ role: "user", content: { type: "text", text: usageGuide({ xml: true }) } }],
      })
    : Effect.fail(
        new InvalidArgument({
          argument: "name",
          reason: `no prompt '${params.name.slice(0, 100)}'; call prompts/list to see the prompts`,
        }),
      )
