/**
 * Which URI names which skill, when folders and names disagree: a name that differs from its
 * folder, two skills claiming one URI across roots, a skill's folder named like another
 * skill's published path, and a skill named like one of the catalog documents. Every URI the
 * server hands out must lead back to the skill it was handed out for.
 */
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import type { Resource } from "@modelcontextprotocol/sdk/types.js"
import { ResultSchema } from "@modelcontextprotocol/sdk/types.js"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { RunningServer } from "../support/server.js"
import { startServer } from "../support/server.js"
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
    // Published at skill://bar/SKILL.md (the name, not the folder).
    "foo/SKILL.md": skillMd("bar", "Foo's folder, named bar."),
    // Not publishable (the name breaks the naming rules); skill://bar is taken by the one above.
    "bar/SKILL.md": skillMd("Bar Thing", "Bar's folder, with a human name."),
    "template/SKILL.md": skillMd("template-skill", "Template, first root."),
    "template/references/guide.md": "# Guide\n",
    // Named like the catalog document skill://prompt-xml: its folder is still a directory.
    "prompt-xml/SKILL.md": skillMd("prompt-xml", "A skill named prompt-xml."),
    "prompt-xml/notes.md": "notes\n",
    // A name in another script: the URI's last segment is the name itself.
    "café/SKILL.md": skillMd("café", "A skill with a Unicode name."),
  })
  await writeTree(second, {
    // Same URI as first/template (same name): the first root wins it.
    "template-skill/SKILL.md": skillMd("template-skill", "Template, second root."),
  })
  server = await startServer([first, second], { env: { HOME: base } })
})

afterAll(async () => {
  await server.close()
  await fs.rm(base, { recursive: true, force: true })
})

const request = (method: string, params: Record<string, unknown>) =>
  server.client.request({ method, params }, ResultSchema)

const textOf = async (uri: string) => {
  const { contents } = await server.client.readResource({ uri })
  const [content] = contents
  return content !== undefined && "text" in content ? content.text : ""
}

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
      "skill://bar/SKILL.md",
      "skill://café/SKILL.md",
      "skill://prompt-xml/SKILL.md",
      "skill://template-skill/SKILL.md",
    ])
    for (const resource of skills) {
      const text = await textOf(resource.uri)
      expect(text, resource.uri).toContain(`description: ${resource.description}`)
    }
  })

  it("serves the first root's skill at a URI two roots claim, and says so on stderr", async () => {
    const { skills } = (await request("skills/list", {})) as {
      skills: Array<{ uri: string; frontmatter: object }>
    }
    expect(skills.map((skill) => skill.uri).sort()).toEqual([
      "skill://bar/SKILL.md",
      "skill://café/SKILL.md",
      "skill://prompt-xml/SKILL.md",
      "skill://template-skill/SKILL.md",
    ])
    // Either spelling of the name reaches it.
    for (const uri of ["skill://café/SKILL.md", "skill://caf%C3%A9/SKILL.md"]) {
      const { skill } = (await request("skills/get", { uri })) as { skill: { uri: string } }
      expect(skill.uri).toBe("skill://café/SKILL.md")
    }
    const { skill } = (await request("skills/get", { uri: "skill://template-skill/SKILL.md" })) as {
      skill: { frontmatter: { description: string }; resources: Array<{ uri: string }> }
    }
    expect(skill.frontmatter.description).toBe("Template, first root.")
    expect(skill.resources.map((resource) => resource.uri)).toEqual([
      "skill://template-skill/SKILL.md",
      "skill://template-skill/references/guide.md",
    ])
    expect(server.stderr()).toContain(path.join(second, "template-skill", "SKILL.md"))
    // The second root's skill has its own id, and the tools still serve it.
    const loaded = await server.client.callTool({ name: "get_skill", arguments: { id: "template-skill" } })
    expect(JSON.stringify(loaded.structuredContent)).toContain("Template, second root.")
  })

  it("reads a skill's folder by its id for older clients, unless a published skill holds that URI", async () => {
    expect(await textOf("skill://template")).toContain("Template, first root.")
    // skill://bar is the published skill named bar (folder foo), never the folder bar.
    expect(await textOf("skill://bar")).toContain("Foo's folder, named bar.")
    const manifest = JSON.parse(await textOf("skill://bar/_manifest")) as { skill: string }
    expect(manifest.skill).toBe("foo")
  })

  it("names a skill no skill:// URI leads to by its file in prompts, and completes names and ids", async () => {
    const prompt = await server.client.getPrompt({ name: "skill", arguments: { name: "Bar Thing" } })
    const embedded = prompt.messages.find((message) => message.content.type === "resource")?.content
    expect(embedded).toMatchObject({
      type: "resource",
      resource: { uri: `file://${path.join(first, "bar", "SKILL.md")}` },
    })
    expect(JSON.stringify(embedded)).toContain("Bar's folder, with a human name.")
    const completed = await server.client.complete({
      ref: { type: "ref/prompt", name: "skill" },
      argument: { name: "name", value: "ba" },
    })
    expect([...completed.completion.values].sort()).toEqual(["Bar Thing", "bar"])
    const paths = await server.client.complete({
      ref: { type: "ref/resource", uri: "skill://{+skill}/{+path}" },
      argument: { name: "skill", value: "" },
    })
    expect([...paths.completion.values].sort()).toEqual(["bar", "café", "prompt-xml", "template-skill"])
  })

  it("keeps skill://prompt-xml the catalog for reads, and a folder for directory reads", async () => {
    expect(await textOf("skill://prompt-xml")).toContain("<available_skills>")
    const listing = (await request("resources/directory/read", { uri: "skill://prompt-xml" })) as {
      resources: Array<{ uri: string }>
    }
    expect(listing.resources.map((resource) => resource.uri).sort()).toEqual([
      "skill://prompt-xml/SKILL.md",
      "skill://prompt-xml/notes.md",
    ])
  })
})
