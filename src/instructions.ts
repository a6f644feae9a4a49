/**
 * The texts models read: the usage guide (the `init-skills` prompt, `skills-mcp instructions`
 * and the server's `instructions`) and the `<available_skills>` catalog, cut to a budget.
 */

export interface CatalogEntry {
  readonly id: string
  readonly name: string
  readonly description: string
  /** Where a host can read the skill (`skill://...`), when the catalog is for hosts. */
  readonly uri?: string
}

const GUIDE = `This environment provides Agent Skills through the skills-mcp MCP server. A skill is a folder of
instructions, scripts and reference files that teaches you how to do one kind of task well.

How to use them:
1. Before starting a task, look for a matching skill: the catalog is in the description of the
   get_skill tool, and list_skills searches every skill by words in its id, name or description.
2. When a skill's description matches the task, call get_skill with its id and follow the
   instructions it returns. Load a skill only when it is relevant; do not load every skill.
3. Paths in a skill (references/..., scripts/..., assets/...) are relative to the skill's base
   directory, which get_skill names first. Read those files with your own file tools when you
   have them; otherwise call read_skill_file with the skill id and the relative path (an empty
   path lists the skill's files).
4. Run a skill's scripts yourself, from its base directory, only when its instructions say so.
   The server never runs anything.`

/** The usage guide, wrapped in `<skills-mcp-instructions>` unless `xml` is false. */
export const usageGuide = (options: { readonly xml: boolean } = { xml: true }): string =>
  options.xml ? `<skills-mcp-instructions>\n${GUIDE}\n</skills-mcp-instructions>` : GUIDE

/** Escapes text for an XML element's content (`&`, `<`, `>`; quotes need no escaping there). */
export const escapeXml = (text: string): string =>
  text.replace(/[&<>]/g, (char) => (char === "&" ? "&amp;" : char === "<" ? "&lt;" : "&gt;"))

const renderEntry = (entry: CatalogEntry): string => {
  const name = entry.name === entry.id ? "" : `\n<name>${escapeXml(entry.name)}</name>`
  const uri = entry.uri === undefined ? "" : `\n<uri>${escapeXml(entry.uri)}</uri>`
  return `<skill>\n<id>${escapeXml(entry.id)}</id>${name}\n<description>${escapeXml(entry.description)}</description>${uri}\n</skill>\n`
}

const OPEN = "<available_skills>\n"
const CLOSE = "</available_skills>"

const moreLine = (count: number) =>
  `\n${count} more skill${count === 1 ? "" : "s"} not shown here: call list_skills with a query to find ${count === 1 ? "it" : "them"}.`

/**
 * The catalog as `<available_skills>` XML, at most `budget` characters: entries in the given
 * order while they fit, then a line saying how many more exist and how to find them.
 */
export const renderAvailableSkills = (entries: ReadonlyArray<CatalogEntry>, budget: number): string => {
  let body = ""
  let shown = 0
  for (const entry of entries) {
    const rendered = renderEntry(entry)
    const remaining = entries.length - shown - 1
    const trailer = remaining > 0 ? moreLine(remaining).length : 0
    if (OPEN.length + body.length + rendered.length + CLOSE.length + trailer > budget) break
    body += rendered
    shown++
  }
  const hidden = entries.length - shown
  return `${OPEN}${body}${CLOSE}${hidden > 0 ? moreLine(hidden) : ""}`
}
