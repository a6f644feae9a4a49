/** Test layers: the real services over Settings given in the test, and an in-memory audit sink. */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"
import type { AuditRecord } from "../../src/AuditLog.js"
import { AuditLog } from "../../src/AuditLog.js"
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

export class AuditMemory extends Effect.Service<AuditMemory>()("test/AuditMemory", {
  effect: Ref.make<ReadonlyArray<AuditRecord>>([]).pipe(Effect.map((records) => ({ records }))),
}) {}

/** An AuditLog that keeps records in memory (read them through AuditMemory). */
export const auditMemory = Layer.effect(
  AuditLog,
  Effect.map(AuditMemory, ({ records }) => ({
    record: (record: AuditRecord) => Ref.update(records, (all) => [...all, record]),
  })),
).pipe(Layer.provideMerge(AuditMemory.Default))
