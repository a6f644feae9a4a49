/**
 * The Layer graph, wired once: Settings and the file system (Fs) feed Discovery, Frontmatter,
 * Validation and SkillFiles; those feed the Catalog. Used by the CLI and by library users and
 * tests.
 */
import * as Layer from "effect/Layer"
import { AuditLog } from "./AuditLog.js"
import { Catalog } from "./catalog/Catalog.js"
import { Watcher } from "./catalog/Watcher.js"
import { SkillFiles } from "./files/SkillFiles.js"
import { Fs } from "./platform/Fs.js"
import { Lint } from "./report/Lint.js"
import type { Settings } from "./Settings.js"
import { Discovery } from "./skills/Discovery.js"
import { Frontmatter } from "./skills/Frontmatter.js"
import { Validation } from "./skills/Validation.js"
import { GitSources } from "./sources/Git.js"

/** Settings and the file system, then parsing, then discovery and skill files. */
const coreLayer = <E, R>(settings: Layer.Layer<Settings, E, R>) =>
  Layer.mergeAll(Discovery.Default, SkillFiles.Default).pipe(
    Layer.provideMerge(GitSources.folders),
    Layer.provideMerge(GitSources.Default),
    Layer.provideMerge(Layer.mergeAll(Frontmatter.Default, Validation.Default)),
    Layer.provideMerge(Layer.merge(settings, Fs.node)),
  )

/** Every service but the audit sink and the watcher, from a Settings layer. */
export const servicesLayer = <E, R>(settings: Layer.Layer<Settings, E, R>) =>
  Catalog.Default.pipe(Layer.provideMerge(coreLayer(settings)))

/** What `skills-mcp validate` needs: discovery and skill files over the settings, no catalog. */
export const lintLayer = <E, R>(settings: Layer.Layer<Settings, E, R>) =>
  Lint.Default.pipe(Layer.provide(coreLayer(settings)))

/** The whole application: services, the stderr audit log and the file watcher. */
export const appLayer = <E, R>(settings: Layer.Layer<Settings, E, R>) =>
  Layer.mergeAll(servicesLayer(settings), AuditLog.stderr, Watcher.Default)
