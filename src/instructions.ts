/**
 * The texts models read: the usage guide (the `init-skills` prompt, `skills-mcp instructions`
 * and the server's `instructions`) and the `<available_skills>` catalog, cut to a budget.
 *
 * The catalog lists the best entries that fit its budget, "best" being, in this order:
 * 1. skills of earlier roots (the first skills folder given comes first, as it wins on
 *    duplicate ids);
 * 2. within a root, skills without errors (a name that follows the naming rules and equals
 *    its folder, a description within 1,024 characters) before the others;
 * 3. then catalog order (folder path order).
 * Entries are never cut: one that does not fit is passed over, and later (shorter) ones still
 * may fit. When some are left out, a last line says how many and to search them all with
 * `list_skills` and a query.
 */

export interface CatalogEntry {
  readonly id: string
  readonly name: string
  readonly description: string
  /** Where a host can read the skill (`skill://...`), when the catalog is for hosts. */
  readonly uri?: string
  /** Priority of the skill's root (0 is the first); earlier roots are listed first. */
  readonly rootIndex?: number
  /** The skill's lint results: a skill with an error is listed after those without. */
  readonly diagnostics?: ReadonlyArray<{ readonly severity: "error" | "warning" }>
}

const GUIDE = `This environment provides Agent Skills through the skills-mcp MCP server. A skill is a folder of
instructions, scripts and reference files that teaches you how to do one kind of task well.

How to use them:
1. Before starting a task, look for a matching skill: the catalog is in the description of the
   get_skill tool (when there are many skills, only the first ones), and list_skills with a
   query (a few words about the task) searches every skill, best matches first.
2. When a skill's description matches the task, call get_skill with its id and follow the
   instructions it returns. Load a skill only when it is relevant; do not load every skill.
3. Paths in a skill (references/..., scripts/..., assets/...) are relative to the skill's base
   directory, which get_skill names first. Read those files with your own file tools when you
   have them; otherwise call read_skill_file with the skill id and the relative path (an empty
   path lists the skill's files).
4. Run a skill's scripts yourself, from its base directory, only when its instructions say so.
   The server never runs anything.`

/** The guide when the host loads skills itself (MCP Skills extension) and no skill tools are listed. */
const HOST_GUIDE = `This environment provides Agent Skills through the skills-mcp MCP server; your host loads them
through the MCP Skills extension. A skill is a folder of instructions, scripts and reference files
that teaches you how to do one kind of task well.

How to use them:
1. Before starting a task, look for a matching skill in the catalog (when there are many skills,
   only the first ones are shown; your host lists them all).
2. When a skill's description matches the task, load it (its SKILL.md, at the URI the catalog
   gives) and follow its instructions. Load a skill only when it is relevant.
3. Paths in a skill (references/..., scripts/..., assets/...) are relative to the folder of its
   SKILL.md: references/guide.md in skill://pdf/SKILL.md is skill://pdf/references/guide.md.
4. Run a skill's scripts only when its instructions say so. The server never runs anything.`

/**
 * Who finds and loads the skills: the model, through this server's tools (list_skills,
 * get_skill, read_skill_file), or the host, through the MCP Skills extension (no tools listed).
 */
export type Loader = "tools" | "host"

/** The usage guide, wrapped in `<skills-mcp-instructions>` unless `xml` is false. */
export const usageGuide = (
  options: { readonly xml: boolean; readonly loader?: Loader } = { xml: true },
): string => {
  const guide = options.loader === "host" ? HOST_GUIDE : GUIDE
  return options.xml ? `<skills-mcp-instructions>\n${guide}\n</skills-mcp-instructions>` : guide
}

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
/** The shortest entry there can be: once less room than this is left, no entry fits. */
const MIN_ENTRY = renderEntry({ id: "x", name: "x", description: "x" }).length
/** Room below which a catalog could not even say how many skills it leaves out. */
export const MIN_CATALOG = 200

const moreLine = (hidden: number, total: number, loader: Loader) =>
  loader === "host"
    ? `\n${hidden} more skill${hidden === 1 ? "" : "s"} not shown here, of ${total}: your host lists them all.`
    : `\n${hidden} more skill${hidden === 1 ? "" : "s"} not shown here: call list_skills with a query (a few words about the task) to search all ${total} skills, best matches first.`

const hasError = (entry: CatalogEntry) =>
  entry.diagnostics?.some((diagnostic) => diagnostic.severity === "error") === true ? 1 : 0

/** The entries best first (see the top of this file); stable, so equal entries keep their order. */
export const bestFirst = <A extends CatalogEntry>(entries: ReadonlyArray<A>): Array<A> =>
  entries
    .map((entry, position) => ({ entry, position, root: entry.rootIndex ?? 0, error: hasError(entry) }))
    .sort((a, b) => a.root - b.root || a.error - b.error || a.position - b.position)
    .map(({ entry }) => entry)

/**
 * `text`, a blank line and the catalog, all of it within `budget` characters: the catalog gets
 * what the text leaves. Just `text` when the budget is 0 or leaves no room for a catalog.
 */
export const withCatalog = (
  text: string,
  entries: ReadonlyArray<CatalogEntry>,
  budget: number,
  loader: Loader = "tools",
): string => {
  return budget <= 0 || !hasCatalogRoom(text.length, budget)
    ? text
    : `${text}\n\n${renderAvailableSkills(entries, budget - text.length - 2, loader)}`
}

/** Whether `budget` characters leave a catalog room beside a text of `length` characters. */
export const hasCatalogRoom = (length: number, budget: number) => budget - length - 2 >= MIN_CATALOG

/** Rendered catalogs by entry list, budget and loader: a snapshot's catalog is rendered once. */
const rendered = new WeakMap<ReadonlyArray<CatalogEntry>, Map<string, string>>()

/**
 * The catalog as `<available_skills>` XML, at most `budget` characters: the best entries that
 * fit, then a line saying how many more exist and how to find them (for `loader`).
 */
export const renderAvailableSkills = (
  entries: ReadonlyArray<CatalogEntry>,
  budget: number,
  loader: Loader = "tools",
): string => {
  const key = `${loader} ${budget}`
  const cached = rendered.get(entries)?.get(key)
  if (cached !== undefined) return cached
  const text = render(entries, budget, loader)
  const byKey = rendered.get(entries) ?? new Map<string, string>()
  byKey.set(key, text)
  rendered.set(entries, byKey)
  return text
}

const render = (entries: ReadonlyArray<CatalogEntry>, budget: number, loader: Loader): string => {
  const ordered = bestFirst(entries)
  const texts: Array<string> = []
  // Everything, when it fits without the last line.
  let free = budget - OPEN.length - CLOSE.length
  for (const entry of ordered) {
    const text = renderEntry(entry)
    if (text.length > free) break
    texts.push(text)
    free -= text.length
  }
  if (texts.length === ordered.length) return `${OPEN}${texts.join("")}${CLOSE}`
  // Otherwise the best that fit beside the last line (sized for the most that can be hidden).
  free = budget - OPEN.length - CLOSE.length - moreLine(ordered.length, ordered.length, loader).length
  let body = ""
  let shown = 0
  for (let index = 0; index < ordered.length && free >= MIN_ENTRY; index++) {
    const entry = ordered[index]
    if (entry === undefined) break
    // Most entries cannot fit what is left once the catalog is nearly full: ruled out from
    // their length alone (escaping only lengthens), without rendering them.
    if (texts[index] === undefined && MIN_ENTRY - 2 + entry.id.length + entry.description.length > free)
      continue
    const text = texts[index] ?? renderEntry(entry)
    if (text.length > free) continue
    body += text
    free -= text.length
    shown++
  }
  return `${OPEN}${body}${CLOSE}${moreLine(ordered.length - shown, ordered.length, loader)}`
}
