/** The library surface works as the README shows. */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { Catalog, Lint, lintLayer, Settings, servicesLayer } from "../src/index.js"
import { PROJECT } from "./support/server.js"

describe("library", () => {
  it.effect("lists skills through the exported services and layers", () =>
    Effect.gen(function* () {
      const catalog = yield* Catalog
      const page = yield* catalog.list({ query: "pdf" })
      expect(page.skills.map((skill) => skill.id)).toEqual(["pdf-processing"])
    }).pipe(
      Effect.provide(
        servicesLayer(Settings.make({ roots: [{ path: `${PROJECT}/fixtures/valid`, explicit: true }] })),
      ),
    ),
  )

  it.effect("validates skills through the exported Lint service", () =>
    Effect.gen(function* () {
      const lint = yield* Lint
      const report = yield* lint.run({ strict: true })
      expect(report.skills.flatMap((skill) => skill.diagnostics)).toEqual([])
      expect(report.ok).toBe(true)
      expect(report.skills.map((skill) => skill.id)).toEqual(["crlf", "good-flow", "long-text"])
    }).pipe(
      Effect.provide(
        lintLayer(Settings.make({ roots: [{ path: `${PROJECT}/fixtures/lint/clean`, explicit: true }] })),
      ),
    ),
  )
})
