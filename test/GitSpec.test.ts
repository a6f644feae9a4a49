import { createHmac } from "node:crypto"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { parseCommandLine } from "../src/Cli.js"
import { parseGitSpec } from "../src/GitSpec.js"
import { resolveSettings } from "../src/Options.js"
import { gitSourceFolder } from "../src/Settings.js"
import { githubSignature, gitlabTokenMatches } from "../src/sources/Git.js"
import { tempTree } from "./support/tree.js"

const withEnv = (env: Record<string, string>) =>
  Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))

const problem = (raw: string) => Either.match(parseGitSpec(raw), { onLeft: (why) => why, onRight: () => "" })

describe("parseGitSpec", () => {
  it("reads URL#REF:SUBDIR, each part optional", () => {
    expect(parseGitSpec("https://github.com/acme/skills#main:skills")).toEqual(
      Either.right({
        url: "https://github.com/acme/skills",
        ref: "main",
        subdir: "skills",
        display: "https://github.com/acme/skills#main:skills",
      }),
    )
    expect(parseGitSpec("file:///srv/skills.git#v2")).toMatchObject(Either.right({ ref: "v2", subdir: "" }))
    expect(parseGitSpec("git@host:acme/skills.git#:skills/team/")).toMatchObject(
      Either.right({ url: "git@host:acme/skills.git", ref: undefined, subdir: "skills/team" }),
    )
    expect(parseGitSpec("ssh://git@host/acme/skills.git")).toMatchObject(
      Either.right({ ref: undefined, subdir: "", display: "ssh://git@host/acme/skills.git" }),
    )
  })

  it("refuses a password in the URL, saying how to pass credentials, and shows URLs without user info", () => {
    const why = problem("https://alice:s3cret@github.com/acme/skills#main")
    expect(why).toContain("password")
    expect(why).toContain("credential helper")
    expect(why).toContain("GIT_ASKPASS")
    expect(why).not.toContain("s3cret")
    expect(parseGitSpec("https://ghp_token@github.com/acme/skills")).toMatchObject(
      Either.right({ display: "https://github.com/acme/skills" }),
    )
  })

  it("refuses what git could take for an option, remote helpers, and paths out of the repository", () => {
    expect(problem("--upload-pack=touch /tmp/x")).toContain("cannot start with '-'")
    expect(problem("ext::sh -c touch% /tmp/x")).not.toBe("")
    expect(problem("https://host/x#--orphan")).toContain("not a branch")
    expect(problem("https://host/x#main:../up")).toContain("inside the repository")
    expect(problem("relative/path")).toContain("expected a URL")
  })
})

describe("git sources in the settings", () => {
  it.effect("--skills-git keeps its place among --skills-dir", () =>
    Effect.gen(function* () {
      const line = yield* parseCommandLine(["-d", "a", "--skills-git", "file:///g#main", "-d", "b", "c"])
      expect(line.settings).toEqual({
        skillsDirs: ["a", "b", "c"],
        skillsGit: [{ spec: "file:///g#main", after: 1 }],
      })
    }),
  )

  it.scoped("roots in the order given; SKILLS_MCP_GIT after the folders; a bad one is a usage error", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({ "a/.keep": "", "b/.keep": "" })
      const env = { HOME: root, XDG_CACHE_HOME: `${root}/cache` }
      const settings = yield* resolveSettings({
        skillsDirs: ["a", "b"],
        skillsGit: [{ spec: "file:///g#main", after: 1 }],
        cwd: root,
      }).pipe(withEnv(env))
      const cache = path.join(root, "cache", "skills-mcp", "git")
      expect(settings.roots.map((r) => r.git?.display ?? r.path)).toEqual([
        path.join(root, "a"),
        "file:///g#main",
        path.join(root, "b"),
      ])
      expect(settings.roots[1]?.path).toBe(gitSourceFolder(cache, "file:///g"))
      expect(settings.gitCache).toBe(cache)
      const fromEnv = yield* resolveSettings({ skillsDirs: ["a"], cwd: root }).pipe(
        withEnv({ ...env, SKILLS_MCP_GIT: "file:///g#main, file:///h#v1:skills" }),
      )
      expect(fromEnv.roots.map((r) => r.git?.display ?? r.path)).toEqual([
        path.join(root, "a"),
        "file:///g#main",
        "file:///h#v1:skills",
      ])
      // A git source alone: no conventional folder is added.
      const alone = yield* resolveSettings({ cwd: root }).pipe(
        withEnv({ ...env, SKILLS_MCP_GIT: "file:///g" }),
      )
      expect(alone.roots.map((r) => r.git?.display)).toEqual(["file:///g"])
      const refused = yield* Effect.flip(
        resolveSettings({ skillsGit: [{ spec: "https://u:pw@h/x", after: 0 }], cwd: root }).pipe(
          withEnv(env),
        ),
      )
      expect(refused.message).toContain("password")
      expect(refused.message).not.toContain("pw@")
    }),
  )
})

describe("webhook secrets", () => {
  const body = Buffer.from('{"ref":"refs/heads/main"}')
  /** Whether `signature` signs `bytes`, fed in two chunks as they would arrive. */
  const signs = (secret: string, signature: string, bytes: Buffer) => {
    const signed = githubSignature(secret)
    signed.update(bytes.subarray(0, 5))
    signed.update(bytes.subarray(5))
    return signed.matches(signature)
  }
  it("accepts GitHub's HMAC signature of the very body and GitLab's token, nothing else", () => {
    const signature = `sha256=${createHmac("sha256", "secret").update(body).digest("hex")}`
    expect(signs("secret", signature, body)).toBe(true)
    expect(signs("secret", ` ${signature.toUpperCase()} `, body)).toBe(true)
    expect(signs("secret", signature, Buffer.from("{}"))).toBe(false)
    expect(signs("other", signature, body)).toBe(false)
    expect(signs("", `sha256=${createHmac("sha256", "").update(body).digest("hex")}`, body)).toBe(false)
    expect(gitlabTokenMatches("secret", "secret")).toBe(true)
    expect(gitlabTokenMatches("secret", "secreT")).toBe(false)
    expect(gitlabTokenMatches("", "")).toBe(false)
  })
})
