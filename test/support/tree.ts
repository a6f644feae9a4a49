/**
 * Real temporary skill trees for tests: containment and discovery are tested against the
 * kernel (real files, real symbolic links), never against a mock.
 */
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import * as Effect from "effect/Effect"

/** A file's text, or a symbolic link to a target (relative or absolute). */
export type TreeEntry = string | Buffer | { readonly symlink: string }
export type Tree = Readonly<Record<string, TreeEntry>>

export const writeTree = async (root: string, tree: Tree): Promise<void> => {
  for (const [relative, entry] of Object.entries(tree)) {
    const target = path.join(root, relative)
    await fs.mkdir(path.dirname(target), { recursive: true })
    if (typeof entry === "object" && !Buffer.isBuffer(entry)) await fs.symlink(entry.symlink, target)
    else await fs.writeFile(target, entry)
  }
}

/** A temporary folder holding `tree`, removed when the scope closes. Resolves to its real path. */
export const tempTree = (tree: Tree = {}) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const root = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "skills-mcp-test-")))
      await writeTree(root, tree)
      return root
    }),
    (root) => Effect.promise(() => fs.rm(root, { recursive: true, force: true })),
  )

export const skillMd = (name: string, description: string, body = `# ${name}\n`, extra = "") =>
  `---\nname: ${name}\ndescription: ${description}\n${extra}---\n${body}`
