/** Catalog skills made without a tree: for views and indexes of thousands. */
import type { Skill } from "../../src/catalog/Snapshot.js"

/** A skill of no folder on disk, under `/skills`. */
export const fakeSkill = (id: string, description: string): Skill => ({
  id,
  name: id,
  description,
  dir: `/skills/${id}`,
  file: `/skills/${id}/SKILL.md`,
  root: "/skills",
  rootReal: "/skills",
  rootIndex: 0,
  segments: [id],
  fingerprint: { dev: 1, ino: 1, size: 1, mtimeMs: 1, ctimeMs: 1 },
  frontmatter: { raw: { name: id, description }, fields: { name: id, description }, endLine: 3 },
  diagnostics: [],
})
