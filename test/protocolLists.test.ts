import * as fs from "node:fs/promises"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { makeCompleter } from "../src/mcp/completion.js"
import { listPrompts, SKILL_PROMPT } from "../src/mcp/prompts.js"
import { listResources, SKILL_FILE_TEMPLATE } from "../src/mcp/resources.js"
import { servicesFor } from "./support/layers.js"
import { skillMd, tempTree } from "./support/tree.js"

// All three are made once per catalog snapshot (src/mcp/resources.ts, prompts.ts, completion.ts): a
// change must show in the next answer, and the same catalog give the same answer.
describe("resources/list, prompts/list and completion", () => {
  it.scoped("follow the catalog through a change, and answer the same catalog alike", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({
        "alpha/SKILL.md": skillMd("alpha", "Alpha."),
        "beta/SKILL.md": skillMd("beta", "Beta."),
      })
      const names = Effect.map(listResources({}), (result) =>
        result.resources.map((resource) => resource.name),
      )
      const prompts = Effect.map(listPrompts({}), (result) => result.prompts.map((prompt) => prompt.name))
      const complete = yield* makeCompleter(() => Effect.succeed(undefined))
      const completions = (value: string) =>
        Effect.map(
          complete({ ref: { type: "ref/prompt", name: SKILL_PROMPT }, argument: { name: "name", value } }),
          (result) => result.completion.values,
        )
      yield* Effect.gen(function* () {
        const first = yield* names
        expect(first).toEqual(["prompt-xml", "diagnostics", "alpha", "beta"])
        expect(yield* names).toEqual(first)
        expect(yield* prompts).toEqual(["init-skills", SKILL_PROMPT, "alpha", "beta"])
        expect(yield* completions("A")).toEqual(["alpha"])
        expect(yield* completions("g")).toEqual([])

        yield* Effect.promise(async () => {
          await fs.mkdir(`${root}/gamma`)
          await fs.writeFile(`${root}/gamma/SKILL.md`, skillMd("gamma", "Gamma."))
        })
        expect(yield* names).toEqual(["prompt-xml", "diagnostics", "alpha", "beta", "gamma"])
        expect(yield* prompts).toEqual(["init-skills", SKILL_PROMPT, "alpha", "beta", "gamma"])
        expect(yield* completions("g")).toEqual(["gamma"])
      }).pipe(Effect.provide(servicesFor([root], { watch: false })))
    }),
  )
})

describe("completion of a skill's file paths", () => {
  it.scoped("lists the skill's files once while a client completes keystroke by keystroke", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({
        "pdf/SKILL.md": skillMd("pdf", "PDF."),
        "pdf/references/forms.md": "forms",
        "pdf/references/fonts.md": "fonts",
      })
      let listings = 0
      const complete = yield* makeCompleter(() =>
        Effect.sync(() => {
          listings++
          return ["SKILL.md", "references", "references/fonts.md", "references/forms.md"]
        }),
      )
      const paths = (value: string) =>
        Effect.map(
          complete({
            ref: { type: "ref/resource", uri: SKILL_FILE_TEMPLATE },
            argument: { name: "path", value },
            context: { arguments: { skill: "pdf" } },
          }),
          (result) => result.completion.values,
        )
      yield* Effect.gen(function* () {
        expect(yield* paths("r")).toEqual(["references", "references/fonts.md", "references/forms.md"])
        expect(yield* paths("references/fo")).toEqual(["references/fonts.md", "references/forms.md"])
        expect(yield* paths("references/for")).toEqual(["references/forms.md"])
        expect(listings).toBe(1)
      }).pipe(Effect.provide(servicesFor([root], { watch: false })))
    }),
  )
})
