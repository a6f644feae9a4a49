/**
 * Catalog: the in-memory index of skills (metadata, paths, fingerprints and diagnostics; never
 * bodies) and how it stays fresh. Every read first makes sure the index is fresh: while a file
 * watcher covers every folder, by applying the changes it saw (`useWatcher`); otherwise at most
 * once per `refreshIntervalMs`, by discovering again (a stat per skill). Either way only the
 * SKILL.md files whose fingerprint changed are parsed again (src/catalog/Build.ts), and a change
 * makes a new snapshot (src/catalog/Snapshot.ts), announced on `changes`. The first scan runs
 * before anything is served, with synchronous reads (over HTTP, asynchronous: the server answers
 * health checks meanwhile); later refreshes read asynchronously (Fs).
 */

import type { Stats } from "node:fs"
import * as path from "node:path"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as PubSub from "effect/PubSub"
import * as Ref from "effect/Ref"
import * as Stream from "effect/Stream"
import type { Caller } from "../Access.js"
import { SkillNotFound } from "../Errors.js"
import { SkillFiles } from "../files/SkillFiles.js"
import { makeCalls, sliced, whenCallsPause } from "../platform/EventLoop.js"
import { Fs, mapLimit } from "../platform/Fs.js"
import { fingerprintOf, sameFingerprint } from "../platform/Paths.js"
import { Settings } from "../Settings.js"
import type { Candidate, DiscoveryResult } from "../skills/Discovery.js"
import { Discovery, SKILL_FILE, SourceFolders } from "../skills/Discovery.js"
import { Frontmatter, splitFrontmatter } from "../skills/Frontmatter.js"
import { Validation } from "../skills/Validation.js"
import type { Built, Parsed } from "./Build.js"
import { build, describeChange, ParseCache, sameCatalog, skippedAs } from "./Build.js"
import type { ListPage } from "./Paging.js"
import { paginate } from "./Paging.js"
import type { SearchScope } from "./Searching.js"
import { makeSearching, SEARCH_PAGE } from "./Searching.js"
import type { Skill, Snapshot } from "./Snapshot.js"
import { findSkill, makeSnapshot } from "./Snapshot.js"
import { closestIds } from "./Suggestions.js"
import type { View } from "./Views.js"
import { viewFor } from "./Views.js"

export interface CatalogChange {
  readonly version: number
  readonly added: ReadonlyArray<string>
  readonly removed: ReadonlyArray<string>
  readonly changed: ReadonlyArray<string>
}

export interface ListOptions {
  readonly query?: string | undefined
  readonly limit?: number | undefined
  readonly cursor?: string | undefined
}

/**
 * A folder changed this long before a discovery began might not have been seen by it (file
 * system timestamps lag the clock by up to a few ms; some file systems keep seconds).
 */
const FOLDER_TIME_MARGIN_MS = 2_000

/** A folder's times say nothing changed in it since `since` (ms since the epoch). */
const unchangedSince = (info: Stats | null, since: number) =>
  info !== null && info.mtimeMs < since && info.ctimeMs < since

export class Catalog extends Effect.Service<Catalog>()("skills-mcp/Catalog", {
  scoped: Effect.gen(function* () {
    const settings = yield* Settings
    const discovery = yield* Discovery
    const frontmatter = yield* Frontmatter
    const validation = yield* Validation
    const fs = yield* Fs
    const state = yield* Ref.make(makeSnapshot({ skills: [] }))
    const changes = yield* Effect.acquireRelease(PubSub.unbounded<CatalogChange>(), PubSub.shutdown)
    const lock = yield* Effect.makeSemaphore(1)
    const cache = new ParseCache()
    /** What the last discovery found. */
    let discovered: DiscoveryResult = { candidates: [], nested: [], notices: [], folders: [], edges: [] }
    /** Its candidates by skill folder (served, skipped or shadowed); made when first asked for. */
    let candidateByDir: Map<string, Candidate> | undefined
    /** When the discovery behind the current snapshot began (ms since the epoch). */
    let discoveredAt = 0
    let lastCheck = Number.NEGATIVE_INFINITY
    /** While a file watcher covers every folder: its changes not yet applied (see `useWatcher`). */
    let watched: Effect.Effect<ReadonlyArray<string>> | undefined
    /** The first scan builds the catalog; changes are announced from then on. */
    let started = false
    const files = yield* SkillFiles
    // A body for the search index: SKILL.md read as get_skill reads it (inside the skill, within
    // the size limit), split from its frontmatter without parsing that again.
    /** The calls being answered (counted at the MCP boundary): background work waits for a pause. */
    const calls = makeCalls()
    const searching = yield* makeSearching(
      Ref.get(state),
      (skill) =>
        files.readBytes(skill, SKILL_FILE).pipe(
          Effect.map(({ bytes }) => {
            const split = splitFrontmatter(Buffer.from(bytes).toString("utf8"))
            return split._tag === "Split" ? split.value.body : undefined
          }),
          Effect.orElseSucceed(() => undefined),
        ),
      calls,
    )

    /** What a candidate's SKILL.md makes of it: a skill, or a skipped one. */
    const parse = async (candidate: Candidate, now: boolean): Promise<Parsed> => {
      // Only the head is read here, but get_skill reads the whole file: one it could not load
      // is not listed either.
      const { size } = candidate.fingerprint
      if (size > settings.maxFileBytes) {
        const reason = `SKILL.md is ${size} bytes, over the ${settings.maxFileBytes}-byte limit (raise it with --max-file-bytes)`
        return { _tag: "Skipped", skipped: skippedAs(candidate, "skill-unreadable", reason) }
      }
      const read = await frontmatter.readHead(candidate.file, now)
      if (read._tag === "Left") {
        const { rule, reason, line } = read.left
        return { _tag: "Skipped", skipped: skippedAs(candidate, rule, reason, line) }
      }
      const parsed = read.right
      const skill: Skill = {
        id: candidate.id,
        name: parsed.fields.name,
        description: parsed.fields.description,
        dir: candidate.dir,
        file: candidate.file,
        root: candidate.root.path,
        rootReal: candidate.rootReal,
        rootIndex: candidate.rootIndex,
        segments: candidate.segments,
        fingerprint: candidate.fingerprint,
        frontmatter: { raw: parsed.raw, fields: parsed.fields, endLine: parsed.endLine },
        diagnostics: validation.checkSkill({ folder: candidate.id, frontmatter: parsed }),
        ...(candidate.root.git !== undefined && candidate.root.commit !== undefined
          ? { git: { source: candidate.root.git.display, commit: candidate.root.commit } }
          : {}),
      }
      return { _tag: "Skill", skill }
    }

    /** Logs the problems that were not there before (each once, not on every sweep). */
    const logNews = (before: Snapshot, now: Snapshot, overLimit: number) =>
      Effect.gen(function* () {
        const fresh = <A>(old: ReadonlyArray<A>, current: ReadonlyArray<A>, key: (item: A) => string) => {
          const seen = new Set(old.map(key))
          return current.filter((item) => !seen.has(key(item)))
        }
        for (const skip of fresh(before.skipped, now.skipped, (s) => `${s.file}\n${s.reason}`)) {
          const at = skip.line === undefined ? skip.file : `${skip.file}:${skip.line}`
          yield* Effect.logWarning(`Skipped skill '${skip.id}' (${at}): ${skip.reason}`)
        }
        for (const shadow of fresh(before.shadowed, now.shadowed, (s) => s.file)) {
          yield* Effect.logWarning(
            `Skill id '${shadow.id}' at ${shadow.file} is shadowed by ${shadow.shadowedBy} (the first root wins)`,
          )
        }
        for (const notice of fresh(before.notices, now.notices, (n) => `${n.path}\n${n.reason}`)) {
          yield* Effect.logWarning(`${notice.path}: ${notice.reason}`)
        }
        for (const left of fresh(before.unpublished, now.unpublished, (u) => `${u.file}\n${u.reason}`)) {
          yield* Effect.logWarning(
            `Skill '${left.id}' (${left.file}) is not listed over the MCP Skills extension (still served by the tools): ${left.reason}`,
          )
        }
        if (overLimit > 0) {
          yield* Effect.logWarning(
            `${overLimit} skill(s) not indexed: the catalog holds at most ${settings.maxSkills} (raise with --max-skills).`,
          )
        }
      })

    /** Makes the catalog what a discovery found; answers whether the skills changed. */
    const rebuild = (found: DiscoveryResult, now = false) =>
      Effect.gen(function* () {
        discovered = found
        candidateByDir = undefined
        const port = now ? fs.sync : fs.async
        const built: Built = yield* Effect.promise(() =>
          build(found, { maxSkills: settings.maxSkills, concurrency: port.concurrency }, cache, (candidate) =>
            parse(candidate, now),
          ),
        )
        lastCheck = yield* Clock.currentTimeMillis
        const before = yield* Ref.get(state)
        // Nothing changed (the common sweep): the snapshot, and all that hangs on it, stays.
        if (started && sameCatalog(before, built)) return false
        const change = describeChange(before, built.skills)
        const changedAny = change.added.length + change.removed.length + change.changed.length > 0
        const version = changedAny ? before.version + 1 : before.version
        const after = makeSnapshot({ ...built, version })
        yield* Ref.set(state, after)
        yield* searching.follow(after)
        yield* logNews(before, after, built.overLimit)
        if (changedAny && started) yield* PubSub.publish(changes, { version, ...change })
        started = true
        return changedAny
      })

    /** The candidate whose skill folder is `dir`, if any: only a watcher asks (see `refreshPaths`). */
    const candidateAt = (dir: string) => {
      if (candidateByDir === undefined) {
        candidateByDir = new Map()
        // One folder may be found from two roots (nested roots): the first is the one served.
        for (const candidate of discovered.candidates)
          if (!candidateByDir.has(candidate.dir)) candidateByDir.set(candidate.dir, candidate)
      }
      return candidateByDir.get(dir)
    }

    /** Discovers every root again, then rebuilds. */
    const rescan = (now = false) =>
      Effect.gen(function* () {
        const startedAt = yield* Clock.currentTimeMillis
        const found = yield* discovery.discover(now ? fs.sync : fs.async)
        discoveredAt = startedAt
        return yield* rebuild(found, now)
      }).pipe(Effect.withSpan("Catalog.rescan"))

    /**
     * After file changes: when each changed path is directly inside a skill folder, only those
     * skills' SKILL.md are looked at again (a stat each); anything else (a skill folder added,
     * removed, renamed or replaced) discovers the roots again. Answers whether the skills changed.
     */
    const refreshPaths = (paths: ReadonlyArray<string>) =>
      lock.withPermits(1)(
        Effect.gen(function* () {
          const touched = new Set<Candidate>()
          for (const changed of paths) {
            const candidate = candidateAt(path.dirname(changed))
            // A change of a skill folder itself (renamed, removed, replaced by a link) is for
            // discovery to judge.
            if (candidate === undefined || candidateAt(changed) !== undefined) return yield* rescan()
            touched.add(candidate)
          }
          if (touched.size === 0) return false
          const restat = yield* Effect.promise(() =>
            mapLimit([...touched], fs.async.concurrency, async (candidate) => ({
              candidate,
              info: await fs.async.lstat(candidate.file),
            })),
          )
          const updated = new Map<Candidate, Candidate>()
          for (const { candidate, info } of restat) {
            if (info === null || !info.isFile()) return yield* rescan()
            const fingerprint = fingerprintOf(info)
            if (!sameFingerprint(fingerprint, candidate.fingerprint))
              updated.set(candidate, { ...candidate, fingerprint })
          }
          if (updated.size === 0) return false
          return yield* rebuild({
            ...discovered,
            candidates: discovered.candidates.map((candidate) => updated.get(candidate) ?? candidate),
          })
        }),
      )

    /**
     * After watches were added for these folders: what changed in them between the read that
     * found them and their watch is found now, once calls pause (their watches see any later
     * change). A skill folder's SKILL.md is looked at (a stat, a slice of them at a time: the
     * first watches are of thousands); one changed is refreshed (`refreshPaths`). A group folder
     * changed since the last discovery began means discovering again. Answers whether the skills
     * changed.
     */
    const recheck = (dirs: ReadonlyArray<string>) =>
      Effect.gen(function* () {
        yield* whenCallsPause(calls)
        const read = new Set((yield* Ref.get(state)).folders)
        const since = discoveredAt - FOLDER_TIME_MARGIN_MS
        const groups = dirs.filter((dir) => read.has(dir))
        const times = yield* Effect.promise(() => mapLimit(groups, fs.async.concurrency, fs.async.lstat))
        if (!times.every((info) => unchangedSince(info, since))) return yield* refresh
        const changed: Array<string> = []
        yield* sliced(dirs, (dir) => {
          const candidate = candidateAt(dir)
          if (candidate === undefined) return
          const info = fs.sync.lstat(candidate.file)
          if (info === null || !info.isFile() || !sameFingerprint(fingerprintOf(info), candidate.fingerprint))
            changed.push(candidate.file)
        })
        return changed.length === 0 ? false : yield* refreshPaths(changed)
      })

    /** Discovers every root again now, whatever the interval. */
    const refresh = lock.withPermits(1)(rescan())

    /**
     * Before a read: applies the watcher's pending changes (a request right after an edit sees it,
     * debounce or not), or, with no watcher, discovers again once the refresh interval has passed.
     */
    const ensureFresh = Effect.suspend(() =>
      watched !== undefined
        ? Effect.flatMap(watched, (paths) => (paths.length === 0 ? Effect.void : refreshPaths(paths)))
        : lock.withPermits(1)(
            Effect.gen(function* () {
              const now = yield* Clock.currentTimeMillis
              if (now - lastCheck >= settings.refreshIntervalMs) yield* rescan()
            }),
          ),
    )

    /**
     * What every surface reads: of the whole catalog, or, with a view, of what one caller may
     * see of it (src/catalog/Views.ts). `personal`: read for an authenticated caller.
     */
    const readsOver = (view: View | undefined, personal: boolean) => {
      const seen = (whole: Snapshot) => (view === undefined ? whole : view.of(whole))
      const snapshot = Effect.zipRight(ensureFresh, Effect.map(Ref.get(state), seen))

      const get = Effect.fn("Catalog.get")(function* (query: string) {
        const current = yield* snapshot
        const skill = findSkill(current, query)
        if (skill !== undefined) return skill
        return yield* new SkillNotFound({ query, suggestions: closestIds(current.skills, query) })
      })

      /** One page of the skills matching a query, best first: all served, or only those published. */
      const search = Effect.fn("Catalog.search")(function* (
        query: string,
        limit: number,
        cursor: string | undefined,
        among: SearchScope = "served",
      ) {
        yield* ensureFresh
        return yield* searching.search(query, limit, cursor, among, view)
      })

      /** The first `limit` skills a query ranks, and whether more follow (kept for no cursor). */
      const searchTop = Effect.fn("Catalog.searchTop")(function* (query: string, limit: number) {
        yield* ensureFresh
        return yield* searching.top(query, limit, view)
      })

      /** Without a query: every skill in catalog order. With one: the matching skills, best first. */
      const list = Effect.fn("Catalog.list")(function* (options: ListOptions) {
        if (options.query !== undefined && options.query.trim() !== "") {
          const limit = Math.min(options.limit ?? SEARCH_PAGE, settings.pageSize)
          return yield* search(options.query, limit, options.cursor)
        }
        const limit = Math.min(options.limit ?? settings.pageSize, settings.pageSize)
        const current = yield* snapshot
        const { page, nextCursor } = yield* paginate(current.skills, limit, options.cursor)
        const result: ListPage = {
          skills: page,
          total: current.skills.length,
          ...(nextCursor ? { nextCursor } : {}),
        }
        return result
      })

      return {
        /** The current index (or the caller's view of it), after a freshness check. */
        snapshot,
        /** The same, as it is, without touching the disk. */
        peek: Effect.map(Ref.get(state), seen),
        get,
        list,
        search,
        searchTop,
        /**
         * Whether these reads answer an authenticated caller: what they show depends on who asks
         * (one who sees every skill too: a shared cache must not hand it to one who does not).
         */
        personal,
      } as const
    }
    /** Policies whose reads are kept; past it the oldest is dropped (and made again when asked). */
    const MAX_POLICIES = 64
    /** The reads for authenticated callers: by policy, and for those who see every skill. */
    const readsByPolicy = new Map<string, ReturnType<typeof readsOver>>()
    const readsOfAll = readsOver(undefined, true)
    const readsFor = (caller: Caller) => {
      if (caller.policy === undefined) return readsOfAll
      // Least recently used first out: a busy policy stays whatever others come and go.
      let reads = readsByPolicy.get(caller.policy)
      if (reads === undefined) {
        if (readsByPolicy.size >= MAX_POLICIES) readsByPolicy.delete(readsByPolicy.keys().next().value ?? "")
        reads = readsOver(viewFor(caller), true)
      } else readsByPolicy.delete(caller.policy)
      readsByPolicy.set(caller.policy, reads)
      return reads
    }

    // Over stdio nothing is served before it, and synchronous reads are fastest; over HTTP the
    // event loop stays free during it, to answer health and readiness checks.
    yield* rescan(settings.http === undefined)
    // A git source swapped its checkout, or its problems changed: discover again at once.
    const sources = yield* Effect.serviceOption(SourceFolders)
    if (sources._tag === "Some")
      yield* sources.value.changes.pipe(
        Stream.runForEach(() => refresh),
        Effect.forkScoped,
      )
    return {
      ...readsOver(undefined, false),
      /** The reads for an authenticated caller: of the skills it may see (src/catalog/Views.ts). */
      readsFor,
      refresh,
      /** Applies what the watcher saw change. */
      refreshPaths,
      recheck,
      /**
       * A file watcher now covers every folder, and `pending` gives the changes it saw that are
       * not applied yet; or, with undefined, no watcher does, and reads check the disk again.
       */
      useWatcher: (pending: Effect.Effect<ReadonlyArray<string>> | undefined) =>
        Effect.sync(() => {
          watched = pending
        }),
      /** Builds the search index in the background once calls pause, so the first query does not wait for it. */
      warmSearch: searching.warm,
      /** The calls being answered: the MCP boundary counts each (src/mcp/Run.ts). */
      calls,
      /**
       * Waits until the search index holds every current skill with its SKILL.md body (a query
       * never waits for bodies: it answers from what is indexed and says how much that is).
       */
      searchIndexed: Effect.zipRight(ensureFresh, searching.indexed),
      /** Catalog changes after the first scan. */
      changes: Stream.fromPubSub(changes),
    } as const
  }),
}) {}
