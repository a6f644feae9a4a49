/**
 * Kept skills covered by watches (src/files/Watches.ts, Inventories.ts): what ends a skill's
 * coverage, that its watches are all closed then, that a covered skill's file is read without
 * resolving its path (and only while covered), and that a covered read never follows a folder
 * swapped for a link an instant before. The background re-check is off here: whatever is seen
 * was seen through the watches.
 */
import * as nodeFs from "node:fs"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { SettleWindow } from "../src/files/Folders.js"
import { RecheckPace } from "../src/files/Inventories.js"
import { SkillFiles } from "../src/files/SkillFiles.js"
import type { WatchesOptions } from "../src/files/Watches.js"
import { makeWatches } from "../src/files/Watches.js"
import type { FsShape } from "../src/platform/Fs.js"
import { Fs } from "../src/platform/Fs.js"
import { Settings } from "../src/Settings.js"
import { Frontmatter } from "../src/skills/Frontmatter.js"
import { skillMd, tempTree } from "./support/tree.js"

const TREE = {
  "skills/pdf/SKILL.md": skillMd("pdf", "PDF"),
  "skills/pdf/references/guide.md": "guide",
  "skills/other/SKILL.md": skillMd("other", "Other"),
  "outside/guide.md": "outside",
}

/** Waits (for real) until `check` holds, 5 s at most; answers whether it did. */
const until = (check: () => boolean) =>
  Effect.promise(async () => {
    const deadline = Date.now() + 5_000
    while (!check() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25))
    return check()
  })

/** Every file and folder below `root` dated an hour ago, then a wait past the settle window: kept. */
const settle = (root: string) => {
  const hourAgo = Date.now() / 1000 - 3600
  const visit = (at: string) => {
    if (nodeFs.lstatSync(at).isDirectory())
      for (const name of nodeFs.readdirSync(at)) visit(path.join(at, name))
    nodeFs.utimesSync(at, hourAgo, hourAgo)
  }
  visit(root)
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5)
}

/** The tree's skill folders, with watches (`options` as makeWatches takes them) closed at the end of the test. */
const watchedTree = (options?: WatchesOptions) =>
  Effect.gen(function* () {
    const root = yield* tempTree(TREE)
    const watches = makeWatches(true, options)
    yield* Effect.addFinalizer(() => Effect.sync(watches.close))
    return { root, watches, pdf: `${root}/skills/pdf`, other: `${root}/skills/other` }
  })

describe.runIf(process.platform === "linux")("watches of kept skills", () => {
  it.scoped.each<readonly [string, (root: string) => Promise<void>]>([
    ["a file edited", (root) => fs.writeFile(`${root}/skills/pdf/references/guide.md`, "GUIDE")],
    ["a file added to a subfolder", (root) => fs.writeFile(`${root}/skills/pdf/references/new.md`, "new")],
    ["a folder above the skill renamed", (root) => fs.rename(`${root}/skills`, `${root}/renamed`)],
    ["the skill folder removed", (root) => fs.rm(`${root}/skills/pdf`, { recursive: true })],
  ])("release a skill at %s, closing all its watches", ([, change]) =>
    Effect.gen(function* () {
      const root = yield* tempTree(TREE)
      const watches = makeWatches(true)
      yield* Effect.addFinalizer(() => Effect.sync(watches.close))
      const base = `${root}/skills/pdf`
      expect(watches.begin(base)).toBe(true)
      expect(watches.folder(base, `${base}/references`)).toBe(true)
      watches.confirm(base)
      expect(watches.covered(base)).toBe(true)
      expect(watches.open()).toBeGreaterThan(2)
      yield* Effect.promise(() => change(root))
      expect(yield* until(() => !watches.covered(base))).toBe(true)
      expect(watches.open()).toBe(0)
    }),
  )

  it.scoped("keep a skill covered while another skill changes, and close every watch when closed", () =>
    Effect.gen(function* () {
      const root = yield* tempTree(TREE)
      const watches = makeWatches(true)
      const [pdf, other] = [`${root}/skills/pdf`, `${root}/skills/other`]
      for (const base of [pdf, other]) {
        expect(watches.begin(base)).toBe(true)
        watches.confirm(base)
      }
      yield* Effect.promise(() => fs.writeFile(`${other}/notes.md`, "notes"))
      expect(yield* until(() => !watches.covered(other))).toBe(true)
      expect(watches.covered(pdf)).toBe(true)
      watches.close()
      expect(watches.covered(pdf)).toBe(false)
      expect(watches.open()).toBe(0)
    }),
  )

  it.scoped("go on covering other skills when one skill's folder cannot be watched", () =>
    Effect.gen(function* () {
      const { watches, pdf, other } = yield* watchedTree()
      expect(watches.begin(pdf)).toBe(true)
      // A subfolder gone since the walk found it: that skill is not covered...
      expect(watches.folder(pdf, `${pdf}/gone`)).toBe(false)
      expect(watches.covered(pdf)).toBe(false)
      // ...but there is room for others, and they are.
      expect(watches.room()).toBe(true)
      expect(watches.begin(other)).toBe(true)
      watches.confirm(other)
      expect(watches.covered(other)).toBe(true)
    }),
  )

  it.scoped("stop at their budget, and make room again as skills are released", () =>
    Effect.gen(function* () {
      const root = yield* tempTree(TREE)
      const [pdf, other] = [`${root}/skills/pdf`, `${root}/skills/other`]
      // The budget of one skill's watches (its folder and each folder above it).
      const probe = makeWatches(true)
      expect(probe.begin(pdf)).toBe(true)
      const budget = probe.open()
      probe.close()
      const watches = makeWatches(true, { budget })
      yield* Effect.addFinalizer(() => Effect.sync(watches.close))
      expect(watches.begin(pdf)).toBe(true)
      expect(watches.begin(other)).toBe(false)
      expect(watches.room()).toBe(false)
      watches.release(pdf)
      expect(watches.room()).toBe(true)
      expect(watches.begin(other)).toBe(true)
    }),
  )

  it.scoped.each([
    ["FUSE", 0x65735546, false],
    ["NFS", 0x6969, false],
    ["Ceph", 0x00c36400, false],
    ["a type it cannot read", undefined, false],
    ["ext4", 0xef53, true],
    ["tmpfs", 0x01021994, true],
  ] as const)("cover a skill on %s only if its watches see every change", ([, type, covers]) =>
    Effect.gen(function* () {
      const { watches, pdf } = yield* watchedTree({ typeOf: () => type })
      expect(watches.begin(pdf)).toBe(covers)
      // Not for want of room: other skills may still be covered.
      expect(watches.room()).toBe(true)
    }),
  )

  it.scoped("close every watch and make no more once the catalog's watcher needs the room", () =>
    Effect.gen(function* () {
      const { watches, pdf, other } = yield* watchedTree()
      expect(watches.begin(pdf)).toBe(true)
      watches.confirm(pdf)
      watches.yieldRoom()
      expect(watches.covered(pdf)).toBe(false)
      expect(watches.open()).toBe(0)
      expect(watches.room()).toBe(false)
      expect(watches.begin(other)).toBe(false)
    }),
  )

  it("are never made with the watcher off", () => {
    const watches = makeWatches(false)
    expect(watches.begin(process.cwd())).toBe(false)
    expect(watches.open()).toBe(0)
  })
})

/**
 * The real file system, counting realpaths, and (with `withoutProc`) telling of no opened file's
 * kernel path, as a system without /proc: then only the checks of the read itself keep it inside.
 */
const countingFs = (otherDevice?: string) => {
  const node = Effect.runSync(Effect.provide(Fs, Fs.node))
  const counter = { realpaths: 0 }
  const shape: FsShape = {
    sync: {
      ...node.sync,
      // A folder whose name ends with `otherDevice` is told to be on another device (a mount).
      lstat: (target) => {
        const info = node.sync.lstat(target)
        if (info === null || otherDevice === undefined || !target.endsWith(otherDevice)) return info
        return Object.assign(Object.create(Object.getPrototypeOf(info)), info, { dev: info.dev + 1 })
      },
      realpath: (target) => {
        counter.realpaths++
        return node.sync.realpath(target)
      },
    },
    async: {
      ...node.async,
      realpath: (target) => {
        counter.realpaths++
        return node.async.realpath(target)
      },
    },
    contained: {
      ...node.contained,
      openFile: async (file) => ({ ...(await node.contained.openFile(file)), opened: null }),
    },
    containedNow: {
      ...node.containedNow,
      openFile: (file) => ({ ...node.containedNow.openFile(file), opened: null }),
    },
  }
  return { counter, layer: Layer.succeed(Fs, shape) }
}

/** SkillFiles with the watcher on, the re-check off, over `layer`'s file system (and `cache`, if given). */
const watchingSkillFiles = (layer: Layer.Layer<Fs>, cache?: string) =>
  SkillFiles.Default.pipe(
    Layer.provide(Frontmatter.Default),
    Layer.provide(
      Layer.mergeAll(
        Settings.make({ watch: true, manifestCache: cache }),
        layer,
        Layer.succeed(RecheckPace, { everyMs: 1_000, perTick: 0 }),
        // What changed over 1 ms ago is trusted as it was (2 s in the server): these tests need no wait.
        Layer.succeed(SettleWindow, { ms: 1 }),
      ),
    ),
  )

describe.runIf(process.platform === "linux")("a covered skill's files", () => {
  /** A covered skill; with `otherDevice`, a folder of it said to be on another file system. */
  const setup = (otherDevice?: string) =>
    Effect.gen(function* () {
      const root = yield* tempTree(TREE)
      settle(root)
      const { counter, layer } = countingFs(otherDevice)
      const service = yield* Effect.provide(SkillFiles, watchingSkillFiles(layer))
      const skill = { id: "pdf", dir: `${root}/skills/pdf`, rootReal: `${root}/skills` }
      // Walked and kept, its folders watched before they were read: covered.
      yield* service.manifest(skill)
      /** Realpath calls made by `effect`. */
      const realpathsOf = <A, E>(effect: Effect.Effect<A, E>) =>
        Effect.gen(function* () {
          const before = counter.realpaths
          yield* effect
          return counter.realpaths - before
        })
      return { root, service, skill, realpathsOf }
    })

  it.scoped("are read without resolving their paths while covered, and resolved once a change is seen", () =>
    Effect.gen(function* () {
      const { root, service, skill, realpathsOf } = yield* setup()
      expect(yield* realpathsOf(service.loadSkill(skill))).toBe(0)
      expect(yield* realpathsOf(service.readText(skill, "references/guide.md"))).toBe(0)
      yield* Effect.promise(() => fs.writeFile(`${root}/skills/pdf/references/guide.md`, "GUIDE"))
      // Seen through the watches (the re-check is off): no longer covered, resolved on each read.
      let resolved = 0
      for (const deadline = Date.now() + 5_000; resolved === 0 && Date.now() < deadline; ) {
        // Not SKILL.md, which a read before may answer from memory.
        resolved = yield* realpathsOf(service.readText(skill, "references/guide.md"))
        if (resolved === 0) yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 25)))
      }
      expect(resolved).toBeGreaterThan(0)
      expect((yield* service.readText(skill, "references/guide.md")).text).toBe("GUIDE")
    }),
  )

  it.scoped(
    "are covered in a fresh process too, once its calls pause after checking the recorded stamps",
    () =>
      Effect.gen(function* () {
        const root = yield* tempTree(TREE)
        settle(root)
        const cache = `${root}/cache`
        const skill = { id: "pdf", dir: `${root}/skills/pdf`, rootReal: `${root}/skills` }
        // A first process walks and records the skill (written as its SkillFiles closes).
        yield* Effect.provide(
          Effect.flatMap(SkillFiles, (files) => files.manifest(skill)),
          watchingSkillFiles(Fs.node, cache),
        )
        const { counter, layer } = countingFs()
        const service = yield* Effect.provide(SkillFiles, watchingSkillFiles(layer, cache))
        // The fresh process checks the recorded stamps (no walk): not covered yet, so a read resolves.
        yield* service.manifest(skill)
        const before = counter.realpaths
        yield* service.loadSkill(skill)
        expect(counter.realpaths).toBeGreaterThan(before)
        // Covered once calls pause: then read without resolving.
        let resolved = 1
        for (const deadline = Date.now() + 5_000; resolved > 0 && Date.now() < deadline; ) {
          const at = counter.realpaths
          yield* service.readText(skill, "references/guide.md")
          resolved = counter.realpaths - at
          if (resolved > 0) yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 25)))
        }
        expect(resolved).toBe(0)
      }),
  )

  it.scoped("are never covered with a folder on another file system (a mount inside the skill)", () =>
    Effect.gen(function* () {
      const { service, skill, realpathsOf } = yield* setup("/references")
      yield* service.manifest(skill)
      // Past the pause after which kept skills are covered in the background (Inventories
      // `coverSome`), so that its check is tried too, not only the walk's.
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 300)))
      // Not covered: its path was resolved, as for any skill checked by its stamps.
      expect(yield* realpathsOf(service.readText(skill, "references/guide.md"))).toBeGreaterThan(0)
    }),
  )

  // Swapped and read in the same turn, by either read: no watch event can have been read yet.
  it.scoped.each(["readText", "readEntry"] as const)(
    "never serve what a subfolder swapped for a link an instant ago leads to (%s)",
    (how) =>
      Effect.gen(function* () {
        const { root, service, skill, realpathsOf } = yield* setup()
        expect(yield* realpathsOf(service.readText(skill, "references/guide.md"))).toBe(0)
        const read = Effect.suspend(() => {
          nodeFs.renameSync(`${skill.dir}/references`, `${root}/moved`)
          nodeFs.symlinkSync(`${root}/outside`, `${skill.dir}/references`)
          return how === "readText"
            ? Effect.map(service.readText(skill, "references/guide.md"), (file) => file.text)
            : Effect.map(service.readEntry(skill, "references/guide.md"), (entry) => JSON.stringify(entry))
        })
        const result = yield* Effect.either(read)
        expect(result._tag === "Left" ? result.left._tag : result.right).toBe("PathEscape")
      }),
  )
})
