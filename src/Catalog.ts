/**
 * Catalog: the in-memory index of skills (metadata, paths, fingerprints and diagnostics;
 * never bodies). Every read first makes sure the index is fresh: at most once per
 * `refreshIntervalMs` it re-runs discovery (a stat per skill) and re-parses only the
 * SKILL.md files whose fingerprint changed. Changes are published on `changes`.
 */
import { Clock, Effect, Either, PubSub, Ref, Stream } from "effect"
import type { Candidate, DiscoveryNotice } from "./Discovery.js"
import { Discovery } from "./Discovery.js"
import { InvalidArgument, SkillNotFound } from "./Errors.js"
import type { ParsedFrontmatter } from "./Frontmatter.js"
import { Frontmatter } from "./Frontmatter.js"
import type { Fingerprint } from "./Paths.js"
import { sameFingerprint } from "./Paths.js"
import { Settings } from "./Settings.js"
import { pathKey, skillMdUri, skillPathOf } from "./Uris.js"
import type { Diagnostic } from "./Validation.js"
import { checkSkill, nameProblems } from "./Validation.js"

export interface Skill {
  /** The folder name; the key in tool arguments. */
  readonly id: string
  readonly name: string
  readonly description: string
  /** Absolute skill folder. */
  readonly dir: string
  /** Absolute SKILL.md path. */
  readonly file: string
  readonly root: string
  readonly rootIndex: number
  /** Folder path below its collection, for URIs. */
  readonly segments: ReadonlyArray<string>
  readonly fingerprint: Fingerprint
  readonly frontmatter: ParsedFrontmatter
  readonly diagnostics: ReadonlyArray<Diagnostic>
}

/** A SKILL.md the server cannot serve, with the reason. */
export interface SkippedSkill {
  readonly id: string
  readonly file: string
  readonly root: string
  readonly reason: string
  readonly line?: number
}

/** A served skill left out of the Skills extension's listing (still reachable through the tools). */
export interface UnpublishedSkill {
  readonly id: string
  readonly file: string
  readonly reason: string
}

/** A skill hidden by an earlier one with the same id. */
export interface ShadowedSkill {
  readonly id: string
  readonly file: string
  readonly shadowedBy: string
}

export interface Snapshot {
  /** Served skills, in priority order (root order, then path order). */
  readonly skills: ReadonlyArray<Skill>
  readonly skipped: ReadonlyArray<SkippedSkill>
  readonly shadowed: ReadonlyArray<ShadowedSkill>
  readonly notices: ReadonlyArray<DiscoveryNotice>
  /** Folders to watch for changes: roots, groups and skill folders. */
  readonly folders: ReadonlyArray<string>
  /** Increases whenever the served set or any served skill's metadata changes. */
  readonly version: number
  /** Skills served over the Skills extension (a valid name, a URI of their own), in order. */
  readonly published: ReadonlyArray<Skill>
  readonly unpublished: ReadonlyArray<UnpublishedSkill>
  /** Published skills by `<skill-path>` (decoded segments joined with `/`). */
  readonly bySkillPath: ReadonlyMap<string, Skill>
  readonly byId: ReadonlyMap<string, Skill>
  readonly byName: ReadonlyMap<string, Skill>
  readonly byIdLower: ReadonlyMap<string, Skill>
  readonly byNameLower: ReadonlyMap<string, Skill>
}

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

export interface ListPage {
  readonly skills: ReadonlyArray<Skill>
  readonly total: number
  readonly nextCursor?: string
}

type Parsed =
  | { readonly _tag: "Skill"; readonly skill: Skill }
  | { readonly _tag: "Skipped"; readonly skipped: SkippedSkill }

interface Entry {
  readonly fingerprint: Fingerprint
  readonly parsed: Parsed
}

const firstBy = <K>(skills: ReadonlyArray<Skill>, key: (skill: Skill) => K): Map<K, Skill> => {
  const map = new Map<K, Skill>()
  for (const skill of skills) {
    const k = key(skill)
    if (!map.has(k)) map.set(k, skill)
  }
  return map
}

/** Which skills the Skills extension lists: valid names, one skill per URI (the first wins). */
const publish = (skills: ReadonlyArray<Skill>) => {
  const published: Array<Skill> = []
  const unpublished: Array<UnpublishedSkill> = []
  const bySkillPath = new Map<string, Skill>()
  for (const skill of skills) {
    const problems = nameProblems(skill.name)
    if (problems.length > 0) {
      unpublished.push({
        id: skill.id,
        file: skill.file,
        reason: `its name '${skill.name}' breaks the Agent Skills naming rules (${problems.join("; ")})`,
      })
      continue
    }
    const key = pathKey(skillPathOf(skill))
    const owner = bySkillPath.get(key)
    if (owner !== undefined) {
      unpublished.push({
        id: skill.id,
        file: skill.file,
        reason: `${skillMdUri(skillPathOf(skill))} is already served by ${owner.file} (the first root wins)`,
      })
      continue
    }
    bySkillPath.set(key, skill)
    published.push(skill)
  }
  return { published, unpublished, bySkillPath }
}

export const makeSnapshot = (input: {
  readonly skills: ReadonlyArray<Skill>
  readonly skipped?: ReadonlyArray<SkippedSkill>
  readonly shadowed?: ReadonlyArray<ShadowedSkill>
  readonly notices?: ReadonlyArray<DiscoveryNotice>
  readonly folders?: ReadonlyArray<string>
  readonly version?: number
}): Snapshot => ({
  skills: input.skills,
  skipped: input.skipped ?? [],
  shadowed: input.shadowed ?? [],
  notices: input.notices ?? [],
  folders: input.folders ?? [],
  version: input.version ?? 0,
  ...publish(input.skills),
  byId: firstBy(input.skills, (skill) => skill.id),
  byName: firstBy(input.skills, (skill) => skill.name),
  byIdLower: firstBy(input.skills, (skill) => skill.id.toLowerCase()),
  byNameLower: firstBy(input.skills, (skill) => skill.name.toLowerCase()),
})

/** Lookup by id or name: exact id, exact name, then the same ignoring case. */
export const findSkill = (snapshot: Snapshot, query: string): Skill | undefined => {
  const lower = query.toLowerCase()
  return (
    snapshot.byId.get(query) ??
    snapshot.byName.get(query) ??
    snapshot.byIdLower.get(lower) ??
    snapshot.byNameLower.get(lower)
  )
}

/** Levenshtein distance, two rows. */
export const editDistance = (a: string, b: string): number => {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index)
  for (let i = 1; i <= a.length; i++) {
    const current = [i]
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + cost))
    }
    previous = current
  }
  return previous[b.length] ?? 0
}

/** Up to `count` ids closest to `query` (ignoring case), nearest first; unrelated ids are left out. */
export const closestIds = (skills: ReadonlyArray<Skill>, query: string, count = 3): Array<string> => {
  const needle = query.toLowerCase()
  return skills
    .map((skill) => {
      const id = skill.id.toLowerCase()
      const distance = id.includes(needle) || needle.includes(id) ? 0.5 : editDistance(needle, id)
      return { id: skill.id, distance, bound: Math.max(needle.length, id.length) }
    })
    .filter((entry) => entry.distance < entry.bound * 0.7)
    .sort((a, b) => a.distance - b.distance || (a.id < b.id ? -1 : 1))
    .slice(0, count)
    .map((entry) => entry.id)
}

/** Case-insensitive filter: every word of the query appears in the id, name or description. */
export const matchesQuery = (skill: Skill, query: string): boolean => {
  const words = query
    .toLowerCase()
    .split(/\s+/)
    .filter((word) => word.length > 0)
  if (words.length === 0) return true
  const haystack = `${skill.id}\n${skill.name}\n${skill.description}`.toLowerCase()
  return words.every((word) => haystack.includes(word))
}

const CURSOR_PREFIX = "o:"
export const encodeCursor = (offset: number): string =>
  Buffer.from(`${CURSOR_PREFIX}${offset}`).toString("base64url")
export const decodeCursor = (cursor: string): Either.Either<number, InvalidArgument> => {
  const text = Buffer.from(cursor, "base64url").toString("utf8")
  const offset = text.startsWith(CURSOR_PREFIX) ? Number(text.slice(CURSOR_PREFIX.length)) : Number.NaN
  return Number.isSafeInteger(offset) && offset >= 0
    ? Either.right(offset)
    : Either.left(
        new InvalidArgument({
          argument: "cursor",
          reason: "not a cursor returned by this server; repeat the call without it",
        }),
      )
}

/** One page of `items` from `cursor`. */
export const paginate = <A>(
  items: ReadonlyArray<A>,
  limit: number,
  cursor: string | undefined,
): Either.Either<{ readonly page: ReadonlyArray<A>; readonly nextCursor?: string }, InvalidArgument> =>
  Either.map(cursor === undefined ? Either.right(0) : decodeCursor(cursor), (offset) => {
    const end = offset + limit
    const page = items.slice(offset, end)
    return end < items.length ? { page, nextCursor: encodeCursor(end) } : { page }
  })

const describeChange = (before: Snapshot, after: ReadonlyArray<Skill>) => {
  const added: Array<string> = []
  const changed: Array<string> = []
  const seen = new Set<string>()
  for (const skill of after) {
    seen.add(skill.id)
    const old = before.byId.get(skill.id)
    if (old === undefined) added.push(skill.id)
    else if (old.file !== skill.file || !sameFingerprint(old.fingerprint, skill.fingerprint))
      changed.push(skill.id)
  }
  const removed = before.skills.filter((skill) => !seen.has(skill.id)).map((skill) => skill.id)
  return { added, removed, changed }
}

export class Catalog extends Effect.Service<Catalog>()("skills-mcp/Catalog", {
  scoped: Effect.gen(function* () {
    const settings = yield* Settings
    const discovery = yield* Discovery
    const frontmatter = yield* Frontmatter
    const entries = new Map<string, Entry>()
    const state = yield* Ref.make(makeSnapshot({ skills: [] }))
    const changes = yield* Effect.acquireRelease(PubSub.unbounded<CatalogChange>(), PubSub.shutdown)
    const lock = yield* Effect.makeSemaphore(1)
    let lastCheck = Number.NEGATIVE_INFINITY
    /** The first scan builds the catalog; changes are published from then on. */
    let published = false

    const parseCandidate = (candidate: Candidate): Effect.Effect<Parsed> =>
      frontmatter.read(candidate.file).pipe(
        Effect.match({
          onFailure: (error): Parsed => ({
            _tag: "Skipped",
            skipped: {
              id: candidate.id,
              file: candidate.file,
              root: candidate.root.path,
              reason: error.reason,
              ...(error.line === undefined ? {} : { line: error.line }),
            },
          }),
          onSuccess: (parsed): Parsed => ({
            _tag: "Skill",
            skill: {
              id: candidate.id,
              name: parsed.fields.name,
              description: parsed.fields.description,
              dir: candidate.dir,
              file: candidate.file,
              root: candidate.root.path,
              rootIndex: candidate.rootIndex,
              segments: candidate.segments,
              fingerprint: candidate.fingerprint,
              frontmatter: { raw: parsed.raw, fields: parsed.fields, endLine: parsed.endLine },
              diagnostics: checkSkill({ folder: candidate.id, frontmatter: parsed }),
            },
          }),
        }),
      )

    /** Re-discovers, re-parses what changed, swaps the snapshot and publishes the change. */
    const rescan = Effect.gen(function* () {
      const { candidates, notices, folders } = yield* discovery.discover
      const firstById = new Map<string, Candidate>()
      const shadowed: Array<ShadowedSkill> = []
      const kept: Array<Candidate> = []
      let overLimit = 0
      for (const candidate of candidates) {
        const winner = firstById.get(candidate.id)
        if (winner !== undefined) {
          shadowed.push({ id: candidate.id, file: candidate.file, shadowedBy: winner.file })
        } else if (kept.length >= settings.maxSkills) {
          overLimit++
        } else {
          firstById.set(candidate.id, candidate)
          kept.push(candidate)
        }
      }
      const parsed = yield* Effect.forEach(
        kept,
        (candidate) => {
          const cached = entries.get(candidate.file)
          return cached !== undefined && sameFingerprint(cached.fingerprint, candidate.fingerprint)
            ? Effect.succeed(cached.parsed)
            : Effect.tap(parseCandidate(candidate), (result) =>
                Effect.sync(() =>
                  entries.set(candidate.file, { fingerprint: candidate.fingerprint, parsed: result }),
                ),
              )
        },
        { concurrency: 32 },
      )
      const liveFiles = new Set(kept.map((candidate) => candidate.file))
      for (const file of entries.keys()) if (!liveFiles.has(file)) entries.delete(file)

      const skills: Array<Skill> = []
      const skipped: Array<SkippedSkill> = []
      for (const result of parsed) {
        if (result._tag === "Skill") skills.push(result.skill)
        else skipped.push(result.skipped)
      }
      const before = yield* Ref.get(state)
      const change = describeChange(before, skills)
      const changedAny = change.added.length + change.removed.length + change.changed.length > 0
      const version = changedAny ? before.version + 1 : before.version
      const after = makeSnapshot({ skills, skipped, shadowed, notices, folders, version })
      yield* Ref.set(state, after)
      yield* logNews(before, after, overLimit)
      if (changedAny && published) yield* PubSub.publish(changes, { version, ...change })
      published = true
      return changedAny
    }).pipe(Effect.withSpan("Catalog.rescan"))

    /** Logs the problems that were not there before (each is logged once, not on every sweep). */
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
            `Skill '${left.id}' is not listed over the MCP Skills extension (still served by the tools): ${left.reason}`,
          )
        }
        if (overLimit > 0) {
          yield* Effect.logWarning(
            `${overLimit} skill(s) not indexed: the catalog holds at most ${settings.maxSkills} (raise with --max-skills).`,
          )
        }
      })

    /** Rescans unless the last check is more recent than the refresh interval. */
    const ensureFresh = lock.withPermits(1)(
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        if (now - lastCheck < settings.refreshIntervalMs) return
        yield* rescan
        lastCheck = yield* Clock.currentTimeMillis
      }),
    )

    /** Rescans now, whatever the interval (used by the watcher and by tests). */
    const refresh = lock.withPermits(1)(
      Effect.tap(rescan, () =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          Effect.sync(() => {
            lastCheck = now
          }),
        ),
      ),
    )

    const snapshot = Effect.zipRight(ensureFresh, Ref.get(state))

    const get = Effect.fn("Catalog.get")(function* (query: string) {
      const current = yield* snapshot
      const skill = findSkill(current, query)
      if (skill !== undefined) return skill
      return yield* new SkillNotFound({ query, suggestions: closestIds(current.skills, query) })
    })

    const list = Effect.fn("Catalog.list")(function* (options: ListOptions) {
      const current = yield* snapshot
      const query = options.query?.trim() ?? ""
      const matching =
        query === "" ? current.skills : current.skills.filter((skill) => matchesQuery(skill, query))
      const limit = Math.min(options.limit ?? settings.pageSize, settings.pageSize)
      const { page, nextCursor } = yield* paginate(matching, limit, options.cursor)
      const result: ListPage = { skills: page, total: matching.length, ...(nextCursor ? { nextCursor } : {}) }
      return result
    })

    yield* refresh
    return {
      /** The current index, after a (throttled) freshness check. */
      snapshot,
      get,
      list,
      refresh,
      /** Catalog changes after start-up. */
      changes: Stream.fromPubSub(changes),
      /** The index as it is, without touching the disk. */
      peek: Ref.get(state),
    } as const
  }),
}) {}
