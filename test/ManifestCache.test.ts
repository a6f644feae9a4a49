/**
 * Manifests kept between calls and between runs (src/files/Manifests.ts, ManifestStore.ts): a
 * kept manifest answers as a fresh walk would after any change (edit, addition, removal,
 * renaming, a file replaced by a link, a skill moved to another root), and what the cache folder
 * holds is used only when it is ours and well-formed.
 */
import { createHash } from "node:crypto"
import * as nodeFs from "node:fs"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import { SettleWindow } from "../src/files/Folders.js"
import { RecheckPace } from "../src/files/Inventories.js"
import type { Manifest } from "../src/files/Manifests.js"
import { SkillFiles } from "../src/files/SkillFiles.js"
import { Fs } from "../src/platform/Fs.js"
import { fingerprintOf } from "../src/platform/Paths.js"
import { Settings } from "../src/Settings.js"
import { Frontmatter, parseSkillText } from "../src/skills/Frontmatter.js"
import { skillMd, tempTree } from "./support/tree.js"

const sha = (text: string) => `sha256:${createHash("sha256").update(text).digest("hex")}`

/** No background re-check of covered skills' stamps: a change is seen through the watches alone. */
const NO_RECHECK = { everyMs: 1_000, perTick: 0 }

/**
 * SkillFiles keeping manifests in `cache` (none by default); with `watch`, kept skills are
 * covered by watches (src/files/Watches.ts) once their stamps held, and re-checked as `pace` says.
 */
const skillFiles = (cache?: string, watch = false, pace: RecheckPace["Type"] = NO_RECHECK) =>
  SkillFiles.Default.pipe(
    Layer.provide(Frontmatter.Default),
    Layer.provide(
      Layer.mergeAll(
        Settings.make({ manifestCache: cache, watch }),
        Fs.node,
        Layer.succeed(RecheckPace, pace),
        // What changed over 1 ms ago is trusted as it was (2 s in the server): these tests need no wait.
        Layer.succeed(SettleWindow, { ms: 1 }),
      ),
    ),
  )

/**
 * Runs `check` until it passes (5 s at most): with watches, a change shows once their event
 * arrives (the re-check is off unless a test turns it on, so the watches are what saw it).
 */
const eventually = <A, E>(check: Effect.Effect<A, E>) =>
  Effect.gen(function* () {
    const deadline = Date.now() + 5_000
    for (;;) {
      const exit = yield* Effect.exit(check)
      if (exit._tag === "Success" || Date.now() > deadline) return yield* exit
      // A real wait (the tests' clock is a test clock): the watches' events and the re-check run meanwhile.
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 25)))
    }
  })

/** Every file and folder below `root` (and `root`) dated an hour ago, then a wait past the settle window: kept. */
const settle = (root: string) =>
  Effect.promise(async () => {
    const hourAgo = Date.now() / 1000 - 3600
    const visit = async (at: string) => {
      const info = await fs.lstat(at)
      if (info.isSymbolicLink()) return
      if (info.isDirectory()) for (const name of await fs.readdir(at)) await visit(path.join(at, name))
      await fs.utimes(at, hourAgo, hourAgo)
    }
    await visit(root)
    await new Promise((resolve) => setTimeout(resolve, 5))
  })

const files = (manifest: Manifest) => manifest.files.map((file) => `${file.path} ${file.size} ${file.digest}`)

const TREE = {
  "skills/pdf/SKILL.md": skillMd("pdf", "PDF"),
  "skills/pdf/references/guide.md": "guide",
  "skills/pdf/references/deep/more.md": "more",
  "skills/pdf/scripts/run.sh": "echo run",
  "outside.md": "outside",
}

/** The tree settled, its skill "pdf", and SkillFiles over it (with the watcher if `watch`). */
const settledPdf = (watch: boolean) =>
  Effect.gen(function* () {
    const root = yield* tempTree(TREE)
    yield* settle(root)
    const skill = { id: "pdf", dir: `${root}/skills/pdf`, rootReal: `${root}/skills` }
    const service = yield* Effect.provide(SkillFiles, skillFiles(undefined, watch))
    return { root, skill, service }
  })

describe.each([
  ["without the watcher: the very next call", false],
  ["with the watcher: once its event arrives, a call", true],
])("kept manifests, %s", (_label, watch) => {
  it.scoped.each<readonly [string, (skill: string) => Promise<void>, ReadonlyArray<string>]>([
    [
      "a file edited in place, keeping its size",
      (skill) => fs.writeFile(`${skill}/references/deep/more.md`, "MORE"),
      ["SKILL.md", "references/deep/more.md 4 MORE", "references/guide.md", "scripts/run.sh"],
    ],
    [
      "a file added to a subfolder",
      (skill) => fs.writeFile(`${skill}/references/deep/new.md`, "new"),
      [
        "SKILL.md",
        "references/deep/more.md",
        "references/deep/new.md 3 new",
        "references/guide.md",
        "scripts/run.sh",
      ],
    ],
    [
      "a file removed",
      (skill) => fs.rm(`${skill}/scripts/run.sh`),
      ["SKILL.md", "references/deep/more.md", "references/guide.md"],
    ],
    [
      "a file renamed",
      (skill) => fs.rename(`${skill}/references/guide.md`, `${skill}/references/howto.md`),
      ["SKILL.md", "references/deep/more.md", "references/howto.md 5 guide", "scripts/run.sh"],
    ],
    [
      "a folder renamed",
      (skill) => fs.rename(`${skill}/references/deep`, `${skill}/references/deeper`),
      ["SKILL.md", "references/deeper/more.md 4 more", "references/guide.md", "scripts/run.sh"],
    ],
    [
      "a file replaced by a link inside the skill",
      async (skill) => {
        await fs.rm(`${skill}/scripts/run.sh`)
        await fs.symlink("../references/guide.md", `${skill}/scripts/run.sh`)
      },
      ["SKILL.md", "references/deep/more.md", "references/guide.md", "scripts/run.sh 5 guide"],
    ],
    [
      "a file replaced by a link that leads outside",
      async (skill) => {
        await fs.rm(`${skill}/scripts/run.sh`)
        await fs.symlink("../../../outside.md", `${skill}/scripts/run.sh`)
      },
      ["SKILL.md", "references/deep/more.md", "references/guide.md"],
    ],
    [
      "a folder replaced by a link that leads outside",
      async (skill) => {
        await fs.rename(`${skill}/references`, `${skill}/../../references-moved`)
        await fs.symlink("../../references-moved", `${skill}/references`)
      },
      ["SKILL.md", "scripts/run.sh"],
    ],
  ])("sees %s", ([, change, expected]) =>
    Effect.gen(function* () {
      const { skill, service } = yield* settledPdf(watch)
      const skillFolder = skill.dir
      const before = yield* service.manifest(skill)
      // Kept: the second look is the very same answer.
      expect(yield* service.manifest(skill)).toEqual(before)
      yield* Effect.promise(() => change(skillFolder))
      const contents: Record<string, string> = {
        "SKILL.md": TREE["skills/pdf/SKILL.md"],
        "references/deep/more.md": "more",
        "references/guide.md": "guide",
        "scripts/run.sh": "echo run",
      }
      // "path" stands for the file as it was; "path size text" for a file with that content.
      const wanted = expected.map((line) => {
        const [file = "", size, text] = line.split(" ")
        const content = text ?? contents[file] ?? ""
        return `${file} ${size ?? Buffer.byteLength(content)} ${sha(content)}`
      })
      const sees = Effect.map(service.manifest(skill), (after) => expect(files(after)).toEqual(wanted))
      yield* watch ? eventually(sees) : sees
    }),
  )

  // A watch follows a folder, not its path: the skill copied back in place (its old times kept)
  // is new folders, which the next call must watch anew for an edit after it to be seen.
  it.scoped("sees an edit to a skill removed and copied back in place with its old times", () =>
    Effect.gen(function* () {
      const { root, skill, service } = yield* settledPdf(watch)
      const skillFolder = skill.dir
      yield* service.manifest(skill)
      yield* service.manifest(skill)
      yield* Effect.promise(async () => {
        await fs.cp(skillFolder, `${root}/copy`, { recursive: true, preserveTimestamps: true })
        // One file more, so that the listing shows when the copy is what is served.
        await fs.writeFile(`${root}/copy/references/extra.md`, "extra")
        await fs.rm(skillFolder, { recursive: true })
        await fs.rename(`${root}/copy`, skillFolder)
      })
      const copied = Effect.filterOrFail(
        Effect.map(service.manifest(skill), (manifest) => manifest.files.length),
        (count) => count === 5,
      )
      yield* watch ? eventually(copied) : copied
      // Now kept (and with the watcher, covered) again: an edit is seen.
      yield* service.manifest(skill)
      yield* Effect.promise(() => fs.writeFile(`${skillFolder}/references/guide.md`, "GUIDE"))
      const sees = Effect.map(service.manifest(skill), (manifest) =>
        expect(manifest.files.find((file) => file.path === "references/guide.md")?.digest).toBe(sha("GUIDE")),
      )
      yield* watch ? eventually(sees) : sees
    }),
  )

  it.scoped("sees a skill moved to another root, and refuses it where it was", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({ ...TREE, "other/.keep": "" })
      yield* settle(root)
      const service = yield* Effect.provide(SkillFiles, skillFiles(undefined, watch))
      const there = { id: "pdf", dir: `${root}/skills/pdf`, rootReal: `${root}/skills` }
      const first = yield* service.manifest(there)
      yield* service.manifest(there)
      yield* Effect.promise(() => fs.rename(`${root}/skills/pdf`, `${root}/other/pdf`))
      const moved = yield* service.manifest({
        id: "pdf",
        dir: `${root}/other/pdf`,
        rootReal: `${root}/other`,
      })
      expect(files(moved)).toEqual(files(first))
      const gone = Effect.map(Effect.flip(service.manifest(there)), (error) =>
        expect(error._tag).toBe("SkillUnreadable"),
      )
      yield* watch ? eventually(gone) : gone
      // Its old root swapped for a link to where it went: refused, never served from what was kept.
      yield* Effect.promise(() => fs.symlink(`${root}/other/pdf`, `${root}/skills/pdf`))
      expect((yield* Effect.flip(service.manifest(there)))._tag).toBe("PathEscape")
    }),
  )

  // A watch sees what is written through its folder's entries only: a file with another hard
  // link elsewhere is never trusted on the watches' silence (its skill's stamps are checked on
  // every call), and one linked later is found by the background check of stamps (on here, 20
  // skills every 50 ms: nothing else can see it).
  it.scoped.each([
    ["before the skill was kept: the very next call sees a write through it", true],
    ["after the skill was kept: a write through it is seen", false],
  ])("sees a file written through another hard link to it, made %s", ([, before]) =>
    Effect.gen(function* () {
      const root = yield* tempTree(TREE)
      const guide = `${root}/skills/pdf/references/guide.md`
      const link = () => Effect.promise(() => fs.link(guide, `${root}/guide-link.md`))
      if (before) yield* link()
      yield* settle(root)
      const skill = { id: "pdf", dir: `${root}/skills/pdf`, rootReal: `${root}/skills` }
      const service = yield* Effect.provide(
        SkillFiles,
        skillFiles(undefined, watch, { everyMs: 50, perTick: 20 }),
      )
      yield* service.manifest(skill)
      yield* service.manifest(skill)
      if (!before) yield* link()
      yield* Effect.promise(() => fs.writeFile(`${root}/guide-link.md`, "GUIDE"))
      const sees = Effect.map(service.manifest(skill), (manifest) =>
        expect(manifest.files.find((file) => file.path === "references/guide.md")?.digest).toBe(sha("GUIDE")),
      )
      yield* watch && !before ? eventually(sees) : sees
    }),
  )

  // The rule that keeps nothing changed in the last 2 s only matters where change times are
  // coarse; on this file system a rewrite always moves the change time, which the stamp holds,
  // so this checks what a user sees (both rewrites read), not that rule.
  it.scoped("sees a file rewritten twice within one timestamp, its modification time set back", () =>
    Effect.gen(function* () {
      const { skill, service } = yield* settledPdf(watch)
      const notes = `${skill.dir}/references/guide.md`
      yield* service.manifest(skill)
      // Rewritten twice within one timestamp, as a coarse clock allows: the second is seen too.
      const second = Math.ceil(Date.now() / 1000) + 1
      for (const text of ["GUIDE", "Guide"]) {
        yield* Effect.promise(async () => {
          await fs.writeFile(notes, text)
          await fs.utimes(notes, second, second)
        })
        const sees = Effect.map(service.manifest(skill), (manifest) =>
          expect(manifest.files.find((file) => file.path === "references/guide.md")?.digest).toBe(sha(text)),
        )
        yield* watch ? eventually(sees) : sees
      }
    }),
  )
})

// A covered skill's SKILL.md is answered from memory (SkillFiles `loadSkill`): exactly as fresh
// as a read of the covered file, so whatever a watch sees is served at once.
describe("SKILL.md of a covered skill", () => {
  // Changed and read in the same turn: no watch event can have been read yet, so what is served
  // is what a stat of the file finds, as for any read.
  it.scoped.each<readonly [string, (skill: string, root: string) => void, string | undefined]>([
    [
      "edited in place, keeping its size",
      (skill) => nodeFs.writeFileSync(`${skill}/SKILL.md`, skillMd("pdf", "FDP")),
      "FDP",
    ],
    [
      "replaced by a new file",
      (skill, root) => {
        nodeFs.writeFileSync(`${root}/new.md`, skillMd("pdf", "Portable documents, rewritten."))
        nodeFs.renameSync(`${root}/new.md`, `${skill}/SKILL.md`)
      },
      "Portable documents, rewritten.",
    ],
    [
      "in a skill folder swapped for a link that leads outside",
      (skill, root) => {
        nodeFs.mkdirSync(`${root}/elsewhere`)
        nodeFs.writeFileSync(`${root}/elsewhere/SKILL.md`, skillMd("pdf", "Not the skill."))
        nodeFs.renameSync(skill, `${root}/moved`)
        nodeFs.symlinkSync(`${root}/elsewhere`, skill)
      },
      undefined,
    ],
  ])("is served fresh on the very next call once %s", ([, change, description]) =>
    Effect.gen(function* () {
      const { root, skill, service } = yield* settledPdf(true)
      // Kept, and covered by the watches its walk made; read twice (remembered).
      yield* service.manifest(skill)
      yield* service.manifest(skill)
      expect((yield* service.loadSkill(skill)).description).toBe("PDF")
      expect((yield* service.loadSkill(skill)).description).toBe("PDF")
      const loaded = yield* Effect.either(
        Effect.suspend(() => {
          change(skill.dir, root)
          return service.loadSkill(skill)
        }),
      )
      expect(loaded._tag === "Right" ? loaded.right.description : loaded.left._tag).toBe(
        description ?? "PathEscape",
      )
    }),
  )
})

/** A recorded skill, as the tests below change it (src/files/ManifestStore.ts has the format). */
interface Recorded {
  folders: Array<string>
  files: Array<string>
  stamps: Array<number>
  digests: string
}

describe("manifests kept between runs", () => {
  /** A settled skill and a cache folder; `run` makes a manifest in a fresh SkillFiles. */
  const setup = Effect.gen(function* () {
    const root = yield* tempTree(TREE)
    yield* settle(root)
    const cache = `${root}/cache/skills-mcp/manifests`
    const skill = { id: "pdf", dir: `${root}/skills/pdf`, rootReal: `${root}/skills` }
    const run = Effect.provide(
      Effect.flatMap(SkillFiles, (service) => service.manifest(skill)),
      skillFiles(cache),
    )
    const recorded = () => {
      const [name = ""] = nodeFs.readdirSync(cache).filter((file) => file.endsWith(".json"))
      return `${cache}/${name}`
    }
    return { root, cache, skill, run, recorded }
  })

  /** Replaces the recorded digest of references/guide.md with a made-up one. */
  const forge = (file: string) => {
    const record = JSON.parse(nodeFs.readFileSync(file, "utf8"))
    const skill = record.skills[0]
    const at = skill.files.indexOf("references/guide.md") * 64
    skill.digests = `${skill.digests.slice(0, at)}${"0".repeat(64)}${skill.digests.slice(at + 64)}`
    nodeFs.writeFileSync(file, JSON.stringify(record), { mode: 0o600 })
    nodeFs.chmodSync(file, 0o600)
  }
  const FORGED = `sha256:${"0".repeat(64)}`
  const guideDigest = (manifest: Manifest) =>
    manifest.files.find((file) => file.path === "references/guide.md")?.digest

  it.scoped("are used by a fresh process when the cache folder is ours", () =>
    Effect.gen(function* () {
      const { cache, run, recorded } = yield* setup
      expect(guideDigest(yield* run)).toBe(sha("guide"))
      expect(nodeFs.statSync(cache).mode & 0o777).toBe(0o700)
      expect(nodeFs.statSync(recorded()).mode & 0o777).toBe(0o600)
      // What was recorded is what a fresh process lists (a made-up digest shows it is used).
      forge(recorded())
      expect(guideDigest(yield* run)).toBe(FORGED)
    }),
  )

  it.scoped.each<readonly [string, (file: string, cache: string) => void]>([
    ["writable by its group", (file) => nodeFs.chmodSync(file, 0o620)],
    ["writable by others", (file) => nodeFs.chmodSync(file, 0o606)],
    ["in a folder others may write to", (_, cache) => nodeFs.chmodSync(cache, 0o777)],
    [
      "a link to a file of ours",
      (file) => {
        nodeFs.renameSync(file, `${file}.elsewhere`)
        nodeFs.symlinkSync(`${file}.elsewhere`, file)
      },
    ],
    ["not JSON", (file) => nodeFs.writeFileSync(file, "{ not json")],
    [
      "for another root",
      (file) => {
        const record = JSON.parse(nodeFs.readFileSync(file, "utf8"))
        nodeFs.writeFileSync(file, JSON.stringify({ ...record, root: "/elsewhere" }))
      },
    ],
    [
      "naming a path with '..'",
      (file) => {
        const record = JSON.parse(nodeFs.readFileSync(file, "utf8"))
        record.skills[0].files[2] = "../pdf/references/guide.md"
        nodeFs.writeFileSync(file, JSON.stringify(record))
      },
    ],
    ...[
      "references/./guide.md",
      "references//guide.md",
      "references\\guide.md",
      "/references/guide.md",
      "references/guide.md/",
    ].map(
      (bad) =>
        [
          `naming a path ${JSON.stringify(bad)}`,
          (file: string) => {
            const record = JSON.parse(nodeFs.readFileSync(file, "utf8"))
            record.skills[0].files[2] = bad
            nodeFs.writeFileSync(file, JSON.stringify(record))
          },
        ] as const,
    ),
    ...Object.entries({
      "whose files are not a list": { files: "SKILL.md" },
      "whose digests are not hex": { digests: "Z".repeat(64 * 4) },
      "with no SKILL.md key field": { skillMdKey: undefined },
    }).map(
      ([label, fields]) =>
        [
          `of a skill ${label}`,
          (file: string) => {
            const record = JSON.parse(nodeFs.readFileSync(file, "utf8"))
            record.skills[0] = { ...record.skills[0], ...fields }
            nodeFs.writeFileSync(file, JSON.stringify(record))
          },
        ] as const,
    ),
    [
      "naming a path with half of a UTF-16 pair",
      (file) => {
        const record = JSON.parse(nodeFs.readFileSync(file, "utf8"))
        record.skills[0].files[2] = "references/\ud800.md"
        nodeFs.writeFileSync(file, JSON.stringify(record))
      },
    ],
    ...Object.entries({
      // Of the right length: only the check of each stamp's type refuses it.
      "whose stamps hold a string": (skill: Recorded) => {
        Object.assign(skill.stamps, { 0: String(skill.stamps[0]) })
      },
      "listing a file twice": (skill: Recorded) => {
        const at = skill.files.indexOf("scripts/run.sh")
        const first = (skill.folders.length + 1) * 4 + at * 5
        skill.files.push("scripts/run.sh")
        skill.stamps.push(...skill.stamps.slice(first, first + 5))
        skill.digests += skill.digests.slice(at * 64, at * 64 + 64)
      },
      "leaving out the folders above a file": (skill: Recorded) => {
        // references/ and references/deep/ go: a link put in place of either would not be seen.
        const kept = skill.folders.flatMap((folder, index) =>
          folder.startsWith("references") ? [] : [index],
        )
        const stamps = skill.stamps.slice(0, 4)
        for (const index of kept) stamps.push(...skill.stamps.slice((index + 1) * 4, (index + 2) * 4))
        stamps.push(...skill.stamps.slice((skill.folders.length + 1) * 4))
        skill.folders = kept.map((index) => skill.folders[index] ?? "")
        skill.stamps = stamps
      },
      "without SKILL.md": (skill: Recorded) => {
        const at = skill.files.indexOf("SKILL.md")
        const first = (skill.folders.length + 1) * 4 + at * 5
        skill.files.splice(at, 1)
        skill.stamps.splice(first, 5)
        skill.digests = skill.digests.slice(0, at * 64) + skill.digests.slice(at * 64 + 64)
      },
    }).map(
      ([label, change]) =>
        [
          `of a skill ${label}`,
          (file: string) => {
            const record = JSON.parse(nodeFs.readFileSync(file, "utf8"))
            change(record.skills[0])
            nodeFs.writeFileSync(file, JSON.stringify(record))
          },
        ] as const,
    ),
    [
      "with a skill outside its root",
      (file) => {
        const record = JSON.parse(nodeFs.readFileSync(file, "utf8"))
        record.skills[0].base = path.dirname(record.root)
        nodeFs.writeFileSync(file, JSON.stringify(record))
      },
    ],
    ...(process.getuid?.() === 0
      ? [["owned by another user", (file: string) => nodeFs.chownSync(file, 12345, 12345)] as const]
      : []),
  ])("are ignored when the record is %s", ([, spoil]) =>
    Effect.gen(function* () {
      const { cache, run, recorded } = yield* setup
      yield* run
      const file = recorded()
      forge(file)
      spoil(file, cache)
      const manifest = yield* run
      expect(guideDigest(manifest)).toBe(sha("guide"))
      expect(manifest.files).toHaveLength(4)
    }),
  )

  // What a fresh process checks is the record's stamps, number by number: any change made
  // between runs shows as a walk without a record would show it.
  it.scoped.each<readonly [string, (skill: string, root: string) => Promise<void>]>([
    [
      "a file edited in place, keeping its size",
      (skill) => fs.writeFile(`${skill}/references/deep/more.md`, "MORE"),
    ],
    ["a file added to a subfolder", (skill) => fs.writeFile(`${skill}/references/deep/new.md`, "new")],
    ["a file removed", (skill) => fs.rm(`${skill}/scripts/run.sh`)],
    ["a folder renamed", (skill) => fs.rename(`${skill}/references/deep`, `${skill}/references/deeper`)],
    [
      "a file replaced by a link inside the skill",
      async (skill) => {
        await fs.rm(`${skill}/scripts/run.sh`)
        await fs.symlink("../references/guide.md", `${skill}/scripts/run.sh`)
      },
    ],
    [
      "a folder replaced by a link that leads outside",
      async (skill, root) => {
        await fs.rename(`${skill}/references`, `${root}/references-moved`)
        await fs.symlink(`${root}/references-moved`, `${skill}/references`)
      },
    ],
  ])("show %s between runs", ([, change]) =>
    Effect.gen(function* () {
      const { root, skill, run } = yield* setup
      yield* run
      yield* Effect.promise(() => change(skill.dir, root))
      const walked = yield* Effect.provide(
        Effect.flatMap(SkillFiles, (service) => service.manifest(skill)),
        skillFiles(),
      )
      expect(files(yield* run)).toEqual(files(walked))
    }),
  )

  // A skill changed between runs is walked again, and only its changed files hashed: the others'
  // recorded digests still answer (a made-up one shows it).
  it.scoped("give a skill changed between runs the digests of its unchanged files", () =>
    Effect.gen(function* () {
      const { root, run, recorded } = yield* setup
      yield* run
      forge(recorded())
      yield* Effect.promise(() => fs.writeFile(`${root}/skills/pdf/scripts/run.sh`, "echo RUN"))
      const manifest = yield* run
      expect(guideDigest(manifest)).toBe(FORGED)
      expect(manifest.files.find((file) => file.path === "scripts/run.sh")?.digest).toBe(sha("echo RUN"))
    }),
  )

  /** The skill of `setup` as the catalog indexes it: with SKILL.md's fingerprint and parse. */
  const indexedPdf = (root: string) =>
    Effect.gen(function* () {
      const file = `${root}/skills/pdf/SKILL.md`
      const info = nodeFs.statSync(file)
      const parsed = parseSkillText(file, nodeFs.readFileSync(file, "utf8"))
      if (Either.isLeft(parsed)) return yield* parsed.left
      return {
        id: "pdf",
        dir: `${root}/skills/pdf`,
        rootReal: `${root}/skills`,
        fingerprint: fingerprintOf(info),
        frontmatter: parsed.right,
      }
    })

  // What was recorded answers only as a whole: a SKILL.md whose recorded frontmatter no longer
  // matches the catalog's is read again, and from then on the skill answers without a wait
  // (keptManifests), with the other files' digests as recorded.
  it.scoped(
    "answer without a wait once a SKILL.md whose recorded frontmatter is not the catalog's is read again",
    () =>
      Effect.gen(function* () {
        const { root, recorded } = yield* setup
        const skill = yield* indexedPdf(root)
        const inFresh = <A, E>(use: (service: SkillFiles) => Effect.Effect<A, E>) =>
          Effect.provide(Effect.flatMap(SkillFiles, use), skillFiles(`${root}/cache/skills-mcp/manifests`))
        yield* inFresh((service) => service.manifest(skill))
        forge(recorded())
        const record = JSON.parse(nodeFs.readFileSync(recorded(), "utf8"))
        record.skills[0].skillMdKey = "0".repeat(64)
        nodeFs.writeFileSync(recorded(), JSON.stringify(record))
        const [first, kept] = yield* inFresh((service) =>
          Effect.map(
            service.manifest(skill),
            (manifest) => [manifest, service.keptManifests([skill])[0]] as const,
          ),
        )
        expect(guideDigest(first)).toBe(FORGED)
        expect(first.frontmatter).toBe(skill.frontmatter)
        expect(kept).toBe(first)
      }),
  )

  // With the watcher, a skill taken from the record is covered by watches once its stamps held
  // (from its recorded numbers): an edit is then seen through them.
  it.scoped.runIf(process.platform === "linux")(
    "taken in by a fresh process with the watcher are covered, and an edit is then seen",
    () =>
      Effect.gen(function* () {
        const { root, cache, skill, run } = yield* setup
        yield* run
        const service = yield* Effect.provide(SkillFiles, skillFiles(cache, true))
        expect(guideDigest(yield* service.manifest(skill))).toBe(sha("guide"))
        // Covered once calls pause (Inventories `coverSome`, 100 ms): then only the watches see a
        // change, so a call in the same turn as an edit still answers as before it.
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 1_000)))
        const sameTurn = yield* Effect.suspend(() => {
          nodeFs.writeFileSync(`${root}/skills/pdf/references/guide.md`, "GUIDE")
          return service.manifest(skill)
        })
        expect(guideDigest(sameTurn)).toBe(sha("guide"))
        yield* eventually(
          Effect.map(service.manifest(skill), (manifest) => expect(guideDigest(manifest)).toBe(sha("GUIDE"))),
        )
      }),
  )

  it.scoped("are checked against the disk before use: a change made between runs is seen", () =>
    Effect.gen(function* () {
      const { root, run, recorded } = yield* setup
      yield* run
      forge(recorded())
      yield* Effect.promise(() => fs.writeFile(`${root}/skills/pdf/references/guide.md`, "GUIDE"))
      expect(guideDigest(yield* run)).toBe(sha("GUIDE"))
    }),
  )
})

describe.runIf(process.platform === "linux")("the background re-check of covered skills", () => {
  // 600 covered skills, all owed at each tick (every 2 s): the tick's checks go on over as many
  // turns of the event loop as they take, so the last skill is reached at the first tick, not
  // only after the several ticks that slices of a few ms each would need.
  it.scoped(
    "checks every skill a tick owes, however long that takes, and sees a write through a hard link made later",
    () =>
      Effect.gen(function* () {
        const count = 600
        const tree: Record<string, string> = {}
        for (let index = 0; index < count; index++) {
          const name = `s${String(index).padStart(3, "0")}`
          tree[`skills/${name}/SKILL.md`] = skillMd(name, `Skill ${index}`)
          tree[`skills/${name}/references/guide.md`] = `guide ${index}`
        }
        const root = yield* tempTree(tree)
        yield* settle(root)
        const service = yield* Effect.provide(
          SkillFiles,
          skillFiles(undefined, true, { everyMs: 2_000, perTick: count }),
        )
        const skillOf = (index: number) => {
          const name = `s${String(index).padStart(3, "0")}`
          return { id: name, dir: `${root}/skills/${name}`, rootReal: `${root}/skills` }
        }
        for (let index = 0; index < count; index++) yield* service.manifest(skillOf(index))
        const last = skillOf(count - 1)
        const guide = `${last.dir}/references/guide.md`
        const digestOfGuide = (manifest: Manifest) =>
          manifest.files.find((file) => file.path === "references/guide.md")?.digest
        // Covered (walked with its watches): a call in the same turn as the write answers as before.
        const sameTurn = yield* Effect.suspend(() => {
          nodeFs.linkSync(guide, `${root}/guide-link.md`)
          nodeFs.writeFileSync(`${root}/guide-link.md`, "GUIDE")
          return service.manifest(last)
        })
        expect(digestOfGuide(sameTurn)).toBe(sha("guide 599"))
        yield* eventually(
          Effect.map(service.manifest(last), (manifest) =>
            expect(digestOfGuide(manifest)).toBe(sha("GUIDE")),
          ),
        )
      }),
  )
})
