/**
 * Searching: `list_skills {query}` (and `skills/list {query}`, completion) over the catalog.
 * The search index (src/catalog/Search.ts) is built in the background (`warm`, or the first
 * query): the metadata of every skill first, in slices that leave the event loop free, then the
 * SKILL.md bodies, read a few at a time. Each slice, and each few bodies, waits until calls pause
 * (a sync or a burst of calls is answered first: src/platform/EventLoop.ts), except while a query
 * waits for the index to be built. It then follows every snapshot:
 * only skills that changed are indexed again, their bodies read again. A query answers from what
 * is indexed so far and says how much that is. A ranking is kept for paging, so later pages of a
 * query keep the order of its first page; an exact id or name comes first.
 */
import { createHmac, randomBytes } from "node:crypto"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import { InvalidArgument } from "../Errors.js"
import type { Calls } from "../platform/EventLoop.js"
import { sliced, whenCallsPause } from "../platform/EventLoop.js"
import type { ListPage } from "./Paging.js"
import { decodeRankedCursor, encodeRankedCursor, queryKey } from "./Paging.js"
import type { Ranking } from "./Ranking.js"
import type { SearchIndex } from "./Search.js"
import { makeSearchIndex } from "./Search.js"
import type { Skill, Snapshot } from "./Snapshot.js"
import { findSkill, perSnapshot } from "./Snapshot.js"
import type { View } from "./Views.js"

/** Rankings kept for paging (each holds a reference, a score and a position per skill it ranks). */
const MAX_RANKINGS = 16
/**
 * A search's page unless the caller asks for more (up to the page size): the best few are what
 * an agent reads, and a query's words reach far down a large catalog.
 */
export const SEARCH_PAGE = 20
/** Bodies read at once while indexing them. */
const BODY_READS = 8

/** Which skills a search ranks: all the catalog serves, or those the Skills extension lists. */
export type SearchScope = "served" | "published"

/** A ranking kept for paging: its skills, the snapshot version they are of, what was searched. */
interface KeptRanking {
  readonly ranking: Ranking<Skill>
  readonly version: number
  readonly searched: { readonly skills: number; readonly bodies: number }
}

export const makeSearching = (
  current: Effect.Effect<Snapshot>,
  /** A skill's SKILL.md body; undefined when it cannot be read (it is then searched without). */
  readBody: (skill: Skill) => Effect.Effect<string | undefined>,
  /** The calls being answered: the index is built, and bodies read, once they pause. */
  calls: Calls,
) =>
  Effect.gen(function* () {
    const scope = yield* Effect.scope
    const ready = yield* Deferred.make<SearchIndex<Skill>>()
    let index: SearchIndex<Skill> | undefined
    let indexedVersion = -1
    let started = false
    /** A query waits for the index to be built: the build no longer waits for pauses. */
    let awaited = false
    /** Bumped whenever what the index holds changes: a ranking is kept for one generation. */
    let generation = 0
    /** Skills whose body is to be indexed, and, while a fiber indexes them, when it is done. */
    let bodiesDue: Array<Skill> = []
    let indexingBodies: Deferred.Deferred<void> | undefined
    /**
     * The names of generations in cursors: a keyed hash (with a secret of this process), so that a
     * cursor tells nothing of how many skills were indexed (a caller's view must not count others).
     */
    const secret = randomBytes(16)
    const named = new Map<string, number>()
    /** The generation named last, and its name: pages of one generation share it. */
    let lastNamed = { at: -1, name: "" }
    const nameOf = (at: number) => {
      if (lastNamed.at === at) return lastNamed.name
      const name = createHmac("sha256", secret).update(String(at)).digest("base64url").slice(0, 16)
      if (!named.has(name)) {
        if (named.size >= MAX_RANKINGS * 4) named.delete(named.keys().next().value ?? "")
        named.set(name, at)
      }
      lastNamed = { at, name }
      return name
    }
    /** Rankings by generation, scope, view and query. */
    const rankings = new Map<string, KeptRanking>()

    /** Indexes the bodies due, a few reads at a time, until none is left. */
    const indexBodies: Effect.Effect<void> = Effect.gen(function* () {
      while (index !== undefined && bodiesDue.length > 0) {
        yield* whenCallsPause(calls)
        const built = index
        const batch = bodiesDue.splice(0, BODY_READS * 4)
        yield* Effect.forEach(
          batch,
          (skill) =>
            // A skill edited or removed since it was queued is skipped: its successor is queued.
            built.needsBody(skill)
              ? Effect.map(readBody(skill), (body) => {
                  if (built.addBody(skill, body ?? "")) generation++
                })
              : Effect.void,
          { concurrency: BODY_READS, discard: true },
        )
      }
    }).pipe(Effect.withSpan("Catalog.indexBodies"))

    const dueBodies = (skills: ReadonlyArray<Skill>) =>
      Effect.gen(function* () {
        if (skills.length > 0) bodiesDue = bodiesDue.concat(skills)
        if (indexingBodies !== undefined || bodiesDue.length === 0) return
        const done = yield* Deferred.make<void>()
        indexingBodies = done
        yield* Effect.forkIn(
          Effect.ensuring(
            indexBodies,
            Effect.suspend(() => {
              indexingBodies = undefined
              return Deferred.succeed(done, undefined)
            }),
          ),
          scope,
        )
      })

    /** Brings the index (once built) in step with a snapshot: only what changed is re-indexed. */
    const follow = (snapshot: Snapshot) =>
      Effect.suspend(() => {
        if (index === undefined || indexedVersion === snapshot.version) return Effect.void
        const added = index.sync(snapshot.skills, snapshot.byId)
        indexedVersion = snapshot.version
        generation++
        return dueBodies(added)
      })

    /** Each slice of the build waits for a pause in calls, unless a query waits for the index. */
    const betweenSlices = whenCallsPause(calls, () => awaited)
    const buildIndex = Effect.gen(function* () {
      const built = makeSearchIndex<Skill>()
      const skills = (yield* current).skills
      yield* sliced(skills, built.addNew, betweenSlices)
      index = built
      yield* follow(yield* current)
      yield* Deferred.succeed(ready, built)
      yield* dueBodies(skills)
    }).pipe(Effect.withSpan("Catalog.buildSearch"))

    /** Starts building the index, unless it is built or being built. */
    const start = Effect.suspend(() => {
      if (started) return Effect.void
      started = true
      return Effect.asVoid(Effect.forkIn(buildIndex, scope))
    })

    /** Starts building the index in the background once calls pause (a query starts it at once). */
    const warm = Effect.asVoid(Effect.forkIn(Effect.zipRight(whenCallsPause(calls), start), scope))

    /** Whether a skill is one of a view's: one function per view of a snapshot (Search keeps its mask). */
    const keepOf = perSnapshot((seen) => (skill: Skill) => seen.byId.get(skill.id) === skill)

    /**
     * The skills a query ranks, best first, in `seen`: a snapshot the index is in step with, or a
     * caller's view of it (src/catalog/Views.ts), which holds the very same skill objects.
     */
    const rankFor = (
      seen: Snapshot,
      built: SearchIndex<Skill>,
      key: string,
      among: SearchScope,
      viewed: boolean,
    ) =>
      built.rank(key, {
        // In a view, ranked as an index of only its skills would rank them.
        within: viewed ? keepOf(seen) : undefined,
        // An exact id or name comes first.
        first: findSkill(seen, key),
        shown: among === "published" ? (skill) => seen.addresses.get(skill)?.published === true : undefined,
      })

    /** What a view's rankings searched, as of a generation (counted once, not per query). */
    const searchedByView = new WeakMap<
      Snapshot,
      { readonly generation: number; readonly searched: { readonly skills: number; readonly bodies: number } }
    >()

    /**
     * What a ranking searched: the skills the index holds and how many with their body; in a
     * caller's view, only its skills (every one is indexed once the index is in step).
     */
    const searchedIn = (seen: Snapshot, built: SearchIndex<Skill>, viewed: boolean) => {
      if (!viewed) return built.size()
      const known = searchedByView.get(seen)
      if (known !== undefined && known.generation === generation) return known.searched
      let bodies = 0
      for (const skill of seen.skills) if (!built.needsBody(skill)) bodies++
      const searched = { skills: seen.skills.length, bodies }
      searchedByView.set(seen, { generation, searched })
      return searched
    }

    /** The index, built and in step with the current snapshot (which it answers). */
    const inStep = Effect.gen(function* () {
      yield* start
      if (index === undefined) awaited = true
      const built = yield* Deferred.await(ready)
      const snapshot = yield* current
      yield* follow(snapshot)
      return { built, snapshot }
    })

    /** The ranking of a query, kept for its cursor's pages; fails when that ranking is gone. */
    const rankingOf = (
      built: SearchIndex<Skill>,
      snapshot: Snapshot,
      key: string,
      among: SearchScope,
      view: View | undefined,
      cursor: string | undefined,
    ) =>
      Effect.gen(function* () {
        const from = cursor === undefined ? undefined : yield* decodeRankedCursor(cursor, key)
        const kept = (at: number) => `${at}\n${among}\n${view?.policy ?? ""}\n${key}`
        const made = from === undefined ? generation : (named.get(from.ranking) ?? -1)
        let ranking = rankings.get(kept(made))
        if (ranking === undefined) {
          if (made !== generation) {
            return yield* new InvalidArgument({
              argument: "cursor",
              reason: "the skills changed since this search; repeat the call without cursor",
            })
          }
          const seen = view === undefined ? snapshot : view.of(snapshot)
          ranking = {
            ranking: rankFor(seen, built, key, among, view !== undefined),
            version: seen.version,
            searched: searchedIn(seen, built, view !== undefined),
          }
          if (rankings.size >= MAX_RANKINGS) rankings.delete(rankings.keys().next().value ?? "")
          rankings.set(kept(made), ranking)
        }
        return { kept: ranking, generation: made, offset: from?.offset ?? 0 }
      })

    /** One page of the skills matching `query`, best first (among those `view` holds, if given). */
    const search = (
      query: string,
      limit: number,
      cursor: string | undefined,
      among: SearchScope = "served",
      view?: View,
    ) =>
      Effect.gen(function* () {
        const key = queryKey(query)
        const { built, snapshot: whole } = yield* inStep
        const snapshot = view === undefined ? whole : view.of(whole)
        const { kept, generation: made, offset } = yield* rankingOf(built, whole, key, among, view, cursor)
        const { ranking } = kept
        const end = offset + limit
        // A page of an earlier snapshot's ranking shows the skills as they are now; ones that
        // left are dropped.
        const page =
          kept.version === snapshot.version
            ? ranking.slice(offset, end)
            : ranking.slice(offset, end).flatMap((skill) => {
                const now = snapshot.byId.get(skill.id)
                return now === undefined ? [] : [now]
              })
        const result: ListPage = {
          skills: page,
          total: ranking.total,
          match: ranking.match,
          searched: kept.searched,
          ...(end < ranking.total
            ? { nextCursor: encodeRankedCursor({ ranking: nameOf(made), offset: end, query: key }) }
            : {}),
        }
        return result
      })

    /**
     * The first `limit` skills a query ranks, and whether more follow, without keeping the
     * ranking for paging (completion asks at every keystroke).
     */
    const top = (query: string, limit: number, view?: View) =>
      Effect.map(inStep, ({ built, snapshot }) => {
        const seen = view === undefined ? snapshot : view.of(snapshot)
        const ranking = rankFor(seen, built, queryKey(query), "served", view !== undefined)
        return { skills: ranking.slice(0, limit), more: ranking.total > limit }
      })

    /** Waits until the index holds every skill of the current snapshot with its body. */
    const indexed = Effect.gen(function* () {
      yield* inStep
      while (indexingBodies !== undefined) yield* Deferred.await(indexingBodies)
    })

    return { warm, follow, search, top, indexed } as const
  })
