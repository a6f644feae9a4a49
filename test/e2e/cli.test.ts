/**
 * The built CLI as a person meets it: text output that no skill can turn against the terminal,
 * a collection whose skills sit in dot-folders, the example folder of the quick start, a
 * SKILL.md given as the folder, and the usage errors.
 */
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import * as Schema from "effect/Schema"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { LintReport } from "../../src/report/Lint.js"
import {
  callTool,
  decode,
  eventually,
  PROJECT,
  resourceText,
  runRaw,
  startServer,
} from "../support/server.js"
import { rawControls } from "../support/terminal.js"
import type { Tree } from "../support/tree.js"
import { skillMd, writeTree } from "../support/tree.js"

/** skill://diagnostics' notices (each checked by the test that reads them). */
const Notices = Schema.parseJson(Schema.Struct({ notices: Schema.Array(Schema.Unknown) }))

const ESC = "\u001b"
const BEL = "\u0007"

let base: string
/** A fresh folder below `base` holding `tree`. */
const folder = async (name: string, tree: Tree): Promise<string> => {
  const dir = path.join(base, name)
  await fs.mkdir(dir, { recursive: true })
  await writeTree(dir, tree)
  return dir
}

/** The one-shot commands with a HOME of their own (no conventional folder of the machine's). */
const cli = (args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  runRaw(args, [], { HOME: path.join(base, "home"), ...env })

beforeAll(async () => {
  base = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "skills-mcp-cli-")))
  await fs.mkdir(path.join(base, "home"))
})

afterAll(async () => {
  await fs.rm(base, { recursive: true, force: true })
})

describe("text output and escape sequences (list, validate, usage errors, log lines)", () => {
  let hostile: string
  beforeAll(async () => {
    hostile = await folder("hostile", {
      [`clear${ESC}[2J/SKILL.md`]: skillMd("clear", "Clears the screen."),
      "forged\nrow  row  skill:\\row\\SKILL.md/SKILL.md": skillMd("forged", "A second row."),
      [`title${ESC}]0;pwned${BEL}/SKILL.md`]: skillMd("title", "Sets the window title."),
      // Double-quoted YAML: \e is ESC, \a BEL, \n a line break.
      "named/SKILL.md": skillMd(
        '"named\\e]8;;https://evil.example\\aclick\\e]8;;\\a\\e[8m\\nOK: 3 skills checked"',
        "Hides text, links and forges a summary.",
      ),
      "flip\u202efdp.exe/SKILL.md": skillMd("flip", "Reorders its row."),
    })
  })

  it("list shows every control character escaped, one row per skill", async () => {
    const run = await cli(["list", hostile])
    expect(run.code).toBe(0)
    expect(rawControls(run.stdout)).toEqual([])
    expect(run.stdout).toContain(`clear\\x1b[2J `)
    expect(run.stdout).toContain(`forged\\nrow  row  skill:\\row\\SKILL.md `)
    expect(run.stdout).toContain(`title\\x1b]0;pwned\\x07 `)
    expect(run.stdout).toContain(`named\\x1b]8;;https://evil.example\\x07click\\x1b]8;;\\x07\\x1b[8m\\nOK: 3`)
    expect(run.stdout).toContain(`flip\\u202efdp.exe `)
    const rows = run.stdout.split("\n")
    // The header, then one row per served skill (5), a blank line.
    expect(rows.slice(0, 7).map((row) => row.split(" ")[0])).toEqual([
      "ID",
      "clear\\x1b[2J",
      "flip\\u202efdp.exe",
      "forged\\nrow",
      "named",
      "title\\x1b]0;pwned\\x07",
      "",
    ])
  })

  it("list --json stays JSON, the names as they are", async () => {
    const run = await cli(["list", "--json", hostile])
    const document = JSON.parse(run.stdout) as { served: Array<{ id: string; name: string }> }
    expect(document.served.map((skill) => skill.id)).toContain(`clear${ESC}[2J`)
    expect(document.served.map((skill) => skill.name)).toContain(
      `named${ESC}]8;;https://evil.example${BEL}click${ESC}]8;;${BEL}${ESC}[8m\nOK: 3 skills checked`,
    )
  })

  it("validate shows every control character escaped: no forged line, no hidden error", async () => {
    const run = await cli(["validate", hostile])
    expect(run.code).toBe(1)
    expect(rawControls(run.stdout)).toEqual([])
    expect(run.stdout).toContain(
      "named (named\\x1b]8;;https://evil.example\\x07click\\x1b]8;;\\x07\\x1b[8m\\nOK: 3 skills checked): ",
    )
    expect(run.stdout).toContain("clear\\x1b[2J (clear): ")
    // Only the real summary line begins with OK: or FAILED:.
    expect(run.stdout.split("\n").filter((line) => /^(OK|FAILED):/.test(line))).toEqual([
      expect.stringMatching(/^FAILED: 5 skills checked in /),
    ])
    const json = Schema.decodeUnknownSync(LintReport)(
      JSON.parse((await cli(["validate", "--json", hostile])).stdout),
    )
    expect(json.skills.map((skill) => skill.id)).toContain(`clear${ESC}[2J`)
  })

  it("usage errors show what was typed escaped", async () => {
    const missing = await cli(["validate", path.join(hostile, `gone${ESC}[2J\nskills-mcp: fine`)])
    expect(missing.code).toBe(2)
    expect(rawControls(missing.stderr)).toEqual([])
    expect(missing.stderr).toContain(
      `gone\\x1b[2J\\nskills-mcp: fine' (from the command line) does not exist`,
    )
    const option = await cli(["list", `--x${ESC}]0;pwned${BEL}`])
    expect(option.code).toBe(2)
    expect(option.stderr).toBe(
      "skills-mcp: Unknown option '--x\\x1b]0;pwned\\x07'. To pass a folder whose name starts with '-', put it after '--', as in '-- --x\\x1b]0;pwned\\x07'.\nRun 'skills-mcp --help' for usage.\n",
    )
  })

  it("the one-shot commands' log lines show the paths they quote escaped", async () => {
    // No folder given: validate warns on stderr that none of the conventional ones exists.
    const run = await cli(["validate"], { HOME: path.join(base, `home${ESC}[2J\nforged`) })
    expect(run.code).toBe(1)
    expect(run.stderr).toContain(`skills-mcp: warn: No skills folder found. Looked in: `)
    expect(run.stderr).toContain(`home\\x1b[2J\\nforged/.agents/skills`)
    expect(rawControls(run.stderr)).toEqual([])
    expect(run.stderr.trimEnd().split("\n")).toHaveLength(1)
  })
})

describe("a collection whose skills are all in dot-folders (the OpenAI skills layout)", () => {
  let repo: string
  let skills: string
  beforeAll(async () => {
    repo = await folder("openai-skills", {
      "README.md": "# Skills",
      "skills/.curated/gh-address-comments/SKILL.md": skillMd(
        "gh-address-comments",
        "Address review comments.",
      ),
      "skills/.curated/notion-knowledge-capture/SKILL.md": skillMd(
        "notion-knowledge-capture",
        "Capture notes.",
      ),
      "skills/.system/skill-creator/SKILL.md": skillMd("skill-creator", "Create skills."),
      "skills/.experimental/create-plan/SKILL.md": skillMd("create-plan", "Plan work."),
      "skills/.git/objects/SKILL.md": skillMd("objects", "Never a skill."),
      "skills/node_modules/pkg/SKILL.md": skillMd("pkg", "Never a skill."),
    })
    skills = path.join(repo, "skills")
  })

  const HINT =
    "no skill found outside dot-folders, which discovery skips; skills are in .curated (2), .experimental (1), .system (1): pass --include-dot-folders (or set SKILLS_MCP_INCLUDE_DOT_FOLDERS=1) to serve them"

  it("list says the folder serves nothing and names the dot-folders, in text and JSON", async () => {
    const text = await cli(["list", skills])
    expect(text.code).toBe(0)
    expect(text.stdout).toMatch(
      new RegExp(`^no skills +- +\\S*openai-skills/skills +${escapeRegExp(HINT)}$`, "m"),
    )
    const json = JSON.parse((await cli(["list", "--json", skills])).stdout) as { notices: unknown }
    expect(json.notices).toEqual([
      {
        path: skills,
        reason: HINT,
        kind: "empty-root",
        dotFolders: [".curated", ".experimental", ".system"],
      },
    ])
  })

  it("validate warns with the rule root-empty", async () => {
    const run = await cli(["validate", skills])
    expect(run.code).toBe(1)
    expect(run.stdout).toContain(`: warning root-empty: ${HINT}`)
  })

  it("--include-dot-folders (or its variable) serves them, never .git nor node_modules", async () => {
    for (const run of [
      await cli(["list", "--json", "--include-dot-folders", skills]),
      await cli(["list", "--json", skills], { SKILLS_MCP_INCLUDE_DOT_FOLDERS: "1" }),
    ]) {
      const document = JSON.parse(run.stdout) as { served: Array<{ id: string }>; notices: unknown }
      expect(document.served.map((skill) => skill.id)).toEqual([
        "gh-address-comments",
        "notion-knowledge-capture",
        "create-plan",
        "skill-creator",
      ])
      expect(document.notices).toEqual([])
    }
    const strict = await cli(["validate", "--strict", "--include-dot-folders", skills])
    expect(strict.code).toBe(0)
    expect(strict.stdout).toMatch(/^OK: 4 skills checked/)
  })

  it("the server warns at start, and skill://diagnostics holds the notice", async () => {
    const server = await startServer([skills], { env: { HOME: path.join(base, "home") } })
    try {
      await eventually(() =>
        expect(server.stderr()).toContain(`"level":"WARN","message":"${skills}: ${HINT}"`),
      )
      const diagnostics = decode(Notices, await resourceText(server, "skill://diagnostics"))
      expect(diagnostics.notices).toEqual([
        {
          path: skills,
          reason: HINT,
          kind: "empty-root",
          dotFolders: [".curated", ".experimental", ".system"],
        },
      ])
    } finally {
      await server.close()
    }
  })

  it("names the dot-folders below a repository's root too", async () => {
    const run = await cli(["list", "--json", repo])
    const document = JSON.parse(run.stdout) as { notices: Array<{ dotFolders: unknown }> }
    expect(document.notices[0]?.dotFolders).toEqual([
      "skills/.curated",
      "skills/.experimental",
      "skills/.system",
    ])
  })

  it("a server on an empty folder drops the notice once a skill appears there", async () => {
    const empty = await folder("fills-up", {})
    const server = await startServer([empty], { env: { HOME: path.join(base, "home") } })
    const notices = async () => decode(Notices, await resourceText(server, "skill://diagnostics")).notices
    try {
      expect(await notices()).toEqual([expect.objectContaining({ path: empty, kind: "empty-root" })])
      await writeTree(empty, { "pdf/SKILL.md": skillMd("pdf", "PDFs.") })
      await eventually(async () => {
        const listed = await callTool(server, "list_skills")
        expect(listed.structuredContent).toMatchObject({ skills: [expect.objectContaining({ id: "pdf" })] })
      })
      expect(await notices()).toEqual([])
    } finally {
      await server.close()
    }
  })
})

describe("the quick start's example folder", () => {
  /** The folder `npm start` serves. */
  const startFolder = async () => {
    const pkg = JSON.parse(await fs.readFile(path.join(PROJECT, "package.json"), "utf8")) as {
      scripts: { start: string }
    }
    const dir = /--skills-dir (\S+)/.exec(pkg.scripts.start)?.[1]
    expect(dir).toBeDefined()
    return path.join(PROJECT, dir ?? "")
  }

  it("npm start serves examples/skills, which passes validate --strict with no warning", async () => {
    const examples = await startFolder()
    expect(examples).toBe(path.join(PROJECT, "examples", "skills"))
    const run = await cli(["validate", "--strict", "--json", examples])
    const report = Schema.decodeUnknownSync(LintReport)(JSON.parse(run.stdout))
    expect(run.code).toBe(0)
    expect(run.stderr).toBe("")
    expect(report.summary).toMatchObject({ errors: 0, warnings: 0 })
    expect(report.summary.skills).toBeGreaterThanOrEqual(4)
    // One skill, at least, shows references/ and scripts/.
    expect(report.skills.map((skill) => skill.id)).toContain("pdf-processing")
    await fs.access(path.join(examples, "pdf-processing", "references"))
    await fs.access(path.join(examples, "pdf-processing", "scripts"))
  })

  it("a server started on it logs no warning", async () => {
    const server = await startServer(["--skills-dir", await startFolder()], {
      env: { HOME: path.join(base, "home") },
    })
    try {
      const listed = await callTool(server, "list_skills")
      expect(listed.isError).not.toBe(true)
      // Log lines have a level; the audit lines (one per call) have none.
      const logged = server
        .stderr()
        .split("\n")
        .filter((line) => line.startsWith("{"))
        .map((line) => JSON.parse(line) as { level?: string; message?: string })
        .filter((line) => line.level !== undefined)
      expect(logged.length).toBeGreaterThan(0)
      expect(logged.filter((line) => line.level !== "INFO")).toEqual([])
    } finally {
      await server.close()
    }
  })
})

describe("validate and list given a SKILL.md, or another file", () => {
  let root: string
  beforeAll(async () => {
    root = await folder("single", {
      "pdf/SKILL.md": skillMd("pdf", "PDFs."),
      "pdf/notes.md": "# Notes",
      "bad/SKILL.md": skillMd("Bad Name", "d"),
    })
  })

  it("checks that one skill's folder", async () => {
    const good = await cli(["validate", path.join(root, "pdf", "SKILL.md")])
    expect(good.code).toBe(0)
    expect(good.stdout).toMatch(/^OK: 1 skill checked in \S*single\/pdf: 0 errors/)
    const bad = await cli(["validate", "--json", path.join(root, "bad", "SKILL.md")])
    expect(bad.code).toBe(1)
    const report = Schema.decodeUnknownSync(LintReport)(JSON.parse(bad.stdout))
    expect(report.skills.map((skill) => skill.id)).toEqual(["bad"])
    const listed = JSON.parse((await cli(["list", "--json", path.join(root, "pdf", "SKILL.md")])).stdout) as {
      served: Array<{ id: string }>
    }
    expect(listed.served.map((skill) => skill.id)).toEqual(["pdf"])
  })

  it("says a file other than SKILL.md is a file, not that it is missing", async () => {
    const notes = path.join(root, "pdf", "notes.md")
    const run = await cli(["validate", notes])
    expect(run.code).toBe(2)
    expect(run.stdout).toBe("")
    expect(run.stderr).toBe(
      `skills-mcp: Skills folder '${notes}' (from the command line) is a file, not a folder: ${notes}. Pass the folder that holds the skills, or a skill's SKILL.md.\n`,
    )
    const served = await runRaw(["--skills-dir", notes], [], { HOME: path.join(base, "home") })
    expect(served.code).toBe(2)
    expect(served.stderr).toContain("is a file, not a folder")
  })
})

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
