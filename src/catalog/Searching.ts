/**
 * Searching: `list_skills {query}` over the catalog. The search index (src/catalog/Search.ts) is
 * built once in the background, in slices that leave the event loop free (`warm`, or the first
 * query), then follows every snapshot incrementally. A ranking is kept for paging, so later
 * pages of a query keep the order of its first page; an exact id or name comes first.
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import { InvalidArgument } from "../Errors.js"
import { sliced } from "../platform/EventLoop.js"
import type { ListPage } from "./Paging.js"
import { decodeRankedCursor, encodeRankedCursor, queryKey } from "./Paging.js"
import type { Ranking, SearchIndex } from "./Search.js"
import { makeSearchIndex } from "./Search.js"
import type { Skill, Snapshot } from "./Snapshot.js"
import { findSkill } from "./Snapshot.js"

/** Rankings kept for paging (each at most one reference per skill). */
const MAX_RANKINGS = 16

export const makeSearching = (current: Effect.Effect<Snapshot>) =>
  Effect.gen(function* () {
    const scope = yield* Effect.scope
    const ready = yield* Deferred.make<SearchIndex<Skill>>()
    let index: SearchIndex<Skill> | undefined
    let indexedVersion = -1
    let started = false
    /** Rankings by catalog version and query. */
    const rankings = new Map<string, Ranking<Skill>>()

    /** Brings the index (once built) in step with a snapshot: only what changed is re-indexed. */
    const follow = (snapshot: Snapshot) => {
      if (index === undefined || indexedVersion === snapshot.version) return
      index.sync(snapshot.skills, snapshot.byId)
      indexedVersion = snapshot.version
    }

    const buildIndex = Effect.gen(function* () {
      const built = makeSearchIndex<Skill>()
      yield* sliced((yield* current).skills, built.addNew)
      index = built
      follow(yield* current)
      yield* Deferred.succeed(ready, built)
    }).pipe(Effect.withSpan("Catalog.buildSearch"))

    /** Starts building the index in the background, unless it is built or being built. */
    const warm = Effect.suspend(() => {
      if (started) return Effect.void
      started = true
      return Effect.asVoid(Effect.forkIn(buildIndex, scope))
    })

    /** The skills a query ranks, best first, in a snapshot the index is in step with. */
    const rankFor = (snapshot: Snapshot, built: SearchIndex<Skill>, key: string): Ranking<Skill> => {
      const ranking = built.rank(key)
      const exact = findSkill(snapshot, key)
      if (exact === undefined) return ranking
      return {
        skills: [exact, ...ranking.skills.filter((skill) => skill.id !== exact.id)],
        match: ranking.match,
      }
    }

    /** One page of the skills matching `query`, best first. */
    const search = (query: string, limit: number, cursor: string | undefined) =>
      Effect.gen(function* () {
        const key = queryKey(query)
        const from = cursor === undefined ? undefined : yield* decodeRankedCursor(cursor, key)
        yield* warm
        const built = yield* Deferred.await(ready)
        const snapshot = yield* current
        follow(snapshot)
        const version = from?.version ?? snapshot.version
        let ranked = rankings.get(`${version}\n${key}`)
        if (ranked === undefined) {
          if (version !== snapshot.version) {
            return yield* new InvalidArgument({
              argument: "cursor",
              reason: "the skills changed since this search; repeat the call without cursor",
            })
          }
          ranked = rankFor(snapshot, built, key)
          if (rankings.size >= MAX_RANKINGS) rankings.delete(rankings.keys().next().value ?? "")
          rankings.set(`${version}\n${key}`, ranked)
        }
        const offset = from?.offset ?? 0
        const end = offset + limit
        // A page of an earlier ranking shows the skills as they are now; ones that left are dropped.
        const page =
          version === snapshot.version
            ? ranked.skills.slice(offset, end)
            : ranked.skills.slice(offset, end).flatMap((skill) => {
                const now = snapshot.byId.get(skill.id)
                return now === undefined ? [] : [now]
              })
        const result: ListPage = {
          skills: page,
          total: ranked.skills.length,
          match: ranked.match,
          ...(end < ranked.skills.length
            ? { nextCursor: encodeRankedCursor({ version, offset: end, query: key }) }
            : {}),
        }
        return result
      })

    return { warm, follow, search } as const
  })
