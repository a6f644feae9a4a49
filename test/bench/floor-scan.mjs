/**
 * Benchmark floor: a frontmatter-only scan of a skills folder in plain Node, the least any
 * server must do before it can list skills: for each `<dir>/*\/SKILL.md`, read its first
 * 4 KiB synchronously and take `name:` and `description:` from the frontmatter. Prints the
 * number of skills found and the scan's own time (ms) as JSON.
 */
import * as fs from "node:fs"
import * as path from "node:path"

const started = performance.now()
const root = process.argv[2]
const head = Buffer.allocUnsafe(4096)
const skills = []
for (const entry of fs.readdirSync(root, { withFileTypes: true })) {
  if (!entry.isDirectory()) continue
  let fd
  try {
    fd = fs.openSync(path.join(root, entry.name, "SKILL.md"), "r")
  } catch {
    continue
  }
  try {
    const text = head.toString("utf8", 0, fs.readSync(fd, head, 0, head.length, 0))
    const end = text.indexOf("\n---", 3)
    if (!text.startsWith("---") || end < 0) continue
    const fields = {}
    for (const line of text.slice(4, end).split("\n")) {
      const colon = line.indexOf(":")
      if (colon > 0) fields[line.slice(0, colon)] = line.slice(colon + 1).trim()
    }
    if (fields.name && fields.description) skills.push({ id: entry.name, ...fields })
  } finally {
    fs.closeSync(fd)
  }
}
process.stdout.write(`${JSON.stringify({ skills: skills.length, ms: performance.now() - started })}\n`)
