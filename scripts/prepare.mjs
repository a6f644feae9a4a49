#!/usr/bin/env node
/**
 * npm's `prepare` script: builds what the package ships (package.json's `bin`, `main` and
 * `types`) unless it is newer than every source. npm runs it on `npm ci` and `npm install` in
 * this folder, before `npm pack` and `npm publish`, and in the clone it makes for an install from
 * git (`npx github:...`, `npm install git+https://...`), where dist/ (not committed) is missing.
 *
 * The two halves are checked apart: `build:bin` when the executable is older than a source,
 * `build:lib` when the library or its declarations are. A fresh clone builds both once; a run
 * with nothing changed (a second `npm ci`, an `npm pack` after the tests built the bin) only
 * reads the files' dates. Only Node's own modules are used.
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const PROJECT = fileURLToPath(new URL("..", import.meta.url))
const pkg = JSON.parse(fs.readFileSync(path.join(PROJECT, "package.json"), "utf8"))

/** What the build reads: the sources, the build's own scripts and settings, the locked dependencies. */
const SOURCES = [
  "src",
  "scripts",
  "package.json",
  "package-lock.json",
  "tsconfig.json",
  "tsconfig.build.json",
]

/** The newest modification time (ms) of a file or of any file below a folder; 0 if absent. */
const newest = (file) => {
  const info = fs.statSync(file, { throwIfNoEntry: false })
  if (info === undefined) return 0
  if (!info.isDirectory()) return info.mtimeMs
  return fs
    .readdirSync(file)
    .reduce((latest, name) => Math.max(latest, newest(path.join(file, name))), info.mtimeMs)
}

/** The oldest modification time (ms) of the given files; 0 if one is missing. */
const oldest = (files) =>
  Math.min(
    ...files.map((file) => fs.statSync(path.join(PROJECT, file), { throwIfNoEntry: false })?.mtimeMs ?? 0),
  )

const sourcesChanged = Math.max(...SOURCES.map((source) => newest(path.join(PROJECT, source))))

const parts = [
  { script: "build:bin", outputs: Object.values(pkg.bin) },
  { script: "build:lib", outputs: [pkg.main, pkg.types] },
]

/**
 * The build's tools are dev dependencies. npm installs them here (`npm ci`) and in its clone for
 * a git install into a project or through npx, but not for `npm install -g` from git (npm/cli#8440).
 */
const toolsMissing = () => {
  const require = createRequire(path.join(PROJECT, "package.json"))
  try {
    require.resolve("esbuild")
    require.resolve("typescript")
    return false
  } catch {
    return true
  }
}

for (const { script, outputs } of parts) {
  if (oldest(outputs) > sourcesChanged) {
    process.stderr.write(`prepare: ${outputs.join(", ")} newer than the sources; ${script} skipped\n`)
    continue
  }
  if (toolsMissing()) {
    process.stderr.write(
      "prepare: the build needs the dev dependencies (esbuild, typescript), which are not installed. " +
        "`npm install -g` from a git URL does not install them (npm/cli#8440): run it with `npx`, " +
        "install it into a project, or install a tarball made by `npm pack`.\n",
    )
    process.exit(1)
  }
  const npm = process.platform === "win32" ? "npm.cmd" : "npm"
  const run = spawnSync(npm, ["run", script], {
    cwd: PROJECT,
    stdio: "inherit",
    shell: process.platform === "win32",
  })
  if (run.status !== 0) process.exit(run.status ?? 1)
}
