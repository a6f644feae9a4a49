/** Test layers: the real services over Settings given in the test. */
import { servicesLayer } from "../../src/Live.js"
import type { SettingsShape } from "../../src/Settings.js"
import { Settings } from "../../src/Settings.js"

/** Catalog, SkillFiles and friends over the given roots (checked on every call by default). */
export const servicesFor = (roots: ReadonlyArray<string>, overrides: Partial<SettingsShape> = {}) =>
  servicesLayer(
    Settings.make({
      roots: roots.map((root) => ({ path: root, explicit: true })),
      refreshIntervalMs: 0,
      ...overrides,
    }),
  )
