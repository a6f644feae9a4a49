/**
 * A kept inventory's form (Inventories.ts keeps them): the skill's folders and files as paths, their
 * stamps as one array of numbers, and what a record gave with it; how to read a file's stamp out of
 * it, and what a record (ManifestStore.ts) must look like to be taken in as one. No state here.
 */
import * as path from "node:path"
import type { Fingerprint } from "../platform/Paths.js"
import { SKILL_FILE } from "../skills/Discovery.js"
import { MANIFEST_SEGMENT } from "../skills/Uris.js"
import { fileUriProblem } from "./Containment.js"
import { MAX_LISTING_DEPTH } from "./Folders.js"
import type { StoredSkill } from "./ManifestStore.js"

/**
 * A skill's inventory kept between calls (Inventories.ts), in the form it is recorded
 * in (ManifestStore.ts): paths and numbers, no object per file, so that a fresh process takes in
 * thousands of recorded skills, and checks their stamps, without making one.
 */
export interface KeptInventory {
  readonly rootReal: string
  /** The skill folder's real path. */
  readonly base: string
  /** The folders below the skill folder, `/`-separated, each after the folder that holds it. */
  readonly folders: ReadonlyArray<string>
  /** The files, `/`-separated, in path order. */
  readonly files: ReadonlyArray<string>
  /**
   * The stamps the walk found: dev, ino, mtimeMs and ctimeMs of the skill folder, then of each
   * folder (FOLDER_FIELDS each); then dev, ino, size, mtimeMs and ctimeMs of each file (FILE_FIELDS).
   */
  readonly stamps: ReadonlyArray<number>
  /**
   * What a record (ManifestStore.ts) gave with the inventory: every file's SHA-256 in hex, one
   * after the other, and the key of SKILL.md's frontmatter; digests of these very stamps.
   */
  recorded: { readonly digests: string; readonly skillMdKey: string | undefined } | undefined
}

/** Numbers per folder, and per file, in a kept inventory's `stamps`. */
export const FOLDER_FIELDS = 4
export const FILE_FIELDS = 5

/** Where a kept file's stamp begins in `stamps`. */
export const fileAt = (kept: KeptInventory, index: number) =>
  (kept.folders.length + 1) * FOLDER_FIELDS + index * FILE_FIELDS

/** A kept file's size. */
export const keptSize = (kept: KeptInventory, index: number): number =>
  kept.stamps[fileAt(kept, index) + 2] ?? 0

/** A kept file's stamp (`index`), as an object: for the one file a call compares in full. */
export const keptStamp = (kept: KeptInventory, index: number): Fingerprint => {
  const at = fileAt(kept, index)
  const [dev = 0, ino = 0, size = 0, mtimeMs = 0, ctimeMs = 0] = kept.stamps.slice(at, at + FILE_FIELDS)
  return { dev, ino, size, mtimeMs, ctimeMs }
}

/** Whether a stamp is a kept file's (`index`), compared number by number (no object made). */
export const isKeptStamp = (kept: KeptInventory, index: number, stamp: Fingerprint): boolean => {
  const at = fileAt(kept, index)
  const { stamps } = kept
  return (
    stamp.dev === stamps[at] &&
    stamp.ino === stamps[at + 1] &&
    stamp.size === stamps[at + 2] &&
    stamp.mtimeMs === stamps[at + 3] &&
    stamp.ctimeMs === stamps[at + 4]
  )
}

/** A path below a real folder, given `/`-separated (as recorded), without `path.join`'s pass. */
export const realOf = (base: string, relative: string) =>
  `${base}${path.sep}${path.sep === "/" ? relative : relative.replaceAll("/", path.sep)}`

/**
 * Whether a recorded path may be listed (see `fileUriProblem`); names of letters, digits, `.`,
 * `_` and `-` always may (a record is checked path by path: thousands of them).
 */
export const listable = (relative: string) =>
  (/^[\w.-]+(?:\/[\w.-]+)*$/.test(relative) && relative !== MANIFEST_SEGMENT) ||
  fileUriProblem(relative) === undefined

/** The folder a recorded path is in ("" for the skill folder), and how deep it is (in names). */
const parentOf = (relative: string) => relative.slice(0, Math.max(0, relative.lastIndexOf("/")))
const depthOf = (relative: string) => relative.split("/").length

/**
 * Whether a record has the shape a walk gives a kept inventory (a record of ours may still be
 * corrupt): its skill folder's path plain; each folder and file once, each folder in the skill
 * folder or one recorded before it, each file in a recorded folder (a folder left out would leave
 * its changes unchecked); none deeper than a walk goes; SKILL.md among the files.
 */
export const walkable = ({ base, folders, files }: StoredSkill): boolean => {
  if (path.normalize(base) !== base || base.endsWith(path.sep)) return false
  const known = new Set([""])
  for (const folder of folders) {
    if (known.has(folder) || !known.has(parentOf(folder)) || depthOf(folder) >= MAX_LISTING_DEPTH)
      return false
    known.add(folder)
  }
  const named = new Set<string>()
  for (const file of files) {
    if (named.has(file) || known.has(file) || !known.has(parentOf(file)) || depthOf(file) > MAX_LISTING_DEPTH)
      return false
    named.add(file)
  }
  return named.has(SKILL_FILE)
}
