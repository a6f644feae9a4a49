import * as nodeFs from "node:fs"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type { FsPort } from "../src/platform/Fs.js"
import { asyncFs, syncFs } from "../src/platform/Fs.js"
import { discoverRoot } from "../src/skills/Discovery.js"
import { skillMd, tempTree } from "./support/tree.js"

describe.each([
  ["synchronous", syncFs],
  ["asynchronous", asyncFs],
] as const)("Discovery (%s reads)", (_label, port) => {
  const discover = (root: string, maxDepth = 4) =>
    Effect.promise(() => discoverRoot(port, { path: root, explicit: true }, root, 0, { maxDepth })).pipe(
      Effect.map((result) => ({
        found: result.candidates.map((candidate) => `${candidate.id}@${candidate.segments.join("/")}`),
        notices: result.notices,
      })),
    )

  it.scoped("finds skills directly in the root, in nested groups, in skills/ and .claude/skills/", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({
        "pdf/SKILL.md": skillMd("pdf", "d"),
        "pdf/references/nested/SKILL.md": skillMd("not-a-skill", "inside a skill: ignored"),
        "acme/billing/refunds/SKILL.md": skillMd("refunds", "d"),
        "skills/docx/SKILL.md": skillMd("docx", "d"),
        ".claude/skills/xlsx/SKILL.md": skillMd("xlsx", "d"),
        ".agents/skills/pptx/SKILL.md": skillMd("pptx", "d"),
      })
      const { found } = yield* discover(root)
      expect(found.sort()).toEqual([
        "docx@docx",
        "pdf@pdf",
        "pptx@pptx",
        "refunds@acme/billing/refunds",
        "xlsx@xlsx",
      ])
    }),
  )

  it.scoped.runIf(process.platform === "linux")(
    "finds a folder whose name holds U+FFFD, and says it skips one whose name is not UTF-8",
    () =>
      Effect.gen(function* () {
        const root = yield* tempTree({ "good\u{FFFD}/SKILL.md": skillMd("good\u{FFFD}", "d") })
        // Named with bytes that are not UTF-8: Node reads both names as "good\u{FFFD}", and "lone-\u{FFFD}".
        const bytes = (...parts: Array<string | number>) =>
          Buffer.concat(
            parts.map((part) => (typeof part === "string" ? Buffer.from(part) : Buffer.from([part]))),
          )
        for (const folder of [bytes(`${root}/good`, 0xff), bytes(`${root}/lone-`, 0xfe)]) {
          nodeFs.mkdirSync(folder)
          nodeFs.writeFileSync(Buffer.concat([folder, Buffer.from("/SKILL.md")]), skillMd("bad", "d"))
        }
        const { found, notices } = yield* discover(root)
        expect(found).toEqual(["good\u{FFFD}@good\u{FFFD}"])
        expect(notices.map((notice) => notice.reason).sort()).toEqual([
          "a folder name that is not UTF-8; skipped",
          "a folder name that is not UTF-8; skipped",
        ])
      }),
  )

  it.scoped("skips node_modules, .git and other dot-folders", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({
        "node_modules/pkg/SKILL.md": skillMd("pkg", "d"),
        ".git/x/SKILL.md": skillMd("x", "d"),
        ".hidden/y/SKILL.md": skillMd("y", "d"),
        "group/.cache/z/SKILL.md": skillMd("z", "d"),
        "ok/SKILL.md": skillMd("ok", "d"),
      })
      expect((yield* discover(root)).found).toEqual(["ok@ok"])
    }),
  )

  it.scoped("warns of a root that holds no skill, naming the dot-folders that hold skills", () =>
    Effect.gen(function* () {
      // The OpenAI skills repository's layout: every skill in a dot-folder.
      const root = yield* tempTree({
        "skills/.curated/a/SKILL.md": skillMd("a", "d"),
        "skills/.curated/b/SKILL.md": skillMd("b", "d"),
        "skills/.system/c/SKILL.md": skillMd("c", "d"),
        "skills/.git/d/SKILL.md": skillMd("d", "d"),
        "skills/node_modules/.e/SKILL.md": skillMd("e", "d"),
        "skills/README.md": "# Skills",
      })
      const collection = yield* discover(`${root}/skills`)
      expect(collection.found).toEqual([])
      expect(collection.notices).toEqual([
        {
          path: `${root}/skills`,
          kind: "empty-root",
          dotFolders: [".curated", ".system"],
          reason:
            "no skill found outside dot-folders, which discovery skips; skills are in .curated (2), .system (1): pass --include-dot-folders (or set SKILLS_MCP_INCLUDE_DOT_FOLDERS=1) to serve them",
        },
      ])
      // From the repository's root, `skills/` is the collection: the dot-folders are below it.
      expect((yield* discover(root)).notices[0]?.dotFolders).toEqual(["skills/.curated", "skills/.system"])

      const withDots = yield* Effect.promise(() =>
        discoverRoot(port, { path: `${root}/skills`, explicit: true }, `${root}/skills`, 0, {
          maxDepth: 4,
          includeDotFolders: true,
        }),
      )
      expect(
        withDots.candidates.map((candidate) => `${candidate.id}@${candidate.segments.join("/")}`),
      ).toEqual(["a@.curated/a", "b@.curated/b", "c@.system/c"])
      expect(withDots.notices).toEqual([])
    }),
  )

  it.scoped("warns of an empty root, and of one whose skills --allow/--deny all leave out", () =>
    Effect.gen(function* () {
      const empty = yield* tempTree({ "notes/readme.md": "no skill" })
      expect((yield* discover(empty)).notices).toEqual([
        {
          path: empty,
          kind: "empty-root",
          dotFolders: [],
          reason:
            "no skill found in this skills folder (a skill is a folder holding a SKILL.md, at most 4 levels down)",
        },
      ])
      const denied = yield* tempTree({ "pdf/SKILL.md": skillMd("pdf", "d") })
      const result = yield* Effect.promise(() =>
        discoverRoot(port, { path: denied, explicit: true }, denied, 0, {
          maxDepth: 4,
          permits: (id) => id !== "pdf",
        }),
      )
      expect(result.notices.map((notice) => notice.reason)).toEqual([
        "no skill found in this skills folder (a skill is a folder holding a SKILL.md, at most 4 levels down); 1 skill folder is left out by --allow/--deny",
      ])
    }),
  )

  it.scoped("bounds the depth", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({
        "a/b/c/d/SKILL.md": skillMd("d", "d"),
        "a/b/c/d/e/SKILL.md": skillMd("e", "d"),
      })
      expect((yield* discover(root, 4)).found).toEqual(["d@a/b/c/d"])
      expect((yield* discover(root, 3)).found).toEqual([])
    }),
  )

  it.scoped("treats a root that is itself a skill as one skill", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({ "solo/SKILL.md": skillMd("solo", "d") })
      expect((yield* discover(`${root}/solo`)).found).toEqual(["solo@solo"])
    }),
  )

  it.scoped("follows links inside the root, never out of it, and ends link loops", () =>
    Effect.gen(function* () {
      const outside = yield* tempTree({ "evil/SKILL.md": skillMd("evil", "d"), "secret.md": "s" })
      const root = yield* tempTree({
        "real/pdf/SKILL.md": skillMd("pdf", "d"),
        alias: { symlink: "real" },
        out: { symlink: `${outside}/evil` },
        "loop/self": { symlink: ".." },
        "leaky/SKILL.md": { symlink: `${outside}/evil/SKILL.md` },
      })
      const { found, notices } = yield* discover(root)
      // real/pdf is reached twice (directly and through `alias`) and kept at its direct path.
      expect(found).toEqual(["pdf@real/pdf"])
      expect(notices.map((notice) => notice.path).sort()).toEqual([`${root}/leaky/SKILL.md`, `${root}/out`])
    }),
  )

  it.scoped("reads each real folder once, however many links lead to it", () =>
    Effect.gen(function* () {
      // Two sibling groups, each holding links to the other: the paths through them grow
      // exponentially with the depth, the real folders do not.
      const links: Record<string, { symlink: string }> = {}
      for (let index = 0; index < 8; index++) {
        links[`a/to-b-${index}`] = { symlink: "../b" }
        links[`b/to-a-${index}`] = { symlink: "../a" }
      }
      const root = yield* tempTree({
        ...links,
        "a/x/SKILL.md": skillMd("x", "d"),
        "b/y/SKILL.md": skillMd("y", "d"),
      })
      let reads = 0
      const counting: FsPort = {
        ...port,
        readdir: (dir) => {
          reads++
          return port.readdir(dir)
        },
      }
      const result = yield* Effect.promise(() =>
        discoverRoot(counting, { path: root, explicit: true }, root, 0, { maxDepth: 5 }),
      )
      expect(result.candidates.map((candidate) => candidate.id).sort()).toEqual(["x", "y"])
      // The root, a and b (each read directly; through a link they are not read again).
      expect(reads).toBe(3)
    }),
  )

  it.scoped(
    "names the folders where a new skill could appear without being read: depth limit, bare .claude",
    () =>
      Effect.gen(function* () {
        const root = yield* tempTree({
          "a/b/c/d/.keep": "",
          "a/b/c/skill/SKILL.md": skillMd("skill", "d"),
          ".claude/settings.json": "{}",
        })
        const result = yield* Effect.promise(() =>
          discoverRoot(port, { path: root, explicit: true }, root, 0, { maxDepth: 4 }),
        )
        expect([...result.edges].sort()).toEqual([`${root}/.claude`, `${root}/a/b/c/d`])
        expect(result.folders).not.toContain(`${root}/a/b/c/d`)
      }),
  )
})
