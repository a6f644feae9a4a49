/**
 * Guide: the text the server gives at `initialize` (the usage guide, and the catalog when
 * placed there), and what to tell the operator of a character budget too small for the catalog.
 */
import type { Snapshot } from "../catalog/Snapshot.js"
import type { Loader } from "../instructions.js"
import { hasCatalogRoom, MIN_CATALOG, usageGuide, withCatalog } from "../instructions.js"
import type { SettingsShape } from "../Settings.js"
import { budgetOf } from "../Settings.js"
import { catalogEntriesWithUris } from "./resources.js"
import { listedCatalog, listedSize, toolDefinitions } from "./tools.js"

/**
 * The `initialize` instructions. For a client shown no tools (`loader: "host"`), the guide and
 * catalog are about loading skills through the Skills extension, with each skill's URI.
 */
export const serverInstructions = (snapshot: Snapshot, settings: SettingsShape, loader: Loader): string => {
  const guide = usageGuide({ xml: false, loader })
  if (!catalogIn(settings, "instructions")) return guide
  const entries = loader === "host" ? catalogEntriesWithUris(snapshot) : snapshot.skills
  return withCatalog(guide, entries, budgetOf(settings, "instructions"), loader)
}

/** Whether the catalog is placed in the `instructions` or in `tools/list` (`--catalog`). */
export const catalogIn = (settings: SettingsShape, answer: "instructions" | "tools") =>
  settings.catalogPlacement === "both" ||
  settings.catalogPlacement === (answer === "instructions" ? "instructions" : "tool")

/**
 * What to tell the operator of a budget that leaves no room for the catalog it was meant to
 * hold: the text it bounds (the usage guide, the tool definitions) takes the room, or more than
 * the budget, and is then sent whole, since cut short it would mislead. Worked out from the
 * fixed texts' sizes, without rendering a catalog before `initialize` is answered, except for a
 * `tools/list` budget within a few hundred characters of its definitions.
 */
export const budgetWarnings = (snapshot: Snapshot, settings: SettingsShape): Array<string> => {
  const warnings: Array<string> = []
  const noRoom = (answer: string, budget: number, fixed: string, size: number, flag: string) =>
    `The ${answer} budget of ${budget} characters (${flag} or --catalog-budget, or their environment variables) leaves no room for a catalog: ${fixed} alone takes ${size} characters${size > budget ? ", more than the budget, and is sent whole" : ""}.`
  const instructionsBudget = budgetOf(settings, "instructions")
  if (catalogIn(settings, "instructions") && instructionsBudget > 0) {
    const loaders: ReadonlyArray<Loader> =
      settings.tools === "never" ? ["host"] : settings.tools === "auto" ? ["tools", "host"] : ["tools"]
    for (const loader of loaders) {
      const guide = usageGuide({ xml: false, loader }).length
      if (hasCatalogRoom(guide, instructionsBudget)) continue
      const which =
        settings.tools === "auto" ? ` for clients shown ${loader === "host" ? "no tools" : "tools"}` : ""
      warnings.push(
        noRoom("instructions", instructionsBudget, `the usage guide${which}`, guide, "--instructions-budget"),
      )
    }
  }
  const toolsBudget = budgetOf(settings, "tools")
  if (catalogIn(settings, "tools") && settings.tools !== "never" && toolsBudget > 0) {
    const bare = listedSize(toolDefinitions(snapshot, 0))
    const near = toolsBudget < bare + 4 * MIN_CATALOG
    if (near && !listedCatalog(toolDefinitions(snapshot, toolsBudget))) {
      warnings.push(noRoom("tools/list", toolsBudget, "the tool definitions", bare, "--tools-budget"))
    }
  }
  return warnings
}
