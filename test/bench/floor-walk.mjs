/**
 * Benchmark floors for a whole-catalog sync over the Skills extension, in plain Node (as
 * mcpbench's scan-micro.mjs): `walk-hash` walks every folder of every skill and reads and hashes
 * (SHA-256) every file, what a first sync must do at least; `walk-only` only reads every folder,
 * what finding a change anywhere takes without a watcher. Prints the files found and the walk's
 * own time (ms) as JSON.
 *
 * Usage: node floor-walk.mjs DIR walk-hash|walk-only
 */
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"

const started = performance.now()
const [root, mode] = process.argv.slice(2)
const hash = mode === "walk-hash"
let files = 0
const walk = (dir) => {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const entryPath = path.join(dir, entry.name)
    if (entry.isDirectory()) walk(entryPath)
    else if (entry.isFile()) {
      files++
      if (hash) crypto.createHash("sha256").update(fs.readFileSync(entryPath)).digest("hex")
    }
  }
}
for (const entry of fs.readdirSync(root, { withFileTypes: true }))
  if (entry.isDirectory()) walk(path.join(root, entry.name))
process.stdout.write(`${JSON.stringify({ files, ms: performance.now() - started })}\n`)
