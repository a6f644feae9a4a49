/**
 * Floors that keep our containment rules (docs/SECURITY.md, "Swaps"), in plain Node, Linux only:
 * what the sync rows of `npm run bench` could cost at least without giving up a guarantee, beside
 * floor-walk.mjs's plain walks. Not run by the bench; for comparing by hand (docs/PERFORMANCE.md,
 * "Where the open targets stand").
 *
 * - `walk-hash`: each skill folder opened without following a link and its kernel path read; each
 *   folder's names read and each entry lstat'ed through its descriptor (subfolders opened through
 *   it); each file opened without following a link, fstat'ed, read, closed and hashed (SHA-256).
 * - `stamps`: that walk without reading files, then an lstat of every folder and file it found
 *   (what a fresh process's check of recorded stamps costs); prints the lstats' time apart.
 *
 * Usage: node floor-contained.mjs DIR walk-hash|stamps   (prints one JSON line)
 */
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"

const [root, mode] = process.argv.slice(2)
const READ = fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK
const FOLDER = fs.constants.O_RDONLY | fs.constants.O_DIRECTORY | fs.constants.O_NOFOLLOW
const found = []
let files = 0

const walk = (real, at, top) => {
  const fd = fs.openSync(at, FOLDER)
  const through = `/proc/self/fd/${fd}`
  if (top) fs.readlinkSync(through)
  for (const name of fs.readdirSync(through).sort()) {
    const info = fs.lstatSync(`${through}/${name}`)
    const entryPath = path.join(real, name)
    found.push(entryPath)
    if (info.isDirectory()) walk(entryPath, `${through}/${name}`, false)
    else if (info.isFile()) {
      files++
      if (mode !== "walk-hash") continue
      const file = fs.openSync(entryPath, READ)
      const { size } = fs.fstatSync(file)
      const bytes = Buffer.allocUnsafe(size)
      fs.readSync(file, bytes, 0, size, 0)
      fs.closeSync(file)
      crypto.createHash("sha256").update(bytes).digest("hex")
    }
  }
  fs.closeSync(fd)
}

const started = performance.now()
const skills = fs.readdirSync(root).filter((name) => !name.startsWith("."))
for (const skill of skills) walk(path.join(root, skill), path.join(root, skill), true)
const walkMs = performance.now() - started
let stampsMs
if (mode === "stamps") {
  const from = performance.now()
  for (const entryPath of found) fs.lstatSync(entryPath)
  stampsMs = performance.now() - from
}
console.log(JSON.stringify({ mode, skills: skills.length, files, entries: found.length, walkMs, stampsMs }))
