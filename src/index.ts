/**
 * skills-mcp as a library: the Effect services and their layers, the typed errors, the
 * MCP server, and the texts models read. `servicesLayer(Settings.make({ roots }))` gives a
 * working Catalog and SkillFiles; `serve({ input, output })` runs the MCP server on any
 * pair of streams.
 */
export { AuditLog, type AuditLogShape, type AuditRecord, formatAuditLine } from "./AuditLog.js"
export { Catalog, type CatalogChange, type ListOptions } from "./catalog/Catalog.js"
export type { ListPage } from "./catalog/Paging.js"
export {
  findSkill,
  type ShadowedSkill,
  type Skill,
  type SkippedSkill,
  type Snapshot,
} from "./catalog/Snapshot.js"
export * from "./Errors.js"
export type { SkillRef } from "./files/Containment.js"
export type { Listing, ListingEntry } from "./files/Folders.js"
export type { TextFile } from "./files/Reading.js"
export { SkillFiles } from "./files/SkillFiles.js"
export { type CatalogEntry, renderAvailableSkills, usageGuide } from "./instructions.js"
export { appLayer, lintLayer, servicesLayer } from "./Live.js"
export { StderrJsonLogging, StderrTextLogging } from "./Logging.js"
export { serve } from "./mcp/Serve.js"
export { makeServer } from "./mcp/Server.js"
export { LineTransport } from "./mcp/Transport.js"
export { resolveSettings, type SettingsInput } from "./Options.js"
export { type Fingerprint, isInside } from "./platform/Paths.js"
export {
  type CatalogReport,
  catalogReport,
  diagnosticsDocument,
  formatCatalogReport,
} from "./report/CatalogReport.js"
export { formatLintReport, Lint, LintDiagnostic, LintedSkill, LintReport } from "./report/Lint.js"
export { defaults, type Root, Settings, type SettingsShape } from "./Settings.js"
export {
  type Candidate,
  Discovery,
  type DiscoveryNotice,
  type DiscoveryResult,
  SKILL_FILE,
} from "./skills/Discovery.js"
export {
  Frontmatter,
  type ParsedFrontmatter,
  parseSkillText,
  type SkillFrontmatter,
  splitFrontmatter,
} from "./skills/Frontmatter.js"
export {
  checkSkill,
  type Diagnostic,
  isValidName,
  nameProblems,
  RULES,
  type RuleId,
  type Severity,
  Validation,
} from "./skills/Validation.js"
export { SERVER_NAME, VERSION } from "./version.js"
