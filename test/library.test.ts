/** The library surface works as the README shows. */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { Catalog, Settings, servicesLayer } from "../src/index.js"
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
})
