/**
 * Reading a file of a skill where a walk of its folders found it (src/files/Reading.ts): the
 * opened file must be the very file found, and its kernel path is checked again unless its stat
 * is still exactly the one found (then it is that file, unchanged: docs/SECURITY.md).
 */
import * as nodeFs from "node:fs"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { readResolvedNow } from "../src/files/Reading.js"
import type { FsShape } from "../src/platform/Fs.js"
import { Fs } from "../src/platform/Fs.js"
import { fingerprintOf } from "../src/platform/Paths.js"
import { tempTree } from "./support/tree.js"

/** The real file system, noting for each file opened whether its kernel path was read. */
const notingFs = () => {
  const node = Effect.runSync(Effect.provide(Fs, Fs.node))
  const pathRead: Array<boolean> = []
  const shape: FsShape = {
    ...node,
    containedNow: {
      ...node.containedNow,
      openFile: (file, known) => {
        const open = node.containedNow.openFile(file, known)
        if (open instanceof Promise) throw new Error("containedNow's calls are synchronous")
        pathRead.push(open.opened !== null)
        return open
      },
    },
  }
  return { shape, pathRead }
}

describe.runIf(process.platform === "linux")("a file read where its walk found it", () => {
  it.scoped(
    "is not checked by its kernel path when its stat is exactly the one found, and is otherwise",
    () =>
      Effect.gen(function* () {
        const root = yield* tempTree({ "skill/SKILL.md": "x", "skill/guide.md": "guide" })
        const skill = { id: "skill", dir: `${root}/skill`, rootReal: root }
        const resolved = { real: `${root}/skill/guide.md`, base: `${root}/skill`, relative: "guide.md" }
        const found = fingerprintOf(nodeFs.lstatSync(resolved.real))
        const { shape, pathRead } = notingFs()
        const read = readResolvedNow(shape, 1_000_000)
        const text = (stamp?: typeof found) =>
          Buffer.from(read(skill, resolved, "guide.md", stamp).content.bytes).toString("utf8")
        expect(text(found)).toBe("guide")
        // The same file (device and inode) but not as found: changed since, so checked again.
        for (const changed of [
          { ...found, mtimeMs: found.mtimeMs - 1 },
          { ...found, ctimeMs: found.ctimeMs - 1 },
          { ...found, size: found.size + 1 },
        ])
          expect(text(changed)).toBe("guide")
        expect(text(undefined)).toBe("guide")
        expect(pathRead).toEqual([false, true, true, true, true])
      }),
  )
})

describe("files read one after the other into one buffer (Reading readResolvedNow's scratch)", () => {
  it.scoped(
    "give each file's own bytes, whatever was read into the buffer before and however short the reads",
    () =>
      Effect.gen(function* () {
        const root = yield* tempTree({
          "skill/long.md": "a".repeat(300),
          "skill/short.md": "bc",
          "skill/empty.md": "",
        })
        const skill = { id: "skill", dir: `${root}/skill`, rootReal: root }
        const node = Effect.runSync(Effect.provide(Fs, Fs.node))
        // Reads of one byte at most: every read but the last is short.
        const oneByOne: FsShape = {
          ...node,
          sync: {
            ...node.sync,
            read: (fd, buffer, offset, _length, position) => node.sync.read(fd, buffer, offset, 1, position),
          },
        }
        const scratch = Buffer.alloc(1024, "X")
        for (const shape of [node, oneByOne]) {
          const read = readResolvedNow(shape, 1_000_000)
          const text = (name: string) => {
            const resolved = { real: `${root}/skill/${name}`, base: `${root}/skill`, relative: name }
            return Buffer.from(read(skill, resolved, name, undefined, scratch).content.bytes).toString("utf8")
          }
          expect(text("long.md")).toBe("a".repeat(300))
          expect(text("short.md")).toBe("bc")
          expect(text("empty.md")).toBe("")
          expect(text("long.md")).toBe("a".repeat(300))
        }
      }),
  )
})
