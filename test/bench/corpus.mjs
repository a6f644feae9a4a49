/**
 * Deterministic skill corpora for the benchmark: the same size gives the same tree, byte for
 * byte, on every machine. Shaped like real collections: ids built from a topic, an action and
 * sometimes a qualifier; descriptions of 100-400 characters; SKILL.md bodies of 1-8 KB; about
 * 45% of skills with references/, 35% with scripts/, 20% with assets/; a few frontmatters in
 * YAML forms the fast path does not take (folded descriptions, quoted numbers in metadata).
 */
import * as fs from "node:fs"
import * as path from "node:path"

/** Bump when the generated tree changes, so cached corpora are rebuilt. */
export const CORPUS_VERSION = 1

const TOPICS = (
  "pdf csv excel docx pptx markdown latex html json yaml xml kubernetes docker terraform ansible aws gcp azure " +
  "react vue svelte angular python rust golang java kotlin swift sql postgres mysql sqlite redis kafka graphql " +
  "grpc openapi security a11y i18n seo logging metrics tracing git changelog release testing fuzzing lint " +
  "image video audio diagram chart dataset notebook pandas numpy ml llm prompt email slack calendar invoice " +
  "contract finance budget hiring onboarding support ticket incident oncall backup storage cache queue auth " +
  "oauth payments stripe shopify analytics dashboard survey translation typography brand figma icons fonts"
).split(" ")

const ACTIONS = (
  "analysis audit authoring backup cleanup conversion debugging deployment design documentation extraction " +
  "formatting generation linting migration monitoring optimization profiling refactoring reporting review " +
  "scaffolding search testing triage validation visualization summarizing planning"
).split(" ")

const QUALIFIERS = "batch quick local cloud incremental secure team legacy offline".split(" ")

const VERBS = (
  "create edit convert validate extract merge split summarize review analyze generate format check clean " +
  "compare migrate document test deploy monitor profile refactor translate visualize"
).split(" ")

const OBJECTS = (
  "files reports tables charts records templates configs schemas pipelines dashboards datasets documents " +
  "notes pages components modules queries logs alerts releases contracts invoices tests fixtures diagrams"
).split(" ")

const FILLER = (
  "the a of to and with for when data file user check result value field output input step rule note " +
  "first then each every small large fast safe clear simple quickly carefully always never only also must " +
  "should can will may run read write list find keep use make take build open close"
).split(" ")

/** xorshift32 seeded per skill: any skill can be generated alone. */
const rng = (seed) => {
  // Neighbouring seeds must not give neighbouring sequences: mix the seed first.
  let state = Math.imul(seed ^ (seed >>> 16) ^ 0x9e3779b9, 0x45d9f3b)
  state = Math.imul(state ^ (state >>> 16), 0x45d9f3b)
  state = (state ^ (state >>> 16)) >>> 0 || 1
  return () => {
    state ^= state << 13
    state >>>= 0
    state ^= state >>> 17
    state ^= state << 5
    state >>>= 0
    return state / 4294967296
  }
}

const pick = (random, list) => list[Math.floor(random() * list.length)]
const between = (random, low, high) => low + Math.floor(random() * (high - low + 1))

const sentence = (random, words) => {
  const parts = Array.from({ length: words }, () => pick(random, FILLER))
  const text = parts.join(" ")
  return `${text[0].toUpperCase()}${text.slice(1)}.`
}

const paragraph = (random, bytes) => {
  let text = ""
  while (text.length < bytes) text += `${sentence(random, between(random, 6, 16))} `
  return text.trim()
}

/** The id of skill `index`: unique within the corpus (a suffix settles collisions). */
const baseId = (random) => {
  const topic = pick(random, TOPICS)
  const action = pick(random, ACTIONS)
  return random() < 0.3 ? `${pick(random, QUALIFIERS)}-${topic}-${action}` : `${topic}-${action}`
}

const description = (random, topic) => {
  const target = between(random, 100, 400)
  const verb = pick(random, VERBS)
  let text = `${verb[0].toUpperCase()}${verb.slice(1)} ${topic} ${pick(random, OBJECTS)}`
  while (text.length < target - 60) {
    text += `, ${pick(random, VERBS)} ${pick(random, OBJECTS)}`
  }
  text += ` and ${pick(random, VERBS)} ${pick(random, OBJECTS)}. Use when the user works with ${topic} ${pick(random, OBJECTS)}.`
  return text.slice(0, 400)
}

/** Every file of skill `index` (relative path -> content), and its id. */
export const skillFiles = (index, id) => {
  const random = rng(index + 1)
  // The id was drawn from the same sequence; drawing it again keeps the rest aligned.
  const drawn = baseId(random)
  const topic = drawn.split("-").find((part) => TOPICS.includes(part)) ?? "data"
  const text = description(random, topic)
  const form = random()
  const lines = [`name: ${id}`]
  if (form < 0.05) lines.push(`description: >-\n  ${text.replace(/\. /g, ".\n  ")}`)
  else if (form < 0.5) lines.push(`description: '${text.replace(/'/g, "''")}'`)
  else lines.push(`description: ${text.includes(": ") ? `"${text}"` : text}`)
  if (random() < 0.5) lines.push("license: MIT")
  if (random() < 0.3)
    lines.push(`metadata:\n  author: ${pick(random, FILLER)}-team\n  version: "1.${between(random, 0, 9)}"`)
  if (random() < 0.1) lines.push("allowed-tools: Read Grep")
  const title = id
    .split("-")
    .map((part) => `${part[0].toUpperCase()}${part.slice(1)}`)
    .join(" ")
  const sections = [`# ${title}`, "", paragraph(random, 300)]
  const bodyBytes = between(random, 1_000, 8_000)
  while (sections.join("\n").length < bodyBytes) {
    sections.push(
      "",
      `## ${sentence(random, 3).slice(0, -1)}`,
      "",
      paragraph(random, between(random, 200, 900)),
    )
  }
  const files = { "SKILL.md": `---\n${lines.join("\n")}\n---\n\n${sections.join("\n")}\n` }
  if (random() < 0.45) {
    const count = between(random, 1, 3)
    for (let i = 0; i < count; i++)
      files[`references/guide-${i}.md`] =
        `# Guide ${i}\n\n${paragraph(random, between(random, 500, 4_000))}\n`
  }
  if (random() < 0.35)
    files["scripts/run.py"] = `#!/usr/bin/env python3\nprint(${JSON.stringify(sentence(random, 6))})\n`
  if (random() < 0.2) files["assets/template.txt"] = `${paragraph(random, between(random, 200, 1_500))}\n`
  return files
}

/**
 * `count` distinct search queries, as an agent might send them: a topic, a topic and an
 * action, a verb with a topic and an object, a word beginning, a word with a typo.
 */
export const benchQueries = (count) => {
  const random = rng(424242)
  const queries = new Set()
  const typo = (word) => {
    const at = between(random, 1, word.length - 2)
    return `${word.slice(0, at)}${word.slice(at + 1)}`
  }
  for (let attempt = 0; queries.size < count; attempt++) {
    const topic = pick(random, TOPICS)
    const action = pick(random, ACTIONS)
    const kind = attempt % 5
    if (kind === 0) queries.add(topic)
    else if (kind === 1) queries.add(`${topic} ${action}`)
    else if (kind === 2) queries.add(`${pick(random, VERBS)} ${topic} ${pick(random, OBJECTS)}`)
    else if (kind === 3) queries.add(`${action.slice(0, 5)}`)
    else queries.add(action.length >= 6 ? `${topic} ${typo(action)}` : `${typo(`${action}s`)}`)
  }
  return [...queries]
}

/** The ids of a corpus of `size` skills, in generation order. */
export const corpusIds = (size) => {
  const seen = new Set()
  const ids = []
  for (let index = 0; index < size; index++) {
    const base = baseId(rng(index + 1))
    let id = base
    for (let n = 2; seen.has(id); n++) id = `${base}-${n}`
    seen.add(id)
    ids.push(id)
  }
  return ids
}

/**
 * Makes sure `dir` holds the corpus of `size` skills (a marker file records what was
 * generated; a complete corpus is reused as it is). Returns the ids.
 */
export const ensureCorpus = (dir, size) => {
  const ids = corpusIds(size)
  const marker = path.join(dir, ".bench-corpus.json")
  const wanted = JSON.stringify({ version: CORPUS_VERSION, size })
  if (fs.existsSync(marker) && fs.readFileSync(marker, "utf8") === wanted) return ids
  fs.rmSync(dir, { recursive: true, force: true })
  fs.mkdirSync(dir, { recursive: true })
  for (const [index, id] of ids.entries()) writeSkill(dir, index, id)
  fs.writeFileSync(marker, wanted)
  return ids
}

/** Writes (or rewrites, as generated) skill `index` under `dir`. */
export const writeSkill = (dir, index, id) => {
  for (const [relative, content] of Object.entries(skillFiles(index, id))) {
    const file = path.join(dir, id, relative)
    fs.mkdirSync(path.dirname(file), { recursive: true })
    fs.writeFileSync(file, content)
  }
}
