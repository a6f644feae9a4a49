/**
 * Which skill owns a `skill://` URI: one rule on every surface. A folder nested in another
 * skill's URI space (from another root, or from the same root through a `skills/` folder), a
 * name twin of another skill's id, or a skill folder inside another skill's folder cannot
 * answer for another skill's files. Every file a listing advertises reads back at its URI with
 * the advertised digest and size. Skills a verifying host would reject stay off skills/list.
 */
import { createHash } from "node:crypto"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import * as Schema from "effect/Schema"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { RunningServer } from "../support/server.js"
import {
  callTool,
  decode,
  listAllSkills,
  request,
  resourceBytes,
  resourceText,
  rpcError,
  startServer,
} from "../support/server.js"
import { skillMd, writeTree } from "../support/tree.js"

const Entry = Schema.Struct({
  uri: Schema.String,
  frontmatter: Schema.Struct({ name: Schema.String }, { key: Schema.String, value: Schema.Unknown }),
  resources: Schema.Array(Schema.Struct({ uri: Schema.String, digest: Schema.String, size: Schema.Number })),
})
const ListResult = Schema.Struct({ skills: Schema.Array(Entry), nextCursor: Schema.optional(Schema.String) })
const DirectoryResult = Schema.Struct({ resources: Schema.Array(Schema.Struct({ uri: Schema.String })) })
const Diagnostics = Schema.Struct({
  unpublished: Schema.Array(Schema.Struct({ id: Schema.String, reason: Schema.String })),
  skipped: Schema.Array(Schema.Struct({ id: Schema.String, rule: Schema.String, reason: Schema.String })),
  withheld: Schema.Array(Schema.Struct({ id: Schema.String, path: Schema.String, reason: Schema.String })),
  notices: Schema.Array(Schema.Struct({ path: Schema.String, reason: Schema.String })),
})

let base: string
let server: RunningServer

const listAll = async () => (await listAllSkills(server, ListResult)).entries

const diagnostics = async () =>
  decode(Schema.parseJson(Diagnostics), await resourceText(server, "skill://diagnostics"))

/** get_skill's answer: whether it failed, and the structured result as JSON text. */
const getSkillText = async (id: string) => {
  const result = await callTool(server, "get_skill", { id })
  return { isError: result.isError === true, text: JSON.stringify(result.structuredContent ?? null) }
}

beforeAll(async () => {
  base = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "skills-mcp-ownership-")))
  const first = path.join(base, "first")
  const second = path.join(base, "second")
  await writeTree(first, {
    "pdf/SKILL.md": skillMd("pdf", "Fill PDF forms."),
    "pdf/references/forms.md": "TRUSTED forms\n",
    // Within one root, through a skills/ folder: skill path docx/tables, inside docx's URIs.
    "docx/SKILL.md": skillMd("docx", "Edit Word documents."),
    "docx/tables/guide.md": "TRUSTED tables\n",
    "skills/docx/tables/SKILL.md": skillMd("tables", "Nested in docx's URI space."),
    "skills/docx/tables/guide.md": "HIJACKED tables\n",
    // A name twin: folder aaa says it is xlsx; the folder named xlsx is the skill xlsx.
    "aaa/SKILL.md": skillMd("xlsx", "An impostor named xlsx."),
    "aaa/notes.md": "HIJACKED xlsx\n",
    "xlsx/SKILL.md": skillMd("xlsx", "Work with spreadsheets."),
    "xlsx/notes.md": "TRUSTED xlsx\n",
    // Files whose names cannot round-trip through a skill:// URI, or that the manifest URI takes.
    "odd/SKILL.md": skillMd("odd", "Odd file names."),
    "odd/back\\slash.md": "backslash\n",
    "odd/_manifest": "not the manifest\n",
    "odd/%2e%2e": "percent dots\n",
    "odd/plain.md": "plain\n",
    // A description a verifying host rejects (over 1,024 characters).
    "long-description/SKILL.md": skillMd("long-description", "x".repeat(1_068)),
    // A name a verifying host rejects (not ASCII): served by the tools, not listed.
    "café/SKILL.md": skillMd("café", "A skill named in another script."),
  })
  await writeTree(second, {
    // From a second root: skill path pdf/references, inside pdf's URI space.
    "pdf/references/SKILL.md": skillMd("references", "Nested in pdf's URI space."),
    "pdf/references/forms.md": "HIJACKED forms\n",
  })
  server = await startServer(["--skills-dir", first, "--skills-dir", second], { env: { HOME: base } })
})

afterAll(async () => {
  await server.close()
  await fs.rm(base, { recursive: true, force: true })
})

describe("URI ownership", () => {
  it("serves a skill's files from that skill, whatever another root nests below its path", async () => {
    expect(await resourceText(server, "skill://pdf/references/forms.md")).toBe("TRUSTED forms\n")
    const listing = await request(
      server,
      "resources/directory/read",
      { uri: "skill://pdf/references" },
      DirectoryResult,
    )
    expect(listing.resources.map((resource) => resource.uri)).toEqual(["skill://pdf/references/forms.md"])
    const rpc = await rpcError(server, "skills/get", { uri: "skill://pdf/references/SKILL.md" })
    expect(rpc.code).toBe(-32602)
    // The nested skill is still served by the tools, and says why it is not listed.
    expect((await getSkillText("references")).text).toContain("Nested in pdf's URI space")
    const unpublished = (await diagnostics()).unpublished.find((entry) => entry.id === "references")
    expect(unpublished?.reason).toContain("skill://pdf")
  })

  it("does the same within one root, through a skills/ folder", async () => {
    expect(await resourceText(server, "skill://docx/tables/guide.md")).toBe("TRUSTED tables\n")
    expect((await diagnostics()).unpublished.map((entry) => entry.id)).toContain("tables")
  })

  it("gives a name twin no URI of the skill whose id it names", async () => {
    expect(await resourceText(server, "skill://xlsx/notes.md")).toBe("TRUSTED xlsx\n")
    expect(await resourceText(server, "skill://xlsx/SKILL.md")).toContain("Work with spreadsheets.")
    // get_skill xlsx is the folder xlsx too, not the twin that took its name.
    const loaded = await getSkillText("xlsx")
    expect(loaded.text).toContain("Work with spreadsheets.")
    expect(loaded.text).not.toContain("An impostor named xlsx.")
    const entry = (await listAll()).find((skill) => skill.uri === "skill://xlsx/SKILL.md")
    expect(entry?.resources.map((resource) => resource.uri)).toEqual([
      "skill://xlsx/SKILL.md",
      "skill://xlsx/notes.md",
    ])
    const twin = (await diagnostics()).unpublished.find((left) => left.id === "aaa")
    expect(twin?.reason).toContain("xlsx")
  })

  it("advertises only files that read back at their URI with their digest and size", async () => {
    const entries = await listAll()
    expect(entries.length).toBeGreaterThan(0)
    for (const entry of entries) {
      for (const resource of entry.resources) {
        const bytes = await resourceBytes(server, resource.uri)
        expect(bytes.length, resource.uri).toBe(resource.size)
        expect(`sha256:${createHash("sha256").update(bytes).digest("hex")}`, resource.uri).toBe(
          resource.digest,
        )
      }
    }
    const odd = entries.find((entry) => entry.uri === "skill://odd/SKILL.md")
    expect(odd?.resources.map((resource) => resource.uri)).toEqual([
      "skill://odd/SKILL.md",
      "skill://odd/plain.md",
    ])
    const withheld = (await diagnostics()).withheld
      .filter((file) => file.id === "odd")
      .map((file) => file.path)
    expect(withheld.sort()).toEqual(["%2e%2e", "_manifest", "back\\slash.md"])
  })

  it("keeps skills a verifying host rejects off skills/list, still served by the tools, with the reason", async () => {
    const uris = (await listAll()).map((entry) => entry.uri)
    expect(uris).not.toContain("skill://long-description/SKILL.md")
    expect(uris).not.toContain("skill://café/SKILL.md")
    expect((await getSkillText("long-description")).isError).toBe(false)
    expect((await getSkillText("café")).isError).toBe(false)
    const reasons = new Map((await diagnostics()).unpublished.map((entry) => [entry.id, entry.reason]))
    expect(reasons.get("long-description")).toContain("1024")
    expect(reasons.get("café")).toContain("name")
  })

  it("finds an id written in another Unicode normalisation form", async () => {
    const decomposed = "cafe\u0301"
    expect(decomposed).not.toBe("café")
    const found = await getSkillText(decomposed)
    expect(found.isError).toBe(false)
    expect(found.text).toContain("another script")
  })
})
