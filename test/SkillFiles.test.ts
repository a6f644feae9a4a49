import { spawn } from "node:child_process"
import { createHash } from "node:crypto"
import * as nodeFs from "node:fs"
import { readdirSync, type Stats } from "node:fs"
import * as fs from "node:fs/promises"
import { describe, expect, it, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import { checkRelativePath } from "../src/files/Containment.js"
import { MAX_EXAMINED } from "../src/files/Folders.js"
import { mimeTypeOf } from "../src/files/MimeTypes.js"
import { isBinary } from "../src/files/Reading.js"
import { SkillFiles } from "../src/files/SkillFiles.js"
import type { FsShape, SyncContainedCalls } from "../src/platform/Fs.js"
import { Fs } from "../src/platform/Fs.js"
import { fingerprintOf } from "../src/platform/Paths.js"
import { Settings } from "../src/Settings.js"
import { Frontmatter, type ParsedFrontmatter, parseSkillText } from "../src/skills/Frontmatter.js"
import { skillMd, tempTree } from "./support/tree.js"

/** SkillFiles over the given file system (Node's by default), with a 1,024-byte file limit. */
const skillFilesOver = (fs: Layer.Layer<Fs> = Fs.node) =>
  SkillFiles.Default.pipe(
    Layer.provide(Frontmatter.Default),
    Layer.provide(Layer.merge(Settings.make({ maxFileBytes: 1024 }), fs)),
  )
const SkillFilesTest = skillFilesOver()

/** SkillFiles over Node's file system, with some of its calls changed. */
const skillFilesOverChanged = (change: (node: FsShape) => FsShape) =>
  Effect.provide(
    SkillFiles,
    skillFilesOver(Layer.effect(Fs, Effect.map(Fs, change)).pipe(Layer.provide(Fs.node))),
  )

/** SkillFiles over Node's file system, with some of its contained calls (Fs `containedNow`) changed. */
const skillFilesWith = (change: (node: SyncContainedCalls) => Partial<SyncContainedCalls>) =>
  skillFilesOverChanged((node) => ({
    ...node,
    containedNow: { ...node.containedNow, ...change(node.containedNow) },
  }))

/** Times as a file system that keeps whole seconds gives them (ext4 with small inodes, HFS+). */
const wholeSeconds = (info: Stats): Stats =>
  Object.setPrototypeOf(
    {
      ...info,
      mtimeMs: Math.floor(info.mtimeMs / 1000) * 1000,
      ctimeMs: Math.floor(info.ctimeMs / 1000) * 1000,
    },
    Object.getPrototypeOf(info),
  )

/** SkillFiles over Node's file system as one that keeps whole seconds would answer its stats. */
const skillFilesOnCoarseClock = skillFilesOverChanged((node) => ({
  ...node,
  sync: {
    ...node.sync,
    lstat: (target) => {
      const info = node.sync.lstat(target)
      return info === null ? null : wholeSeconds(info)
    },
  },
  containedNow: {
    ...node.containedNow,
    openFile: (file, known) => {
      const open = node.containedNow.openFile(file, known)
      return { ...open, info: wholeSeconds(open.info) }
    },
  },
}))

/** A real wait past Folders' SETTLED_MS: only what was last changed before it is trusted as it was. */
const settle = Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 2_100)))

/** A skill `pdf` inside `root/skills`, with a secret next to the skills folder. */
const fixture = () =>
  tempTree({
    "skills/pdf/SKILL.md": skillMd("pdf", "PDF", "# PDF\nSee references/guide.md\n"),
    "skills/pdf/references/guide.md": "guide",
    "skills/pdf/references/deep/more.md": "more",
    "skills/pdf/assets/logo.png": Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 1]),
    "skills/pdf/big.txt": "x".repeat(2048),
    "skills/pdf/inner-link.md": { symlink: "references/guide.md" },
    "skills/pdf/escape-file.md": { symlink: "../../secret.txt" },
    "skills/pdf/escape-dir": { symlink: "../../elsewhere" },
    "skills/pdf/dangling.md": { symlink: "../../nowhere.txt" },
    "skills/pdf-sibling/secret.md": "sibling secret",
    "skills/other/SKILL.md": skillMd("other", "O"),
    "elsewhere/dir/.keep": "",
    "elsewhere/secret": "outside secret",
    "secret.txt": "outside secret",
  })

layer(SkillFilesTest)("SkillFiles", (it) => {
  it.scoped("reads text files inside the skill, through links that stay inside", () =>
    Effect.gen(function* () {
      const root = yield* fixture()
      const files = yield* SkillFiles
      const skill = { id: "pdf", dir: `${root}/skills/pdf`, rootReal: root }
      expect((yield* files.readText(skill, "references/guide.md")).text).toBe("guide")
      expect((yield* files.readText(skill, "./references//guide.md")).text).toBe("guide")
      expect((yield* files.readText(skill, "inner-link.md")).text).toBe("guide")
      const loaded = yield* files.loadSkill(skill)
      expect(loaded.body).toBe("# PDF\nSee references/guide.md\n")
    }),
  )

  it.scoped("loads a SKILL.md that is a link inside its skill, and refuses one that leads out", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({
        "linked/SKILL.md": { symlink: "docs/skill.md" },
        "linked/docs/skill.md": skillMd("linked", "L", "linked body\n"),
        "outward/SKILL.md": { symlink: "../secret.md" },
        "secret.md": skillMd("secret", "S", "secret body\n"),
      })
      const files = yield* SkillFiles
      const linked = yield* files.loadSkill({ id: "linked", dir: `${root}/linked`, rootReal: root })
      expect(linked.body).toBe("linked body\n")
      const outward = yield* Effect.flip(
        files.loadSkill({ id: "outward", dir: `${root}/outward`, rootReal: root }),
      )
      expect(outward._tag).toBe("PathEscape")
    }),
  )

  it.scoped.each<readonly [string, string]>([
    ["a parent segment", "../pdf-sibling/secret.md"],
    ["a parent segment in the middle", "references/../../other/SKILL.md"],
    ["backslashes", "..\\..\\secret.txt"],
    ["mixed separators", "references\\..\\../other/SKILL.md"],
    ["percent-encoding", "%2e%2e/other/SKILL.md"],
    ["an absolute path", "/etc/passwd"],
    ["a Windows drive", "C:\\Windows\\win.ini"],
    ["a link to a file outside", "escape-file.md"],
    ["a link to a folder outside", "escape-dir/secret"],
    ["a path through a link to a folder outside", "escape-dir/dir"],
    ["a dangling link", "dangling.md"],
    ["a missing file behind an outside link", "escape-dir/does-not-exist"],
  ])("refuses %s", ([_label, requested]) =>
    Effect.gen(function* () {
      const root = yield* fixture()
      const files = yield* SkillFiles
      const error = yield* Effect.flip(
        files.readText({ id: "pdf", dir: `${root}/skills/pdf`, rootReal: root }, requested),
      )
      expect(error._tag).toBe("PathEscape")
      expect(error.message).not.toContain("secret")
    }),
  )

  it.scoped.each<readonly [string, string]>([
    ["a NUL byte", "references/guide.md\0.png"],
    ["an encoded NUL byte", "references/guide.md%00"],
  ])("refuses %s as an invalid argument", ([_label, requested]) =>
    Effect.gen(function* () {
      const root = yield* fixture()
      const files = yield* SkillFiles
      const error = yield* Effect.flip(
        files.readText({ id: "pdf", dir: `${root}/skills/pdf`, rootReal: root }, requested),
      )
      expect(error._tag).toBe("InvalidArgument")
      expect(error.message).toContain("NUL")
    }),
  )

  it.scoped("refuses a chain that collapses '..' before following a link (x -> hop/../secret)", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({
        "pdf/SKILL.md": skillMd("pdf", "d"),
        "pdf/hop": { symlink: "../elsewhere/dir" },
        "pdf/x.md": { symlink: "hop/../secret" },
        "elsewhere/dir/.keep": "",
        "elsewhere/secret": "s",
        "pdf/secret": "decoy inside the skill",
      })
      const files = yield* SkillFiles
      const error = yield* Effect.flip(
        files.readText({ id: "pdf", dir: `${root}/pdf`, rootReal: root }, "x.md"),
      )
      expect(error._tag).toBe("PathEscape")
    }),
  )

  it.scoped("says a missing file inside the skill is missing", () =>
    Effect.gen(function* () {
      const root = yield* fixture()
      const files = yield* SkillFiles
      const error = yield* Effect.flip(
        files.readText({ id: "pdf", dir: `${root}/skills/pdf`, rootReal: root }, "references/nope.md"),
      )
      expect(error._tag).toBe("FileNotFound")
      expect(error.message).toContain("references/nope.md")
    }),
  )

  it.scoped("refuses files over the size limit and binary files, with size and type", () =>
    Effect.gen(function* () {
      const root = yield* fixture()
      const files = yield* SkillFiles
      const skill = { id: "pdf", dir: `${root}/skills/pdf`, rootReal: root }
      const big = yield* Effect.flip(files.readText(skill, "big.txt"))
      expect(big._tag).toBe("FileTooLarge")
      expect(big.message).toContain("2048 bytes")
      expect(big.message).toContain("1024-byte limit")
      const binary = yield* Effect.flip(files.readText(skill, "assets/logo.png"))
      expect(binary._tag).toBe("BinaryFile")
      expect(binary.message).toContain("image/png")
      expect(binary.message).toContain("8 bytes")
    }),
  )

  it.scoped("lists a skill recursively, never listing links that leave it", () =>
    Effect.gen(function* () {
      const root = yield* fixture()
      const files = yield* SkillFiles
      const listing = yield* files.list({ id: "pdf", dir: `${root}/skills/pdf`, rootReal: root }, "")
      expect(listing.entries.map((entry) => entry.path)).toEqual([
        "SKILL.md",
        "assets",
        "assets/logo.png",
        "big.txt",
        "inner-link.md",
        "references",
        "references/deep",
        "references/deep/more.md",
        "references/guide.md",
      ])
      const sub = yield* files.read({ id: "pdf", dir: `${root}/skills/pdf`, rootReal: root }, "references")
      expect(sub._tag === "Listing" && sub.listing.entries.map((entry) => entry.path)).toEqual([
        "references/deep",
        "references/deep/more.md",
        "references/guide.md",
      ])
    }),
  )

  it.scoped("lists the same where folders are read by their path (no descriptors, as off Linux)", () =>
    Effect.gen(function* () {
      const root = yield* fixture()
      const skill = { id: "pdf", dir: `${root}/skills/pdf`, rootReal: root }
      const files = yield* SkillFiles
      const byPath = yield* skillFilesWith(() => ({
        openFolder: (real) => ({ at: real, close: () => undefined }),
      }))
      const listing = yield* byPath.list(skill, "")
      expect(listing.entries.map((entry) => entry.path)).toContain("references/deep/more.md")
      expect(listing).toEqual(yield* files.list(skill, ""))
      expect(yield* byPath.children(skill, "", 0, 100)).toEqual(yield* files.children(skill, "", 0, 100))
    }),
  )

  it.scoped("stops a listing, and refuses a manifest, after 10,000 names, those left out included", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({
        "skills/links/SKILL.md": skillMd("links", "Links to nowhere."),
        "skills/links/zz.md": "last",
      })
      // Links that lead nowhere are left out, but each is looked at: a walk stops after MAX_EXAMINED.
      for (let index = 0; index <= MAX_EXAMINED; index++)
        nodeFs.symlinkSync(
          `${root}/nowhere/${index}`,
          `${root}/skills/links/l${String(index).padStart(5, "0")}`,
        )
      const skill = { id: "links", dir: `${root}/skills/links`, rootReal: `${root}/skills` }
      const files = yield* SkillFiles
      const listing = yield* files.list(skill, "")
      expect(listing.truncated).toBe(true)
      expect(listing.entries.map((entry) => entry.path)).toEqual(["SKILL.md"])
      const refused = yield* Effect.flip(files.manifest(skill))
      expect(refused._tag).toBe("SkillNotPublished")
      expect(refused.message).toContain("more than 10000 names")
    }),
  )

  it.scoped(
    "fails a listing, rather than leave a link out, when the link's target cannot be looked at now",
    () =>
      Effect.gen(function* () {
        const root = yield* fixture()
        const skill = { id: "pdf", dir: `${root}/skills/pdf`, rootReal: root }
        // Out of descriptors when a link's target is looked at.
        const emfile = Object.assign(new Error("EMFILE: too many open files"), { code: "EMFILE" })
        const files = yield* skillFilesWith(() => ({
          statNamed: () => {
            throw emfile
          },
        }))
        const error = yield* Effect.flip(files.list(skill, ""))
        expect(error._tag).toBe("SkillUnreadable")
        expect(error.message).toContain("try again")
      }),
  )

  it.scoped(
    "pages a large folder from the names it kept, and sees a file added, removed or renamed meanwhile",
    () =>
      Effect.gen(function* () {
        const names = Array.from({ length: 1_200 }, (_, index) => `f${String(index).padStart(4, "0")}.md`)
        const root = yield* tempTree({
          "pdf/SKILL.md": skillMd("pdf", "PDF"),
          ...Object.fromEntries(names.map((name) => [`pdf/many/${name}`, "x"])),
        })
        // Settled: a folder changed (its modification or change time) within the last 2 s is never trusted.
        const minuteAgo = new Date(Date.now() - 60_000)
        yield* Effect.promise(() => fs.utimes(`${root}/pdf/many`, minuteAgo, minuteAgo))
        yield* settle
        const files = yield* SkillFiles
        const skill = { id: "pdf", dir: `${root}/pdf`, rootReal: root }
        const page = (offset: number) =>
          Effect.map(files.children(skill, "many", offset, 2), ({ entries }) =>
            entries.map((entry) => entry.path),
          )
        // The first read marks the folder, the second keeps its names, the third uses them.
        for (let read = 0; read < 3; read++)
          expect(yield* page(0)).toEqual(["many/f0000.md", "many/f0001.md"])
        yield* Effect.promise(() => fs.writeFile(`${root}/pdf/many/a-new.md`, "x"))
        expect(yield* page(0)).toEqual(["many/a-new.md", "many/f0000.md"])
        expect(yield* page(0)).toEqual(["many/a-new.md", "many/f0000.md"])
        yield* Effect.promise(() => fs.rm(`${root}/pdf/many/a-new.md`))
        expect(yield* page(0)).toEqual(["many/f0000.md", "many/f0001.md"])
        expect(yield* page(1_199)).toEqual(["many/f1199.md"])
        // The folder's modification time put back (as a copy tool may), read twice (its names
        // would be kept by that time alone), then a file renamed and the time put back again:
        // only the change time says the folder changed, and it is seen.
        yield* Effect.promise(() => fs.utimes(`${root}/pdf/many`, minuteAgo, minuteAgo))
        for (let read = 0; read < 2; read++)
          expect(yield* page(0)).toEqual(["many/f0000.md", "many/f0001.md"])
        yield* Effect.promise(async () => {
          await fs.rename(`${root}/pdf/many/f0000.md`, `${root}/pdf/many/renamed.md`)
          await fs.utimes(`${root}/pdf/many`, minuteAgo, minuteAgo)
        })
        expect(yield* page(0)).toEqual(["many/f0001.md", "many/f0002.md"])
        expect(yield* page(1_198)).toEqual(["many/f1199.md", "many/renamed.md"])
      }),
  )
})

layer(SkillFilesTest)("SkillFiles.manifest", (it) => {
  const sha = (text: string | Buffer) => `sha256:${createHash("sha256").update(text).digest("hex")}`

  it.scoped("lists every file with size and sha256, SKILL.md included, never an escaping link", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({
        "pdf/SKILL.md": skillMd("pdf", "PDF"),
        "pdf/references/guide.md": "guide",
        "pdf/inner.md": { symlink: "references/guide.md" },
        "pdf/leak.md": { symlink: "../secret.txt" },
        "secret.txt": "secret",
      })
      const files = yield* SkillFiles
      const skill = { id: "pdf", dir: `${root}/pdf`, rootReal: root }
      const manifest = yield* files.manifest(skill)
      expect(manifest.files).toEqual([
        { path: "SKILL.md", size: skillMd("pdf", "PDF").length, digest: sha(skillMd("pdf", "PDF")) },
        { path: "inner.md", size: 5, digest: sha("guide") },
        { path: "references/guide.md", size: 5, digest: sha("guide") },
      ])
      expect(manifest.frontmatter.fields.name).toBe("pdf")
      // Digests follow the content: an edited file gets a new one.
      yield* Effect.promise(() => fs.writeFile(`${root}/pdf/references/guide.md`, "guide, edited"))
      const again = yield* files.manifest(skill)
      expect(again.files.find((file) => file.path === "references/guide.md")?.digest).toBe(
        sha("guide, edited"),
      )
    }),
  )

  it.scoped("takes SKILL.md's frontmatter from the catalog only for the very bytes it hashed", () =>
    Effect.gen(function* () {
      const text = skillMd("pdf", "PDF")
      const root = yield* tempTree({ "pdf/SKILL.md": text, "pdf/references/guide.md": "guide" })
      // The files settled (changed over 2 s ago), so their digests are kept; the skill folder
      // changed just now, so its list of files is not (each look walks it).
      yield* settle
      yield* Effect.promise(() => fs.writeFile(`${root}/pdf/.changed`, ""))
      yield* Effect.promise(() => fs.rm(`${root}/pdf/.changed`))
      const files = yield* SkillFiles
      const skill = { id: "pdf", dir: `${root}/pdf`, rootReal: root }
      const info = yield* Effect.promise(() => fs.stat(`${root}/pdf/SKILL.md`))
      const fingerprint = fingerprintOf(info)
      // The catalog's own parse of the same file: equal, but another object.
      const parsed = parseSkillText(`${root}/pdf/SKILL.md`, text)
      if (Either.isLeft(parsed)) return yield* parsed.left
      const catalogs = parsed.right
      const indexedSkill = { ...skill, fingerprint, frontmatter: catalogs }
      // The first look hashes SKILL.md and finds it parses as the catalog's did...
      expect((yield* files.manifest(indexedSkill)).frontmatter).not.toBe(catalogs)
      // ...so the next takes the catalog's instead of reading it again.
      const again = yield* files.manifest(indexedSkill)
      expect(again.frontmatter).toBe(catalogs)
      expect(again.files[0]).toEqual({ path: "SKILL.md", size: text.length, digest: sha(text) })
      // A catalog that parsed other bytes under the same fingerprint (a rewrite of the same
      // size within the timestamp's tick) is never paired with this digest.
      const stale: ParsedFrontmatter = {
        raw: { name: "pdf", description: "bytes the catalog read before a rewrite" },
        fields: { name: "pdf", description: "bytes the catalog read before a rewrite" },
        endLine: 4,
      }
      for (let look = 0; look < 2; look++) {
        const fresh = yield* files.manifest({ ...skill, fingerprint, frontmatter: stale })
        expect(fresh.frontmatter.fields.description).toBe("PDF")
      }
      // Indexed from another version of the file: SKILL.md is read and parsed again.
      const other = { ...fingerprint, mtimeMs: fingerprint.mtimeMs - 1000 }
      const reread = yield* files.manifest({ ...skill, fingerprint: other, frontmatter: catalogs })
      expect(reread.frontmatter).not.toBe(catalogs)
      expect(reread.frontmatter.fields.description).toBe("PDF")
    }),
  )

  /**
   * Swaps `folder` for a link to `elsewhere` and back until stopped, by another process (Node, in
   * a tight loop): a walk, a listing and a SKILL.md's load make synchronous calls, during which no
   * swap of this process could run, and a walk that found the folder may then read through the
   * link. Resolves once the first swap is made, to the effect that stops swapping.
   */
  const swappingElsewhere = (folder: string, elsewhere: string) =>
    Effect.promise(async () => {
      const script = `const fs = require("node:fs"); const [folder, elsewhere] = process.argv.slice(1);
        for (;;) { fs.renameSync(folder, folder + ".real"); fs.symlinkSync(elsewhere, folder);
          fs.unlinkSync(folder); fs.renameSync(folder + ".real", folder); process.stdout.write("."); }`
      const child = spawn(process.execPath, ["-e", script, folder, elsewhere], {
        stdio: ["ignore", "pipe", "ignore"],
      })
      let swaps = 0
      await new Promise<void>((resolve) =>
        child.stdout.on("data", (chunk: Buffer) => {
          swaps += chunk.length
          resolve()
        }),
      )
      /** Stops, puts the folder back, and answers how many times it was swapped. */
      return Effect.promise(async () => {
        const exited = new Promise((resolve) => child.once("exit", resolve))
        child.kill("SIGKILL")
        await exited
        const moved = await fs.lstat(`${folder}.real`).catch(() => null)
        if (moved !== null) {
          await fs.rm(folder, { force: true })
          await fs.rename(`${folder}.real`, folder)
        }
        return swaps
      })
    })

  /** Names of things outside the skill; `outside/a.md` has a size (7,777 bytes) that shows if listed. */
  const SECRET = "outside-the-skill"
  const OUTSIDE_SIZE = 7_777

  /**
   * A skill whose `refs/a.md` is walked late (after the 100 files of `aaa/`), with a link
   * `zz-link` to `refs/a.md`, and an `outside/` folder with the same names; `refs` is swapped
   * for a link to `outside` and back until `stop` (which answers how many swaps were made).
   */
  const race = () =>
    Effect.gen(function* () {
      const tree: Record<string, string | { readonly symlink: string }> = {
        "skills/pdf/SKILL.md": skillMd("pdf", "PDF"),
        "skills/pdf/refs/a.md": "inside",
        "skills/pdf/zz-link": { symlink: "refs/a.md" },
        [`outside/${SECRET}.md`]: SECRET,
        "outside/a.md": SECRET.padEnd(OUTSIDE_SIZE, "."),
      }
      for (let i = 0; i < 100; i++) tree[`skills/pdf/aaa/${i}.md`] = `inside ${i}`
      const root = yield* tempTree(tree)
      const files = yield* SkillFiles
      const skill = { id: "pdf", dir: `${root}/skills/pdf`, rootReal: `${root}/skills` }
      return { files, skill, stop: yield* swappingElsewhere(`${root}/skills/pdf/refs`, `${root}/outside`) }
    })

  /**
   * Makes `attempt` `rounds` times while a folder is being swapped (`stop` ends the swapping),
   * checks each success with `check`, and expects the folder to have been swapped often and every
   * failure to be a refusal as a swap, or as a file that went missing: never a read outside.
   */
  const underSwaps = <A>(
    stop: Effect.Effect<number>,
    rounds: number,
    attempt: Effect.Effect<A, { readonly _tag: string }>,
    check: (success: A) => void,
  ) =>
    Effect.gen(function* () {
      const outcomes = new Set<string>()
      for (let round = 0; round < rounds; round++) {
        const result = yield* Effect.either(attempt)
        if (result._tag === "Right") check(result.right)
        outcomes.add(result._tag === "Right" ? "done" : result.left._tag)
      }
      expect(yield* stop).toBeGreaterThan(10)
      for (const outcome of outcomes) {
        expect(["done", "SkillUnreadable", "PathEscape", "FileNotFound"]).toContain(outcome)
      }
    })

  it.scoped("never hashes a file outside the skill when a folder is swapped for a link meanwhile", () =>
    Effect.gen(function* () {
      const { files, skill, stop } = yield* race()
      const outsideDigest = sha(SECRET.padEnd(OUTSIDE_SIZE, "."))
      yield* underSwaps(stop, 100, files.manifest(skill), (manifest) => {
        for (const file of manifest.files) {
          expect(file.digest).not.toBe(outsideDigest)
          expect(file.path).not.toContain(SECRET)
          expect(file.size).not.toBe(OUTSIDE_SIZE)
        }
      })
    }),
  )

  it.scoped("never lists a name from outside the skill when a folder is swapped for a link meanwhile", () =>
    Effect.gen(function* () {
      const { files, skill, stop } = yield* race()
      for (let round = 0; round < 100; round++) {
        const listing = yield* Effect.either(files.list(skill, ""))
        if (listing._tag === "Right") {
          expect(JSON.stringify(listing.right)).not.toContain(SECRET)
          // Nor the size of an outside file, through the link.
          expect(
            listing.right.entries.some((entry) => entry.type === "file" && entry.size === OUTSIDE_SIZE),
          ).toBe(false)
        }
      }
      expect(yield* stop).toBeGreaterThan(10)
    }),
  )

  it.scoped("never loads a SKILL.md from outside when the skill folder is swapped for a link meanwhile", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({
        "skills/pdf/SKILL.md": skillMd("pdf", "PDF", "inside\n"),
        "outside/SKILL.md": skillMd("pdf", "PDF", `${SECRET}\n`),
      })
      const files = yield* SkillFiles
      const skill = { id: "pdf", dir: `${root}/skills/pdf`, rootReal: `${root}/skills` }
      // Swapped by another process: the load's calls are synchronous.
      const stop = yield* swappingElsewhere(skill.dir, `${root}/outside`)
      yield* underSwaps(stop, 200, files.loadSkill(skill), (loaded) => expect(loaded.body).toBe("inside\n"))
    }),
  )

  it.scoped("lists a skill's files depth-first, in name order", () =>
    Effect.gen(function* () {
      const tree: Record<string, string> = { "pdf/SKILL.md": skillMd("pdf", "PDF"), "pdf/a/deep/x.md": "x" }
      for (const folder of ["e", "d", "c", "b", "a"]) {
        tree[`pdf/${folder}/2.md`] = "2"
        tree[`pdf/${folder}/1.md`] = "1"
      }
      const root = yield* tempTree(tree)
      const files = yield* SkillFiles
      const manifest = yield* files.manifest({ id: "pdf", dir: `${root}/pdf`, rootReal: root })
      expect(manifest.files.map((file) => file.path)).toEqual([
        "SKILL.md",
        "a/1.md",
        "a/2.md",
        "a/deep/x.md",
        "b/1.md",
        "b/2.md",
        "c/1.md",
        "c/2.md",
        "d/1.md",
        "d/2.md",
        "e/1.md",
        "e/2.md",
      ])
    }),
  )

  it.scoped("keeps no digest of a file changed just now: a rewrite that keeps size and time is seen", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({ "pdf/SKILL.md": skillMd("pdf", "PDF"), "pdf/notes.md": "aaaa" })
      const notes = `${root}/pdf/notes.md`
      // A whole second just ahead: the same timestamp for both versions, and not settled.
      const second = Math.ceil(Date.now() / 1000) + 1
      yield* Effect.promise(() => fs.utimes(notes, second, second))
      const files = yield* SkillFiles
      const skill = { id: "pdf", dir: `${root}/pdf`, rootReal: root }
      const digestOfNotes = (manifest: { readonly files: ReadonlyArray<{ path: string; digest: string }> }) =>
        manifest.files.find((file) => file.path === "notes.md")?.digest
      expect(digestOfNotes(yield* files.manifest(skill))).toBe(sha("aaaa"))
      yield* Effect.promise(async () => {
        await fs.writeFile(notes, "bbbb")
        await fs.utimes(notes, second, second)
      })
      expect(digestOfNotes(yield* files.manifest(skill))).toBe(sha("bbbb"))
    }),
  )

  it.scoped(
    "keeps no digest of a file copied just now with old times: a second copy in the same second is seen",
    () =>
      Effect.gen(function* () {
        const root = yield* tempTree({ "pdf/SKILL.md": skillMd("pdf", "PDF"), "pdf/notes.md": "aaaa" })
        const notes = `${root}/pdf/notes.md`
        const hourAgo = Date.now() / 1000 - 3600
        // As `cp -a`, `rsync -a` or `tar -x` leave a file: its old modification time, a change time of now.
        const copy = (text: string) =>
          Effect.promise(async () => {
            await fs.writeFile(notes, text)
            await fs.utimes(notes, hourAgo, hourAgo)
          })
        yield* copy("aaaa")
        const files = yield* skillFilesOnCoarseClock
        const skill = { id: "pdf", dir: `${root}/pdf`, rootReal: root }
        const digestOfNotes = (manifest: {
          readonly files: ReadonlyArray<{ path: string; digest: string }>
        }) => manifest.files.find((file) => file.path === "notes.md")?.digest
        expect(digestOfNotes(yield* files.manifest(skill))).toBe(sha("aaaa"))
        // Copied again within the same second of a coarse clock: every field of its stamp the same.
        yield* copy("bbbb")
        expect(digestOfNotes(yield* files.manifest(skill))).toBe(sha("bbbb"))
      }),
  )

  it.scoped.runIf(process.platform === "linux")(
    "leaves out names that are not UTF-8, and lists a name with U+FFFD once, as the file it names",
    () =>
      Effect.gen(function* () {
        const root = yield* tempTree({
          "pdf/SKILL.md": skillMd("pdf", "PDF"),
          "pdf/\u{FFFD}.txt": "replacement",
        })
        // A name of bytes that are not UTF-8, which Node would decode to the same "\u{FFFD}.txt".
        nodeFs.writeFileSync(
          Buffer.concat([Buffer.from(`${root}/pdf/`), Buffer.from([0xff]), Buffer.from(".txt")]),
          "raw",
        )
        nodeFs.writeFileSync(
          Buffer.concat([Buffer.from(`${root}/pdf/only-`), Buffer.from([0xfe]), Buffer.from(".txt")]),
          "raw",
        )
        const files = yield* SkillFiles
        const skill = { id: "pdf", dir: `${root}/pdf`, rootReal: root }
        expect((yield* files.manifest(skill)).files.map((file) => `${file.path} ${file.digest}`)).toEqual([
          `SKILL.md ${sha(skillMd("pdf", "PDF"))}`,
          `\u{FFFD}.txt ${sha("replacement")}`,
        ])
        const listing = yield* files.list(skill, "")
        expect(listing.entries.map((entry) => entry.path)).toEqual(["SKILL.md", "\u{FFFD}.txt"])
      }),
  )

  it.scoped("refuses skills over the extension's limits, or holding a file over the size limit", () =>
    Effect.gen(function* () {
      const many: Record<string, string> = { "many/SKILL.md": skillMd("many", "M") }
      for (let i = 0; i < 512; i++) many[`many/data/${i}.txt`] = "x"
      const root = yield* tempTree({
        ...many,
        "big/SKILL.md": skillMd("big", "B"),
        "big/big.txt": "x".repeat(2048),
      })
      const files = yield* SkillFiles
      const tooMany = yield* Effect.flip(files.manifest({ id: "many", dir: `${root}/many`, rootReal: root }))
      expect(tooMany.message).toContain("more than 512 files")
      const tooBig = yield* Effect.flip(files.manifest({ id: "big", dir: `${root}/big`, rootReal: root }))
      expect(tooBig.message).toContain("'big.txt' is 2048 bytes")
    }),
  )

  // Folders are read through their descriptors on Linux only.
  it.scoped.runIf(process.platform === "linux")(
    "closes every folder a listing opened, also when it fails midway",
    () =>
      Effect.gen(function* () {
        const root = yield* fixture()
        const skill = { id: "pdf", dir: `${root}/skills/pdf`, rootReal: root }
        const openDescriptors = () => readdirSync("/proc/self/fd").length
        const before = openDescriptors()
        const files = yield* SkillFiles
        expect((yield* files.list(skill, "")).entries.length).toBeGreaterThan(0)
        expect(openDescriptors()).toBe(before)
        // Out of descriptors when a link three folders down is looked at, with those folders open.
        nodeFs.symlinkSync("more.md", `${root}/skills/pdf/references/deep/link.md`)
        const emfile = Object.assign(new Error("EMFILE: too many open files"), { code: "EMFILE" })
        const folders: Array<string> = []
        const failing = yield* skillFilesWith((node) => ({
          openFolder: (real, within) => {
            folders.push(real)
            return node.openFolder(real, within)
          },
          statNamed: (target) => {
            if (target.endsWith("/deep/more.md")) throw emfile
            return node.statNamed(target)
          },
        }))
        expect((yield* Effect.flip(failing.list(skill, "")))._tag).toBe("SkillUnreadable")
        expect(folders.at(-1)).toBe(`${nodeFs.realpathSync(skill.dir)}/references/deep`)
        expect(openDescriptors()).toBe(before)
      }),
  )
})

// Any skill's SKILL.md, once read, is answered from memory while one lstat of it finds the file
// read (SkillFiles `loadSkill`), covered by watches or not: exactly as fresh as a read.
describe("a SKILL.md read before", () => {
  it.scoped(
    "is served fresh on the very next call once edited in place, replaced, its folder swapped for a link or moved out and linked back; one of several links is read each time",
    () =>
      Effect.gen(function* () {
        const root = yield* tempTree({
          "skills/edited/SKILL.md": skillMd("edited", "PDF"),
          "skills/replaced/SKILL.md": skillMd("replaced", "PDF"),
          "skills/swapped/SKILL.md": skillMd("swapped", "PDF"),
          "elsewhere/SKILL.md": skillMd("swapped", "Not the skill."),
          "skills/moved/SKILL.md": skillMd("moved", "PDF"),
          "skills/ahead/SKILL.md": skillMd("ahead", "PDF"),
          "skills/linked/SKILL.md": skillMd("linked", "PDF"),
        })
        // A write through another link would change it under the same path: never remembered.
        nodeFs.linkSync(`${root}/skills/linked/SKILL.md`, `${root}/linked-elsewhere.md`)
        // Made where the clock is a day ahead: its change time, not that time, says when it changed.
        const dayAhead = Date.now() / 1000 + 86_400
        nodeFs.utimesSync(`${root}/skills/ahead/SKILL.md`, dayAhead, dayAhead)
        // Only a file last changed over 2 s ago is remembered.
        yield* settle
        let opened = 0
        const files = yield* skillFilesWith((node) => ({
          openFile: (file, known) => {
            opened++
            return node.openFile(file, known)
          },
        }))
        const skill = (id: string) => ({ id, dir: `${root}/skills/${id}`, rootReal: `${root}/skills` })
        const description = (id: string) =>
          Effect.map(Effect.either(files.loadSkill(skill(id))), (loaded) =>
            loaded._tag === "Right" ? loaded.right.description : loaded.left._tag,
          )
        const remembered = ["edited", "replaced", "swapped", "moved", "ahead"]
        for (const id of remembered) expect(yield* description(id)).toBe("PDF")
        // Remembered: read again without opening the file, so what follows checks the memory.
        const before = opened
        for (const id of remembered) expect(yield* description(id)).toBe("PDF")
        expect(opened).toBe(before)
        for (const round of [1, 2]) {
          expect(yield* description("linked")).toBe("PDF")
          expect(opened).toBe(before + round)
        }
        nodeFs.writeFileSync(`${root}/skills/edited/SKILL.md`, skillMd("edited", "FDP"))
        nodeFs.writeFileSync(`${root}/new.md`, skillMd("replaced", "Portable documents, rewritten."))
        nodeFs.renameSync(`${root}/new.md`, `${root}/skills/replaced/SKILL.md`)
        nodeFs.renameSync(`${root}/skills/swapped`, `${root}/moved`)
        nodeFs.symlinkSync(`${root}/elsewhere`, `${root}/skills/swapped`)
        // The very same folder and file, now outside the skills folder, reached through a link.
        nodeFs.renameSync(`${root}/skills/moved`, `${root}/moved-out`)
        nodeFs.symlinkSync(`${root}/moved-out`, `${root}/skills/moved`)
        expect(yield* description("moved")).toBe("PathEscape")
        expect(yield* description("edited")).toBe("FDP")
        expect(yield* description("replaced")).toBe("Portable documents, rewritten.")
        expect(yield* description("swapped")).toBe("PathEscape")
      }),
  )
})

describe("SkillFiles helpers", () => {
  it("keeps the segments of a clean relative path", () => {
    expect(checkRelativePath("s", "a/./b//c.md")).toEqual(Either.right(["a", "b", "c.md"]))
    expect(checkRelativePath("s", "")).toEqual(Either.right([]))
  })

  it("refuses overlong names as invalid arguments", () => {
    const result = checkRelativePath("s", `${"n".repeat(300)}.md`)
    expect(Either.isLeft(result) && result.left._tag).toBe("InvalidArgument")
  })

  it("detects binary content and names types", () => {
    expect(isBinary(Buffer.from("plain text ✓"))).toBe(false)
    expect(isBinary(Buffer.from([0x61, 0x00, 0x62]))).toBe(true)
    expect(isBinary(Buffer.from([0xff, 0xfe, 0xfd]))).toBe(true)
    expect(mimeTypeOf("SKILL.md")).toBe("text/markdown")
    expect(mimeTypeOf("a/b.py")).toBe("text/x-python")
    expect(mimeTypeOf("x.unknownext")).toBe("application/octet-stream")
  })
})
