/**
 * Which URI names which skill, when folders and names disagree: a name that differs from its
 * folder, a name that is another skill's id (across roots too), a skill's folder named like
 * another skill's published path, and a skill named like one of the catalog documents. Every
 * URI the server hands out must lead back to the skill it was handed out for, and the skill a
 * URI names is the one get_skill names the same way (src/catalog/Publication.ts).
 */
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import type { Resource } from "@modelcontextprotocol/sdk/types.js"
import * as Schema from "effect/Schema"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { RunningServer } from "../support/server.js"
import { callTool, decode, request, resourceText, rpcError, startServer } from "../support/server.js"
import { skillMd, writeTree } from "../support/tree.js"

let base: string
let first: string
let second: string
let server: RunningServer

beforeAll(async () => {
  base = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "skills-mcp-addressing-")))
  first = path.join(base, "first")
  second = path.join(base, "second")
  await writeTree(first, {
    // Its name is another skill's id (the folder bar): not published, reached at skill://foo.
    "foo/SKILL.md": skillMd("bar", "Foo's folder, named bar."),
    // Not publishable (the name breaks the naming rules); skill://bar is its id's URI.
    "bar/SKILL.md": skillMd("Bar Thing", "Bar's folder, with a human name."),
    // Its name is the id of the second root's skill: that one is published at skill://template-skill.
    "template/SKILL.md": skillMd("template-skill", "Template, first root."),
    "template/references/guide.md": "# Guide\n",
    // Named like the catalog document skill://prompt-xml: its folder is still a directory.
    "prompt-xml/SKILL.md": skillMd("prompt-xml", "A skill named prompt-xml."),
    "prompt-xml/notes.md": "notes\n",
    // A name in another script: hosts that verify skills/list reject it; reached at its id's URI.
    "café/SKILL.md": skillMd("café", "A skill with a Unicode name."),
    // Its id is a catalog document's URI and its name is not publishable: no skill:// URI.
    "diagnostics/SKILL.md": skillMd("Diagnostics Helper", "A skill no URI leads to."),
  })
  await writeTree(second, {
    // The folder whose id is template-skill: it owns skill://template-skill.
    "template-skill/SKILL.md": skillMd("template-skill", "Template, second root."),
  })
  server = await startServer([first, second], { env: { HOME: base } })
})

afterAll(async () => {
  await server.close()
  await fs.rm(base, { recursive: true, force: true })
})

const SkillList = Schema.Struct({ skills: Schema.Array(Schema.Struct({ uri: Schema.String })) })
const SkillGot = Schema.Struct({
  skill: Schema.Struct({
    frontmatter: Schema.Struct({ description: Schema.String }),
    resources: Schema.Array(Schema.Struct({ uri: Schema.String })),
  }),
})
const Listing = Schema.Struct({ resources: Schema.Array(Schema.Struct({ uri: Schema.String })) })

describe("URIs when names and folders disagree", () => {
  it("lists each skill's SKILL.md at a URI that reads back that skill, and leaves out one no URI leads to", async () => {
    const listed: Array<Resource> = []
    let cursor: string | undefined
    do {
      const page = await server.client.listResources(cursor === undefined ? {} : { cursor })
      listed.push(...page.resources)
      cursor = page.nextCursor
    } while (cursor !== undefined)
    const skills = listed.filter((resource) => resource.mimeType === "text/markdown")
    expect(skills.map((resource) => resource.uri).sort()).toEqual([
      "skill://bar",
      "skill://café",
      "skill://foo",
      "skill://prompt-xml/SKILL.md",
      "skill://template",
      "skill://template-skill/SKILL.md",
    ])
    for (const resource of skills) {
      const text = await resourceText(server, resource.uri)
      expect(text, resource.uri).toContain(`description: ${resource.description}`)
    }
  })

  it("serves a name's URI from the skill whose id it is, as get_skill does, and says so on stderr", async () => {
    const { skills } = await request(server, "skills/list", {}, SkillList)
    expect(skills.map((skill) => skill.uri).sort()).toEqual([
      "skill://prompt-xml/SKILL.md",
      "skill://template-skill/SKILL.md",
    ])
    const { skill } = await request(
      server,
      "skills/get",
      { uri: "skill://template-skill/SKILL.md" },
      SkillGot,
    )
    expect(skill.frontmatter.description).toBe("Template, second root.")
    expect(skill.resources.map((resource) => resource.uri)).toEqual(["skill://template-skill/SKILL.md"])
    expect(server.stderr()).toContain(path.join(first, "template", "SKILL.md"))
    const loaded = await callTool(server, "get_skill", { id: "template-skill" })
    expect(JSON.stringify(loaded.structuredContent)).toContain("Template, second root.")
    // A skill left off skills/list is refused there with the reason, in either spelling of its URI.
    for (const uri of ["skill://café/SKILL.md", "skill://caf%C3%A9/SKILL.md"]) {
      const refused = await rpcError(server, "skills/get", { uri })
      expect(refused.code).toBe(-32602)
      expect(refused.message).toContain("not served over the MCP Skills extension")
    }
  })

  it("reads a skill's folder by its id for older clients, wherever no other skill's URIs are", async () => {
    expect(await resourceText(server, "skill://template")).toContain("Template, first root.")
    expect(await resourceText(server, "skill://template/references/guide.md")).toBe("# Guide\n")
    // skill://bar is the folder bar, as get_skill bar is; the skill named bar is at skill://foo.
    expect(await resourceText(server, "skill://bar")).toContain("Bar's folder, with a human name.")
    expect(await resourceText(server, "skill://foo")).toContain("Foo's folder, named bar.")
    const manifest = decode(
      Schema.parseJson(Schema.Struct({ skill: Schema.String })),
      await resourceText(server, "skill://bar/_manifest"),
    )
    expect(manifest.skill).toBe("bar")
  })

  it("names a skill no skill:// URI leads to by its file in prompts, and completes names and ids", async () => {
    const prompt = await server.client.getPrompt({ name: "skill", arguments: { name: "Diagnostics Helper" } })
    const embedded = prompt.messages.find((message) => message.content.type === "resource")?.content
    expect(embedded).toMatchObject({
      type: "resource",
      resource: { uri: `file://${path.join(first, "diagnostics", "SKILL.md")}` },
    })
    expect(JSON.stringify(embedded)).toContain("A skill no URI leads to.")
    const completed = await server.client.complete({
      ref: { type: "ref/prompt", name: "skill" },
      argument: { name: "name", value: "ba" },
    })
    // The names and ids it begins first, then what a search for it ranks.
    expect(completed.completion.values.slice(0, 2).sort()).toEqual(["Bar Thing", "bar"])
    const paths = await server.client.complete({
      ref: { type: "ref/resource", uri: "skill://{+skill}/{+path}" },
      argument: { name: "skill", value: "" },
    })
    expect([...paths.completion.values].sort()).toEqual([
      "bar",
      "café",
      "foo",
      "prompt-xml",
      "template",
      "template-skill",
    ])
  })

  it("keeps skill://prompt-xml the catalog for reads, and a folder for directory reads", async () => {
    expect(await resourceText(server, "skill://prompt-xml")).toContain("<available_skills>")
    const listing = await request(server, "resources/directory/read", { uri: "skill://prompt-xml" }, Listing)
    expect(listing.resources.map((resource) => resource.uri).sort()).toEqual([
      "skill://prompt-xml/SKILL.md",
      "skill://prompt-xml/notes.md",
    ])
  })
})
