/**
 * Paths: small, shared helpers over paths and file identities (no disk access: that goes through
 * the Fs service, src/platform/Fs.ts).
 */
import type { Stats } from "node:fs"
import * as path from "node:path"

/**
 * What identifies one version of a file or folder: a change to any of these means "look again".
 * The change time is part of it because tools that copy or unpack files (`cp -a`, `rsync -a`,
 * `tar -x`, `unzip`) set the modification time back, and only the kernel sets the change time.
 */
export interface Fingerprint {
  readonly dev: number
  readonly ino: number
  readonly size: number
  readonly mtimeMs: number
  readonly ctimeMs: number
}

export const fingerprintOf = (info: Stats): Fingerprint => ({
  dev: info.dev,
  ino: info.ino,
  size: info.size,
  mtimeMs: info.mtimeMs,
  ctimeMs: info.ctimeMs,
})

export const sameFingerprint = (a: Fingerprint, b: Fingerprint): boolean =>
  a.dev === b.dev &&
  a.ino === b.ino &&
  a.size === b.size &&
  a.mtimeMs === b.mtimeMs &&
  a.ctimeMs === b.ctimeMs

/** True when `target` is `base` or below it; separator-aware (`/a/bc` is not inside `/a/b`). */
export const isInside = (base: string, target: string): boolean => {
  if (target === base) return true
  const prefix = base.endsWith(path.sep) ? base : base + path.sep
  return target.startsWith(prefix)
}

/**
 * `path.join(dir, name)` without its normalising pass (a hot path), for a normalised absolute
 * folder and a name read from it (no separator, never `.` or `..`).
 */
export const childPath = (dir: string, name: string): string =>
  dir.endsWith(path.sep) ? `${dir}${name}` : `${dir}${path.sep}${name}`

/** Joins relative segments with `/` whatever the platform (for URIs and tool output). */
export const toPosix = (segments: ReadonlyArray<string>): string => segments.join("/")
