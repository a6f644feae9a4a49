/**
 * Paging: cursors for every paged answer. A plain cursor is an offset into a list; a search's
 * cursor also names the ranking it pages through (the index's generation and a hash of the query),
 * so it is never applied to another query or to a ranking that no longer exists.
 */
import * as Either from "effect/Either"
import { InvalidArgument } from "../Errors.js"
import type { Skill } from "./Snapshot.js"

/** A page of the catalog, as `Catalog.list` answers. */
export interface ListPage {
  readonly skills: ReadonlyArray<Skill>
  readonly total: number
  readonly nextCursor?: string
  /**
   * With a query: `all` when the skills listed match every word of it, `any` when none did
   * and skills matching some of the words are listed instead.
   */
  readonly match?: "all" | "any"
  /**
   * With a query: how many skills the search index held, and of how many it had read the body
   * (bodies are indexed in the background after start-up and after changes).
   */
  readonly searched?: { readonly skills: number; readonly bodies: number }
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

/** A query as rankings are cached and cursors name it: trimmed, lowercase, single spaces. */
export const queryKey = (query: string): string => query.trim().toLowerCase().replace(/\s+/g, " ")

/** FNV-1a of a query key: a cursor carries it so it is never applied to another query. */
const queryHash = (key: string): string => {
  let hash = 0x811c9dc5
  for (let index = 0; index < key.length; index++) {
    hash ^= key.charCodeAt(index)
    hash = Math.imul(hash, 0x01000193)
  }
  return (hash >>> 0).toString(36)
}

/**
 * Where a page of ranked results starts: the ranking (a name the index gave its generation, and
 * the query) and the offset.
 */
interface RankedCursor {
  readonly ranking: string
  readonly offset: number
  readonly query: string
}

export const encodeRankedCursor = (cursor: RankedCursor): string =>
  Buffer.from(`r:${cursor.ranking}:${cursor.offset}:${queryHash(cursor.query)}`).toString("base64url")

export const decodeRankedCursor = (
  cursor: string,
  query: string,
): Either.Either<{ readonly ranking: string; readonly offset: number }, InvalidArgument> => {
  const invalid = (reason: string) => Either.left(new InvalidArgument({ argument: "cursor", reason }))
  const text = Buffer.from(cursor, "base64url").toString("utf8")
  const parts = /^r:([\w-]{1,32}):(\d{1,15}):([0-9a-z]+)$/.exec(text)
  if (parts === null) return invalid("not a cursor of a list_skills search; repeat the call without it")
  if (parts[3] !== queryHash(query)) {
    return invalid("this cursor belongs to another query; repeat the call with its query, or without cursor")
  }
  return Either.right({ ranking: parts[1] ?? "", offset: Number(parts[2]) })
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
