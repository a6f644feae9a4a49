import * as fs from "node:fs"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { helpText, OPTIONS, parseCommandLine } from "../src/Cli.js"
import { environmentVariables } from "../src/Options.js"
import { VERSION } from "../src/version.js"

describe("parseCommandLine", () => {
  it.effect("serves by default, with folders from flags and positionals in order", () =>
    Effect.gen(function* () {
      const line = yield* parseCommandLine(["-d", "a", "--skills-dir", "b", "c", "--max-file-bytes", "10"])
      expect(line.command).toBe("serve")
      expect(line.settings).toEqual({ skillsDirs: ["a", "b", "c"], "max-file-bytes": "10" })
    }),
  )

  it.effect("recognises commands and their options", () =>
    Effect.gen(function* () {
      expect((yield* parseCommandLine(["instructions", "--no-xml"])).xml).toBe(false)
      expect((yield* parseCommandLine(["serve", "x"])).settings.skillsDirs).toEqual(["x"])
      expect((yield* parseCommandLine(["--version"])).version).toBe(true)
    }),
  )

  it.effect("parses validate and list with the discovery options the server has", () =>
    Effect.gen(function* () {
      const validate = yield* parseCommandLine([
        "validate",
        "a",
        "--strict",
        "--json",
        "--deny",
        "x-*",
        "-d",
        "b",
      ])
      expect(validate).toMatchObject({ command: "validate", json: true, strict: true })
      expect(validate.settings).toEqual({ skillsDirs: ["b", "a"], deny: ["x-*"] })
      const list = yield* parseCommandLine(["list", "--max-depth", "2", "--max-skills", "5"])
      expect(list).toMatchObject({ command: "list", json: false, strict: false })
      expect(list.settings).toEqual({ "max-depth": "2", "max-skills": "5" })
    }),
  )

  it.effect("takes --include-dot-folders for the commands that discover skills", () =>
    Effect.gen(function* () {
      for (const command of ["serve", "validate", "list"])
        expect((yield* parseCommandLine([command, "--include-dot-folders"])).settings).toEqual({
          "include-dot-folders": true,
        })
      const error = yield* Effect.flip(parseCommandLine(["instructions", "--include-dot-folders"]))
      expect(error.message).toContain("Option --include-dot-folders does not apply to 'instructions'")
    }),
  )

  it.effect("says how to pass a folder named like an option, every quote closed", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(parseCommandLine(["validate", "--bogus"]))
      expect(error.message).toBe(
        "Unknown option '--bogus'. To pass a folder whose name starts with '-', put it after '--', as in '-- --bogus'.\nRun 'skills-mcp --help' for usage.",
      )
    }),
  )

  it.effect.each([
    [["validate", "--watch"], "Option --watch does not apply to 'validate'"],
    [["validate", "--max-skills", "3"], "Option --max-skills does not apply to 'validate'"],
    [["list", "--strict"], "Option --strict does not apply to 'list'"],
    [["--json"], "Option --json does not apply to 'serve'"],
    [["--bogus"], "Unknown option '--bogus'"],
    [["instructions", "--skills-dir", "x"], "does not apply to 'instructions'"],
    [["--no-xml"], "does not apply to 'serve'"],
    [["instructions", "extra"], "takes no folders"],
    [["--max-depth"], "argument missing"],
  ] as const)("refuses %j", ([argv, message]) =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(parseCommandLine(argv))
      expect(error._tag).toBe("UsageError")
      expect(error.message).toContain(message)
      expect(error.message).toContain("skills-mcp --help")
    }),
  )
})

describe("helpText", () => {
  it("documents every option and every environment variable", () => {
    const help = helpText()
    for (const name of Object.keys(OPTIONS)) expect(help).toContain(`--${name}`)
    for (const name of environmentVariables) expect(help).toContain(name)
  })

  it("states both page sizes --page-size sets", () => {
    const line = helpText()
      .split("\n")
      .find((text) => text.includes("--page-size"))
    expect(line).toContain("list_skills' default and largest page (default 100)")
    expect(line).toContain("skills/list, resources/list, prompts/list and directory reads (default 200)")
    expect(line).toContain("A value sets both.")
  })

  it("has the package version", () => {
    const pkg: unknown = JSON.parse(fs.readFileSync(new URL("../package.json", import.meta.url), "utf8"))
    expect(pkg).toMatchObject({ version: VERSION })
  })
})
