/**
 * GitSources: `--skills-git` repositories as skills roots. Each source's root stands for a
 * checkout of one commit (`SourceFolders`, src/skills/Discovery.ts), so discovery, containment
 * and digests are those of any folder.
 *
 * The system `git` binary does the work (run with execFile, no shell, never prompting, with a
 * timeout): credential helpers, the SSH agent, GIT_ASKPASS, proxies and shallow fetches then
 * behave as users expect, which a JavaScript implementation (isomorphic-git) would reimplement
 * only in part (no SSH, no credential helpers). Git must be installed.
 *
 * On disk, in `<gitCache>/<hash of URL>/`: `mirror.git`, a bare clone shared by every source and
 * process using that URL, fetched shallowly (depth 1) and reused across starts; `trees/<pid>-<source>-<commit>`,
 * this process's checkouts (`git worktree add --detach`: git's own checkout, with its handling of
 * links, modes and line endings, and no tar to run). A new commit gets a fresh worktree, which is
 * scanned (its SUBDIR must be a folder inside the checkout, every SKILL.md found must parse) and
 * only then becomes the source's folder; the catalog then discovers again, so a snapshot holds one
 * commit of a source or the other, never a mix. A commit that fails the scan, or a failed fetch,
 * keeps the last good commit serving, and the reason shows as a notice (`list`,
 * skill://diagnostics) and on stderr. The previous worktree is removed REMOVE_AFTER_MS after the
 * swap (a grace period, not a reference count: requests are bounded in time, and one still
 * reading after it fails cleanly with a file not found, never with another commit's content).
 *
 * A branch (or the default branch) is followed: `git ls-remote` every --git-poll seconds, a
 * fetch only when it moved; `fetchNow` (POST /hooks/git) does the same at once. A tag or a full
 * commit id pins the source: fetched once, never polled.
 */
import { execFile } from "node:child_process"
import { createHash, createHmac, timingSafeEqual } from "node:crypto"
import * as nodeFs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import * as SubscriptionRef from "effect/SubscriptionRef"
import { idFilter } from "../Access.js"
import { GitFailed } from "../Errors.js"
import type { GitSpec } from "../GitSpec.js"
import { displayUrl, isCommitId } from "../GitSpec.js"
import { errorCode, Fs } from "../platform/Fs.js"
import { isInside } from "../platform/Paths.js"
import type { Root } from "../Settings.js"
import { gitSourceFolder, Settings } from "../Settings.js"
import type { DiscoveryNotice, SourceFolder } from "../skills/Discovery.js"
import { discoverRoot, SourceFolders } from "../skills/Discovery.js"
import { Frontmatter } from "../skills/Frontmatter.js"

/** Longest a git command may run (a fetch of a large repository over a slow link included). */
const GIT_TIMEOUT_MS = 120_000
/** How long a replaced checkout stays, for requests that began before the swap. */
export const REMOVE_AFTER_MS = 60_000
/** At most this many unreadable skills are named in a refused commit's reason. */
const MAX_NAMED = 3

const short = (commit: string) => commit.slice(0, 12)

/** A checkout being served: the commit, its worktree, and the folder the root reads (SUBDIR in it). */
interface Checkout {
  readonly commit: string
  readonly tree: string
  readonly folder: string
}

interface Source {
  readonly spec: GitSpec
  /** The source's folder in the cache (shared by every source of the same URL). */
  readonly home: string
  readonly mirror: string
  /** The ref in the mirror that keeps this source's last fetched commit (for an offline start). */
  readonly localRef: string
  /** Names this source's checkouts apart from those of other sources of the mirror. */
  readonly key: string
  /** A branch: polled. Pinned sources (tag, commit) are fetched until they serve, then never. */
  followed: boolean
  served: Checkout | undefined
  /** Why the source does not serve what its REF names now, for notices. */
  problem: string | undefined
  /** The last commit refused and why (not checked out again while the REF names it). */
  refused: { readonly commit: string; readonly problem: string } | undefined
  /** Shared by the sources of one mirror. */
  readonly lock: Effect.Semaphore
}

/** The process whose pid starts a worktree's name is still running (not this one). */
const otherProcessRuns = (pid: number) => {
  if (pid === process.pid) return false
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return errorCode(error) === "EPERM"
  }
}

/**
 * Variables that point git at another repository (set when the server is started from a git
 * hook, say): the mirror named with `-C` must be the one used.
 */
const REPOSITORY_VARIABLES = [
  "GIT_DIR",
  "GIT_WORK_TREE",
  "GIT_INDEX_FILE",
  "GIT_OBJECT_DIRECTORY",
  "GIT_ALTERNATE_OBJECT_DIRECTORIES",
  "GIT_COMMON_DIR",
  "GIT_NAMESPACE",
]

/** The user's environment (credential helpers, GIT_ASKPASS, SSH agent, proxies), never prompting. */
const gitEnvironment = (): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    GIT_TERMINAL_PROMPT: "0",
    GCM_INTERACTIVE: "never",
    LC_ALL: "C",
  }
  for (const name of REPOSITORY_VARIABLES) delete env[name]
  return env
}

/** What a failed git command said: its `fatal:`/`error:` lines, else its last ones. */
const gitReason = (stderr: string, fallback: string) => {
  const lines = stderr
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "")
  const said = lines.filter((line) => /^(?:fatal|error):/.test(line))
  return ((said.length > 0 ? said : lines.slice(-3)).join(" ") || fallback).slice(0, 600)
}

/** Another git process holds a lock in the repository (another source or process of the same URL). */
const isLocked = (error: GitFailed) => /\.lock'?:? File exists|Unable to create .*\.lock/.test(error.reason)

/**
 * Runs git with `args` (no shell) and answers its standard output. Never prompts (no terminal
 * prompt, no credential manager window); the reason of a failure is git's last lines, with the
 * URL shown without its user info.
 */
const runGit = (args: ReadonlyArray<string>, spec?: GitSpec) =>
  Effect.async<string, GitFailed>((resume, signal) => {
    execFile(
      "git",
      [...args],
      {
        encoding: "utf8",
        timeout: GIT_TIMEOUT_MS,
        maxBuffer: 16 * 1024 * 1024,
        signal,
        env: gitEnvironment(),
      },
      (error, stdout, stderr) => {
        if (error === null) return resume(Effect.succeed(stdout))
        let reason =
          errorCode(error) === "ENOENT"
            ? "the git command is not installed (or not on PATH); git sources need it"
            : error.killed
              ? `git ${args[0] === "-C" ? args[2] : args[0]} did not finish within ${GIT_TIMEOUT_MS / 1000} s`
              : gitReason(stderr, error.message)
        if (spec !== undefined) reason = reason.split(spec.url).join(displayUrl(spec.url))
        resume(Effect.fail(new GitFailed({ reason })))
      },
    )
  }).pipe(Effect.retry({ times: 3, schedule: Schedule.spaced("300 millis"), while: isLocked }))

/** Two strings compared in constant time (their digests, so their lengths do not show either). */
const sameText = (a: string, b: string) =>
  timingSafeEqual(createHash("sha256").update(a).digest(), createHash("sha256").update(b).digest())

/** Whether GitLab's `X-Gitlab-Token` is the webhook's shared secret (never for an empty secret). */
export const gitlabTokenMatches = (secret: string, token: string): boolean =>
  secret !== "" && sameText(token, secret)

/**
 * GitHub's `X-Hub-Signature-256: sha256=<HMAC-SHA256 of the body>`, with the body fed in chunks as
 * it arrives (`update`), then checked once it is all read (`matches`, once).
 */
export const githubSignature = (secret: string) => {
  const hmac = createHmac("sha256", secret)
  return {
    update: (chunk: Uint8Array) => void hmac.update(chunk),
    matches: (signature: string): boolean =>
      secret !== "" && sameText(signature.trim().toLowerCase(), `sha256=${hmac.digest("hex")}`),
  }
}

export class GitSources extends Effect.Service<GitSources>()("skills-mcp/GitSources", {
  scoped: Effect.gen(function* () {
    const settings = yield* Settings
    const frontmatter = yield* Frontmatter
    const fs = yield* Fs
    const gitCache = settings.gitCache ?? path.join(os.homedir(), ".cache", "skills-mcp", "git")
    const generation = yield* SubscriptionRef.make(0)
    const scope = yield* Effect.scope
    const scanOptions = {
      maxDepth: settings.maxDepth,
      permits: idFilter(settings.allow, settings.deny),
      includeDotFolders: settings.includeDotFolders,
    }

    const sources = new Map<string, Source>()
    /** One lock per mirror: its sources fetch and check out one at a time. */
    const locks = new Map<string, Effect.Semaphore>()
    for (const root of settings.roots) {
      const spec = root.git
      if (spec === undefined || sources.has(spec.display)) continue
      const home = gitSourceFolder(gitCache, spec.url)
      if (!locks.has(home)) locks.set(home, yield* Effect.makeSemaphore(1))
      const refKey = createHash("sha256")
        .update(`${spec.ref ?? "HEAD"}`)
        .digest("hex")
        .slice(0, 16)
      sources.set(spec.display, {
        spec,
        home,
        mirror: path.join(home, "mirror.git"),
        localRef: `refs/skills-mcp/${refKey}`,
        key: createHash("sha256").update(spec.display).digest("hex").slice(0, 8),
        followed: spec.ref === undefined || !isCommitId(spec.ref),
        served: undefined,
        problem: undefined,
        refused: undefined,
        lock: locks.get(home) ?? (yield* Effect.makeSemaphore(1)),
      })
    }

    const git = (source: Source, args: ReadonlyArray<string>) =>
      runGit(["-C", source.mirror, ...args], source.spec)
    const hasCommit = (source: Source, commit: string) =>
      git(source, ["cat-file", "-e", `${commit}^{commit}`]).pipe(
        Effect.as(true),
        Effect.orElseSucceed(() => false),
      )
    const commitOf = (source: Source, ref: string) =>
      Effect.map(git(source, ["rev-parse", "--verify", "--quiet", `${ref}^{commit}`]), (out) => out.trim())

    /** The bare clone, made on first use; this process's checkouts left by an earlier run go. */
    const prepare = (source: Source) =>
      Effect.gen(function* () {
        const trees = path.join(source.home, "trees")
        yield* Effect.sync(() => nodeFs.mkdirSync(trees, { recursive: true, mode: 0o700 }))
        if (!nodeFs.existsSync(path.join(source.mirror, "HEAD")))
          yield* runGit(["init", "--bare", "--quiet", source.mirror])
        yield* Effect.sync(() => {
          for (const name of nodeFs.readdirSync(trees)) {
            const pid = Number(name.split("-")[0])
            if (Number.isInteger(pid) && !otherProcessRuns(pid))
              nodeFs.rmSync(path.join(trees, name), { recursive: true, force: true })
          }
        })
        yield* Effect.ignore(git(source, ["worktree", "prune"]))
      })

    /** The commit the source's REF names now, fetched into the mirror when it is not there yet. */
    const resolve = (source: Source) =>
      Effect.gen(function* () {
        const { url, ref } = source.spec
        const fetch = (refspec: string) =>
          git(source, [
            "fetch",
            "--quiet",
            "--depth=1",
            "--no-tags",
            "--",
            url,
            `+${refspec}:${source.localRef}`,
          ])
        if (ref !== undefined && isCommitId(ref)) {
          if (!(yield* hasCommit(source, ref))) yield* fetch(ref)
          return yield* commitOf(source, ref)
        }
        const listed = yield* runGit(["ls-remote", "--", url, ref ?? "HEAD"], source.spec)
        const refs = new Map(
          listed
            .split("\n")
            .map((line) => line.split("\t"))
            .flatMap(([sha, name]) =>
              sha !== undefined && name !== undefined ? [[name, sha] as const] : [],
            ),
        )
        const branch = ref === undefined ? "HEAD" : `refs/heads/${ref}`
        const tag = `refs/tags/${ref}`
        const remoteRef = refs.has(branch) ? branch : ref !== undefined && refs.has(tag) ? tag : undefined
        if (remoteRef === undefined)
          return yield* new GitFailed({
            reason:
              ref === undefined
                ? "the repository has no default branch (is it empty?)"
                : `the repository has no branch or tag '${ref}' (deleted or renamed?)`,
          })
        source.followed = remoteRef === branch
        const commit = refs.get(`${remoteRef}^{}`) ?? refs.get(remoteRef) ?? ""
        if (isCommitId(commit) && (yield* hasCommit(source, commit))) {
          yield* git(source, ["update-ref", source.localRef, commit])
          return commit
        }
        yield* fetch(remoteRef)
        return yield* commitOf(source, source.localRef)
      })

    /**
     * Why a checkout cannot be served, undefined when it can: its folder is missing or leads out
     * of the checkout (`fatal`: never served), or a skill in it cannot be read.
     */
    const check = (tree: string, folder: string) =>
      Effect.promise(async (): Promise<{ readonly reason: string; readonly fatal: boolean } | undefined> => {
        const real = await fs.async.realpath(folder)
        const treeReal = await fs.async.realpath(tree)
        const named = `its folder '${path.relative(tree, folder)}'`
        if (real === null || treeReal === null || (await fs.async.stat(real))?.isDirectory() !== true)
          return { reason: `${named} does not exist`, fatal: true }
        if (!isInside(treeReal, real))
          return { reason: `${named} leads outside the checkout (a symbolic link)`, fatal: true }
        const found = await discoverRoot(fs.async, { path: folder, explicit: true }, real, 0, scanOptions)
        const unreadable: Array<string> = []
        for (const candidate of found.candidates) {
          if (candidate.fingerprint.size > settings.maxFileBytes) {
            unreadable.push(`${candidate.id} (SKILL.md over ${settings.maxFileBytes} bytes)`)
            continue
          }
          const read = await frontmatter.readHead(candidate.file)
          if (read._tag === "Left") unreadable.push(`${candidate.id} (${read.left.reason})`)
        }
        if (unreadable.length === 0) return undefined
        const skills = unreadable.slice(0, MAX_NAMED).join("; ")
        const more = unreadable.length > MAX_NAMED ? ` and ${unreadable.length - MAX_NAMED} more` : ""
        return {
          reason: `skill${unreadable.length === 1 ? "" : "s"} cannot be read: ${skills}${more}`,
          fatal: false,
        }
      })

    const removeTree = (source: Source, tree: string) =>
      Effect.sync(() => nodeFs.rmSync(tree, { recursive: true, force: true })).pipe(
        Effect.zipRight(Effect.ignore(git(source, ["worktree", "prune"]))),
      )

    /**
     * Checks `commit` out into a fresh worktree and scans it; serves it when it passes (or when
     * nothing is served yet), else removes it and keeps the last good commit.
     */
    const checkout = (source: Source, commit: string, note: string | undefined) =>
      Effect.gen(function* () {
        const tree = path.join(source.home, "trees", `${process.pid}-${source.key}-${commit}`)
        yield* Effect.sync(() => nodeFs.rmSync(tree, { recursive: true, force: true }))
        yield* git(source, ["worktree", "prune"])
        yield* git(source, ["worktree", "add", "--detach", "--force", "--quiet", tree, commit])
        const folder = source.spec.subdir === "" ? tree : path.join(tree, ...source.spec.subdir.split("/"))
        const trouble = yield* check(tree, folder)
        const old = source.served
        // The first commit is served despite unreadable skills (there is nothing better), as a folder would be.
        if (trouble !== undefined && (old !== undefined || trouble.fatal)) {
          yield* removeTree(source, tree)
          const still = old === undefined ? "" : `; still serving commit ${short(old.commit)}`
          source.problem = `commit ${short(commit)} is not served: ${trouble.reason}${still}`
          source.refused = { commit, problem: source.problem }
          return
        }
        source.served = { commit, tree, folder }
        source.problem = trouble !== undefined ? `commit ${short(commit)}: ${trouble.reason}` : note
        yield* Effect.logInfo(`Git source ${source.spec.display}: serving commit ${commit}`)
        if (old !== undefined)
          yield* removeTree(source, old.tree).pipe(Effect.delay(REMOVE_AFTER_MS), Effect.forkIn(scope))
      })

    /** Fetches a source and swaps its checkout when its REF names another commit; problems are kept, not raised. */
    const update = (source: Source) =>
      source.lock.withPermits(1)(
        Effect.gen(function* () {
          const before = `${source.served?.commit}\n${source.problem}`
          const resolved = yield* Effect.either(resolve(source))
          if (resolved._tag === "Right") {
            if (resolved.right === source.served?.commit) source.problem = undefined
            else if (resolved.right === source.refused?.commit) source.problem = source.refused.problem
            else yield* checkout(source, resolved.right, undefined)
          } else if (source.served !== undefined) {
            source.problem = `fetch failed: ${resolved.left.reason}; still serving commit ${short(source.served.commit)}`
          } else {
            // Nothing served yet (first start offline, say): the commit fetched by an earlier run.
            const earlier = yield* Effect.option(commitOf(source, source.localRef))
            source.problem = `fetch failed: ${resolved.left.reason}`
            if (earlier._tag === "Some")
              yield* checkout(
                source,
                earlier.value,
                `${source.problem}; serving commit ${short(earlier.value)}, fetched earlier`,
              )
          }
          if (`${source.served?.commit}\n${source.problem}` === before) return
          if (source.problem !== undefined)
            yield* Effect.logWarning(`Git source ${source.spec.display}: ${source.problem}`)
          yield* SubscriptionRef.update(generation, (n) => n + 1)
        }).pipe(
          Effect.catchAll((error) =>
            Effect.gen(function* () {
              source.problem = `${error.reason}${source.served === undefined ? "" : `; still serving commit ${short(source.served.commit)}`}`
              yield* Effect.logWarning(`Git source ${source.spec.display}: ${source.problem}`)
              yield* SubscriptionRef.update(generation, (n) => n + 1)
            }),
          ),
        ),
      )

    /** Every source that follows a branch, or serves nothing yet, fetched now. */
    const fetchNow = Effect.suspend(() =>
      Effect.forEach(
        [...sources.values()].filter((source) => source.followed || source.served === undefined),
        update,
        { concurrency: 4, discard: true },
      ),
    )

    if (sources.size > 0) {
      // Each mirror made ready once (before any checkout of this run), then every source fetched.
      const byMirror = new Map([...sources.values()].map((source) => [source.mirror, source]))
      yield* Effect.forEach(byMirror.values(), (source) => Effect.ignoreLogged(prepare(source)), {
        concurrency: 4,
        discard: true,
      })
      yield* Effect.forEach(sources.values(), update, { concurrency: 4, discard: true })
      yield* fetchNow.pipe(Effect.delay(settings.gitPollSeconds * 1000), Effect.forever, Effect.forkScoped)
      yield* Effect.addFinalizer(() =>
        Effect.forEach(sources.values(), (source) =>
          source.served === undefined ? Effect.void : removeTree(source, source.served.tree),
        ),
      )
    }

    return {
      current: (root: Root): SourceFolder | undefined => {
        const served = root.git === undefined ? undefined : sources.get(root.git.display)?.served
        return served === undefined ? undefined : { path: served.folder, commit: served.commit }
      },
      notices: (): ReadonlyArray<DiscoveryNotice> =>
        [...sources.values()].flatMap((source) =>
          source.problem === undefined
            ? []
            : [{ path: source.spec.display, reason: source.problem, kind: "source" as const }],
        ),
      changes: sources.size === 0 ? Stream.empty : generation.changes.pipe(Stream.map((): void => undefined)),
      /** Whether any root is a git source. */
      hasSources: sources.size > 0,
      /** Every followed source (and any serving nothing yet) fetched now; answers when done. */
      fetchNow,
      /** `fetchNow` started in the background (the service's scope), for a webhook. */
      fetchSoon: Effect.asVoid(Effect.forkIn(fetchNow, scope)),
    } as const
  }),
}) {
  /** The git sources as discovery's `SourceFolders`. */
  static readonly folders = Layer.effect(SourceFolders, GitSources)
}
