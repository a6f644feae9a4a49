/**
 * Git sources (`--skills-git`) through the built server and CLI, against local bare repositories
 * made here with git (file:// URLs, no network): a pinned tag, a followed branch polled every
 * second (a new commit, a broken one, a force-push, a deleted branch, a failing fetch), a link
 * out of the checkout, and requests during swaps.
 */
import { execFileSync } from "node:child_process"
import { createHash, createHmac } from "node:crypto"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js"
import * as Schema from "effect/Schema"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { send, startHttpServer, whenReady } from "../support/http.js"
import type { RunningServer } from "../support/server.js"
import { callTool, decode, eventually, resourceText, runRaw, startServer } from "../support/server.js"
import type { Tree } from "../support/tree.js"
import { skillMd, writeTree } from "../support/tree.js"

let base: string
let env: Record<string, string>

/** git in `cwd`, with no user or system configuration but a committer. */
const git = (cwd: string, ...args: Array<string>) =>
  execFileSync("git", ["-c", "user.name=test", "-c", "user.email=test@example.com", ...args], {
    cwd,
    encoding: "utf8",
    env: { PATH: process.env.PATH ?? "", HOME: base, GIT_CONFIG_NOSYSTEM: "1" },
  }).trim()

interface Repo {
  /** The working clone commits are made in. */
  readonly work: string
  /** The bare repository served. */
  readonly bare: string
  /** Its file:// URL. */
  readonly url: string
}

let repos = 0
const makeRepo = async (): Promise<Repo> => {
  const name = `repo-${repos++}`
  const bare = path.join(base, `${name}.git`)
  const work = path.join(base, name)
  await fs.mkdir(work)
  git(base, "init", "--quiet", "--bare", "--initial-branch=main", bare)
  git(work, "init", "--quiet", "--initial-branch=main")
  git(work, "remote", "add", "origin", bare)
  return { work, bare, url: `file://${bare}` }
}

/** Replaces the working tree with `tree`, commits, pushes main; the new commit. */
const commitTree = async (
  repo: Repo,
  tree: Tree,
  options: { readonly force?: boolean; readonly amend?: boolean } = {},
) => {
  for (const entry of await fs.readdir(repo.work))
    if (entry !== ".git") await fs.rm(path.join(repo.work, entry), { recursive: true, force: true })
  await writeTree(repo.work, tree)
  git(repo.work, "add", "--all")
  git(repo.work, "commit", "--quiet", "--allow-empty", ...(options.amend ? ["--amend"] : []), "-m", "skills")
  git(repo.work, "push", "--quiet", ...(options.force ? ["--force"] : []), "origin", "main")
  return git(repo.work, "rev-parse", "HEAD")
}

const pdf = (description: string, extra: Tree = {}): Tree => ({
  "skills/pdf/SKILL.md": skillMd("pdf", description),
  ...extra,
})

const Diagnostics = Schema.parseJson(
  Schema.Struct({
    notices: Schema.Array(Schema.Struct({ path: Schema.String, reason: Schema.String })),
    commits: Schema.Array(Schema.Struct({ id: Schema.String, source: Schema.String, commit: Schema.String })),
  }),
)
const diagnostics = async (server: RunningServer) =>
  decode(Diagnostics, await resourceText(server, "skill://diagnostics"), "skill://diagnostics")

/** What get_skill and list_skills answer, as far as these tests look. */
const Got = Schema.Struct({ baseDir: Schema.String, description: Schema.String })
const Listed = Schema.Struct({ skills: Schema.Array(Schema.Struct({ id: Schema.String })) })
const Recorded = Schema.parseJson(Schema.Struct({ root: Schema.String }))
const AuditLine = Schema.Struct(
  { tool: Schema.String, outcome: Schema.String },
  { key: Schema.String, value: Schema.Unknown },
)

const description = async (server: RunningServer, id = "pdf") =>
  decode(Got, (await callTool(server, "get_skill", { id })).structuredContent).description

const ListJson = Schema.parseJson(
  Schema.Struct({
    served: Schema.Array(
      Schema.Struct({
        id: Schema.String,
        git: Schema.optional(Schema.Struct({ source: Schema.String, commit: Schema.String })),
      }),
    ),
    notices: Schema.Array(Schema.Struct({ path: Schema.String, reason: Schema.String })),
  }),
)

beforeAll(async () => {
  base = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "skills-mcp-git-")))
  await fs.mkdir(path.join(base, "home"))
  env = { HOME: path.join(base, "home"), XDG_CACHE_HOME: path.join(base, "cache"), GIT_CONFIG_NOSYSTEM: "1" }
})
afterAll(async () => {
  await fs.rm(base, { recursive: true, force: true })
})

const servers: Array<RunningServer> = []
afterAll(async () => {
  for (const server of servers) await server.close()
})
const start = async (args: ReadonlyArray<string>) => {
  const server = await startServer(args, { env })
  servers.push(server)
  return server
}

describe("git sources", () => {
  it("a tag pins the source: list names the tag's commit while the branch moves on", async () => {
    const repo = await makeRepo()
    const tagged = await commitTree(repo, pdf("Version one."))
    git(repo.work, "tag", "v1")
    git(repo.work, "push", "--quiet", "origin", "v1")
    await commitTree(repo, pdf("Version two."))
    const run = await runRaw(["list", "--json", "--skills-git", `${repo.url}#v1:skills`], [], env)
    expect(run.code).toBe(0)
    const listed = decode(ListJson, run.stdout, "list --json")
    expect(listed.served).toEqual([{ id: "pdf", git: { source: `${repo.url}#v1:skills`, commit: tagged } }])
    expect(listed.notices).toEqual([])
    // Started from inside another repository's git hook (GIT_DIR set), the same.
    const fromHook = await runRaw(["list", "--json", "--skills-git", `${repo.url}#v1:skills`], [], {
      ...env,
      GIT_DIR: path.join(base, "elsewhere.git"),
    })
    expect(decode(ListJson, fromHook.stdout, "list --json").served[0]?.git?.commit).toBe(tagged)
    // A full commit id pins too (fetched by id).
    const byId = await runRaw(["list", "--json", "--skills-git", `${repo.url}#${tagged}:skills`], [], env)
    expect(decode(ListJson, byId.stdout, "list --json").served[0]?.git?.commit).toBe(tagged)
    // validate checks the same checkout, named by its source.
    const validated = await runRaw(["validate", "--skills-git", `${repo.url}#v1:skills`], [], env)
    expect(validated.stdout).toContain(`1 skill checked in ${repo.url}#v1:skills`)
    expect(validated.code).toBe(0)
  })

  it("a start that cannot fetch serves the commit an earlier run fetched, and says so", async () => {
    const repo = await makeRepo()
    const first = await commitTree(repo, pdf("Fetched before."))
    const args = ["list", "--json", "--skills-git", `${repo.url}#main:skills`]
    expect((await runRaw(args, [], env)).code).toBe(0)
    await fs.rename(repo.bare, `${repo.bare}.away`)
    const offline = decode(ListJson, (await runRaw(args, [], env)).stdout, "list --json")
    expect(offline.served).toEqual([{ id: "pdf", git: { source: `${repo.url}#main:skills`, commit: first } }])
    expect(offline.notices).toEqual([
      {
        path: `${repo.url}#main:skills`,
        reason: expect.stringMatching(
          new RegExp(`^fetch failed: .+; serving commit ${first.slice(0, 12)}, fetched earlier$`),
        ),
      },
    ])
  })

  it("a pinned tag is not polled: the server keeps its commit when the tag is moved", async () => {
    const repo = await makeRepo()
    const tagged = await commitTree(repo, pdf("Pinned."))
    git(repo.work, "tag", "v1")
    git(repo.work, "push", "--quiet", "origin", "v1")
    const server = await start(["--skills-git", `${repo.url}#v1:skills`, "--git-poll", "1"])
    expect(await description(server)).toBe("Pinned.")
    await commitTree(repo, pdf("Moved."))
    git(repo.work, "tag", "--force", "v1")
    git(repo.work, "push", "--quiet", "--force", "origin", "v1")
    // Three poll intervals: a followed source would have moved by now.
    await new Promise((resolve) => setTimeout(resolve, 3_000))
    expect(await description(server)).toBe("Pinned.")
    expect((await diagnostics(server)).commits[0]?.commit).toBe(tagged)
  })

  it("a followed branch: new commits within a poll; a broken commit, a deleted branch and a failing fetch keep the last good", async () => {
    const repo = await makeRepo()
    const first = await commitTree(repo, pdf("Version one."))
    const server = await start(["--skills-git", `${repo.url}#main:skills`, "--git-poll", "1"])
    expect(await description(server)).toBe("Version one.")
    await resourceText(server, "skill://pdf/SKILL.md")
    // The audit log names the commit a call or a read was served from.
    const audited = () =>
      server
        .stderr()
        .split("\n")
        .filter((line) => line.includes('"audit":true'))
        .map((line) => decode(AuditLine, JSON.parse(line)))
    await eventually(() => {
      expect(audited()).toContainEqual(
        expect.objectContaining({ tool: "get_skill", skill: "pdf", commit: first, outcome: "ok" }),
      )
      expect(audited()).toContainEqual(
        expect.objectContaining({
          tool: "resources/read",
          uri: "skill://pdf/SKILL.md",
          commit: first,
          outcome: "ok",
        }),
      )
    })
    expect((await diagnostics(server)).commits).toEqual([
      { id: "pdf", source: `${repo.url}#main:skills`, commit: first },
    ])

    // A new commit is served after a poll, and the client is told.
    const second = await commitTree(repo, pdf("Version two."))
    await eventually(async () => expect(await description(server)).toBe("Version two."))
    expect(server.notifications.map((n) => n.method)).toContain("notifications/tools/list_changed")
    expect((await diagnostics(server)).commits[0]?.commit).toBe(second)

    // A commit whose skill cannot be read is refused: the last good one keeps serving.
    const broken = await commitTree(repo, {
      "skills/pdf/SKILL.md": "---\nname: pdf\ndescription: [unclosed\n---\n",
    })
    await eventually(async () =>
      expect((await diagnostics(server)).notices).toEqual([
        {
          path: `${repo.url}#main:skills`,
          reason: expect.stringMatching(
            new RegExp(
              `^commit ${broken.slice(0, 12)} is not served: skill cannot be read: pdf \\(.+\\); still serving commit ${second.slice(0, 12)}$`,
            ),
          ),
        },
      ]),
    )
    expect(await description(server)).toBe("Version two.")

    // A force-push (history rewritten) is followed, and the problem goes.
    const forced = await commitTree(repo, pdf("Forced."), { force: true, amend: true })
    await eventually(async () => expect(await description(server)).toBe("Forced."))
    expect((await diagnostics(server)).notices).toEqual([])
    expect((await diagnostics(server)).commits[0]?.commit).toBe(forced)

    // The branch deleted: last good kept, and said.
    git(repo.bare, "update-ref", "-d", "refs/heads/main")
    await eventually(async () =>
      expect((await diagnostics(server)).notices.map((n) => n.reason)).toEqual([
        `fetch failed: the repository has no branch or tag 'main' (deleted or renamed?); still serving commit ${forced.slice(0, 12)}`,
      ]),
    )
    expect(await description(server)).toBe("Forced.")

    // The repository gone (a failing fetch): likewise; back, it is followed again.
    git(repo.bare, "update-ref", "refs/heads/main", forced)
    await fs.rename(repo.bare, `${repo.bare}.away`)
    await eventually(async () =>
      expect((await diagnostics(server)).notices.map((n) => n.reason)).toEqual([
        expect.stringMatching(new RegExp(`^fetch failed: .+; still serving commit ${forced.slice(0, 12)}$`)),
      ]),
    )
    expect(await description(server)).toBe("Forced.")
    await fs.rename(`${repo.bare}.away`, repo.bare)
    await commitTree(repo, pdf("Back."))
    await eventually(async () => expect(await description(server)).toBe("Back."))
    expect((await diagnostics(server)).notices).toEqual([])
    expect(server.stderr()).toContain("still serving commit")
  })

  it("a subscriber to a skill's file is told when a new commit is served", async () => {
    const repo = await makeRepo()
    await commitTree(repo, pdf("Version one."))
    const server = await start(["--skills-git", `${repo.url}#main:skills`, "--git-poll", "1"])
    await server.client.subscribeResource({ uri: "skill://pdf/SKILL.md" })
    await commitTree(repo, pdf("Version two."))
    await eventually(() =>
      expect(server.notifications).toContainEqual(
        expect.objectContaining({
          method: "notifications/resources/updated",
          params: { uri: "skill://pdf/SKILL.md" },
        }),
      ),
    )
    expect(await resourceText(server, "skill://pdf/SKILL.md")).toContain("Version two.")
  })

  it("a link out of the checkout is refused as in a folder; a SUBDIR that leads out is never served", async () => {
    const outside = path.join(base, "outside")
    await writeTree(outside, {
      "SKILL.md": skillMd("outside", "Outside."),
      "secret.txt": "CANARY-GIT-OUTSIDE",
    })
    const repo = await makeRepo()
    await commitTree(repo, {
      ...pdf("Inside."),
      "skills/pdf/leak.md": { symlink: path.join(outside, "secret.txt") },
      "skills/escape": { symlink: outside },
      link: { symlink: outside },
    })
    const server = await start([
      "--skills-git",
      `${repo.url}#main:skills`,
      "--skills-git",
      `${repo.url}#main:link`,
    ])
    const read = await callTool(server, "read_skill_file", { id: "pdf", path: "leak.md" })
    expect(read.isError).toBe(true)
    expect(JSON.stringify(read)).not.toContain("CANARY-GIT-OUTSIDE")
    const { notices } = await diagnostics(server)
    expect(notices).toEqual([
      {
        path: `${repo.url}#main:link`,
        reason: expect.stringMatching(/is not served: its folder 'link' leads outside the checkout/),
      },
      { path: expect.stringMatching(/\/skills\/escape$/), reason: expect.stringContaining("leads outside") },
    ])
    const listed = await callTool(server, "list_skills")
    expect(decode(Listed, listed.structuredContent).skills.map((s) => s.id)).toEqual(["pdf"])
  })

  it("requests during swaps are each served from one commit", async () => {
    const repo = await makeRepo()
    /** Version n: its marker in SKILL.md, and two files whose size says n. */
    const version = (n: number): Tree =>
      pdf(`Version ${n}.`, {
        "skills/pdf/a.md": `${n}`.repeat(n * 10),
        "skills/pdf/b.md": `${n}`.repeat(n * 10),
      })
    const commits = new Map<string, number>([[await commitTree(repo, version(1)), 1]])
    const server = await start(["--skills-git", `${repo.url}#main:skills`, "--git-poll", "1"])
    const Manifest = Schema.parseJson(
      Schema.Struct({ files: Schema.Array(Schema.Struct({ path: Schema.String, size: Schema.Number })) }),
    )
    const seen = new Set<number>()
    let done = false
    const worker = async () => {
      while (!done) {
        const [got, manifest] = await Promise.all([
          callTool(server, "get_skill", { id: "pdf" }),
          resourceText(server, "skill://pdf/_manifest"),
        ])
        const { baseDir, description } = decode(Got, got.structuredContent)
        const commit = /-([0-9a-f]{40})\//.exec(baseDir)?.[1] ?? ""
        const n = commits.get(commit)
        // The body and the folder of one answer come from one commit.
        expect(description).toBe(`Version ${n}.`)
        const sizes = decode(Manifest, manifest, "manifest")
          .files.filter((file) => file.path !== "SKILL.md")
          .map((file) => file.size)
        // Both files of one manifest come from one commit.
        expect(sizes.length).toBe(2)
        expect(sizes[0]).toBe(sizes[1])
        if (n !== undefined) seen.add(n)
      }
    }
    const workers = [worker(), worker(), worker()]
    for (const n of [2, 3, 4]) {
      commits.set(await commitTree(repo, version(n)), n)
      await eventually(() => expect(seen.has(n)).toBe(true), 15_000)
    }
    done = true
    await Promise.all(workers)
    expect([...seen].sort()).toContain(4)
    // Checkouts (one per process and commit) leave no kept manifests behind in the cache folder.
    await server.close()
    const manifests = path.join(env.XDG_CACHE_HOME ?? "", "skills-mcp", "manifests")
    const kept = await fs.readdir(manifests).catch(() => [])
    const roots = await Promise.all(
      kept.map(async (file) => decode(Recorded, await fs.readFile(path.join(manifests, file), "utf8")).root),
    )
    expect(roots.filter((root) => root.includes(`${path.sep}git${path.sep}`))).toEqual([])
  })

  it("over HTTP, POST /hooks/git with the shared secret fetches at once", async () => {
    const repo = await makeRepo()
    await commitTree(repo, pdf("Version one."))
    // The secret is the auth file's (beside the tokens of MCP requests).
    const secret = "hook-secret-1"
    const token = "git-hook-e2e-token"
    const auth = path.join(base, "hook-auth.yaml")
    await fs.writeFile(
      auth,
      `tokens:\n  - { name: ci, sha256: "${createHash("sha256").update(token).digest("hex")}" }\ngit_webhook: { secret: "${secret}" }\n`,
    )
    const server = await startHttpServer(
      ["--auth", auth, "--skills-git", `${repo.url}#main:skills`, "--git-poll", "3600"],
      env,
    )
    try {
      await whenReady(server)
      const client = new Client({ name: "git-hook-e2e", version: "1.0.0" })
      await client.connect(
        new StreamableHTTPClientTransport(new URL(server.url), {
          requestInit: { headers: { authorization: `Bearer ${token}` } },
        }),
      )
      const describe = async () =>
        decode(
          Got,
          CallToolResultSchema.parse(await client.callTool({ name: "get_skill", arguments: { id: "pdf" } }))
            .structuredContent,
        ).description
      expect(await describe()).toBe("Version one.")
      await commitTree(repo, pdf("Version two."))
      const body = JSON.stringify({ ref: "refs/heads/main" })
      const post = (headers: Record<string, string>) =>
        send(server.port, {
          method: "POST",
          path: "/hooks/git",
          headers: { "content-type": "application/json", ...headers },
          body,
        })
      // 403: a webhook's signature is not HTTP authentication (no WWW-Authenticate challenge).
      expect((await post({ "x-hub-signature-256": "sha256=00" })).status).toBe(403)
      expect((await post({ "x-gitlab-token": "wrong" })).status).toBe(403)
      expect((await post({})).status).toBe(403)
      // Refused before any body is read: without a signature or token, or with a wrong GitLab
      // token, or announcing a body too large (the client waits for 100 Continue, never sent).
      const heldBack = (headers: Record<string, string>) =>
        send(server.port, {
          method: "POST",
          path: "/hooks/git",
          headers: { "content-type": "application/json", ...headers },
          body,
          onContinue: () => {},
        })
      expect((await heldBack({})).status).toBe(403)
      expect((await heldBack({ "x-gitlab-token": "wrong" })).status).toBe(403)
      expect(
        (await heldBack({ "x-hub-signature-256": "sha256=00", "content-length": String(6 * 1024 * 1024) }))
          .status,
      ).toBe(413)
      expect(await describe()).toBe("Version one.")
      const signature = `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`
      expect((await post({ "x-hub-signature-256": signature })).status).toBe(202)
      await eventually(async () => expect(await describe()).toBe("Version two."))
      await commitTree(repo, pdf("Version three."))
      expect((await post({ "x-gitlab-token": secret })).status).toBe(202)
      await eventually(async () => expect(await describe()).toBe("Version three."))
      await client.close()
      // A webhook in flight when SIGTERM comes is answered before the process exits.
      let exit: Promise<number | null> | undefined
      const inFlight = await send(server.port, {
        method: "POST",
        path: "/hooks/git",
        headers: { "content-type": "application/json", "x-hub-signature-256": signature },
        body,
        onContinue: (sendBody) => {
          exit = server.stop()
          setTimeout(sendBody, 500)
        },
      })
      expect(inFlight.status).toBe(202)
      expect(await exit).toBe(0)
    } finally {
      await server.stop()
    }
  })
})
