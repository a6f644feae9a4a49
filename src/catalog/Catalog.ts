/**
 * Catalog: the in-memory index of skills (metadata, paths, fingerprints and diagnostics;
 * never bodies). Every read first makes sure the index is fresh: at most once per
 * `refreshIntervalMs` it re-runs discovery (a stat per skill) and re-parses only the
 * SKILL.md files whose fingerprint changed. Changes are published on `changes`.
 *
 * `list` with a query ranks by relevance (src/catalog/Search.ts); the search index is built once,
 * in slices that leave the event loop free (`warmSearch`, or the first query), then follows
 * every change incrementally.
 */
import type { Stats } from "node:fs"
import * as path from "node:path"
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as PubSub from "effect/PubSub"
import * as Ref from "effect/Ref"
import * as Stream from "effect/Stream"
import type { FrontmatterRule } from "../Errors.js"
import { InvalidArgument, SkillNotFound } from "../Errors.js"
import { nextIoTurn, sliced } from "../platform/EventLoop.js"
import type { FsPort, SyncFsPort } from "../platform/Fs.js"
import { asyncFs, errorCode, lstatNow, mapLimit, opensRefuseLinks, syncFs } from "../platform/Fs.js"
import type { Fingerprint } from "../platform/Paths.js"
import { fingerprintOf, sameFingerprint } from "../platform/Paths.js"
import { Settings } from "../Settings.js"
import type { Candidate, DiscoveryNotice, DiscoveryResult, SkillFileLook } from "../skills/Discovery.js"
import { compareSegments, Discovery, nestedReason, SKILL_FILE } from "../skills/Discovery.js"
import type { FrontmatterRead, ParsedFrontmatter } from "../skills/Frontmatter.js"
import { MAX_FRONTMATTER_BYTES, readFrontmatter, readFrontmatterFromNow } from "../skills/Frontmatter.js"
import type { Diagnostic } from "../skills/Validation.js"
import { checkSkill } from "../skills/Validation.js"
import type { Address, Claim, Publication, UnpublishedSkill } from "./Publication.js"
import { publish } from "./Publication.js"
import type { Ranking, SearchIndex } from "./Search.js"
import { makeSearchIndex } from "./Search.js"

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
  /** The root's real path, pinned at start: the skill's files must stay below it. */
  readonly rootReal: string
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
  /** The `validate` rule the SKILL.md fails. */
  readonly rule: FrontmatterRule
  readonly reason: string
  readonly line?: number
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
  /** Folders to watch for changes: roots, groups (those at the depth limit too), skill folders. */
  readonly folders: ReadonlyArray<string>
  /** Increases whenever the served set or any served skill's metadata changes. */
  readonly version: number
  /** Skills served over the Skills extension, in order (src/catalog/Publication.ts decides). */
  readonly published: ReadonlyArray<Skill>
  readonly unpublished: ReadonlyArray<UnpublishedSkill>
  /** Who owns which `skill://` URI space, by `uriKey` of its base; no key is a prefix of another. */
  readonly claims: ReadonlyMap<string, Claim>
  /** Each skill's address in URI space; none for a skill reached through the tools only. */
  readonly addresses: ReadonlyMap<Skill, Address>
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
  /**
   * With a query: `all` when the skills listed match every word of it, `any` when none did
   * and skills matching some of the words are listed instead.
   */
  readonly match?: "all" | "any"
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

/**
 * `make` for a snapshot, made once per snapshot (snapshots never change, a change makes a new
 * one): for what requests page or filter through, which would otherwise be made for each.
 */
export const perSnapshot = <A>(make: (snapshot: Snapshot) => A): ((snapshot: Snapshot) => A) => {
  const made = new WeakMap<Snapshot, { readonly value: A }>()
  return (snapshot) => {
    const known = made.get(snapshot)
    if (known !== undefined) return known.value
    const value = make(snapshot)
    made.set(snapshot, { value })
    return value
  }
}

/** Lookups by name and ignoring case (`findSkill`'s): the first skill in catalog order wins a key. */
interface NameMaps {
  readonly byName: Map<string, Skill>
  readonly byIdLower: Map<string, Skill>
  readonly byNameLower: Map<string, Skill>
}

const nameMaps = (): NameMaps => ({ byName: new Map(), byIdLower: new Map(), byNameLower: new Map() })

/**
 * A snapshot's lookups by name and case: maps made skill by skill, and the keys that edits since
 * they were made gave to other objects (`over`, looked at first). After an edit that replaces
 * skills in place, the next snapshot shares the complete maps of the one before (neither
 * changes them again) and only copies `over`: at 10,000 skills the first query after such an
 * edit took 13 to 28 ms when it made them again (lower-casing every id and name), and 4.3 to
 * 8.5 ms with them carried over.
 */
interface NameLookups {
  /** The snapshot's skills. */
  readonly skills: ReadonlyArray<Skill>
  readonly maps: NameMaps
  /** Skills the maps hold so far, in catalog order. */
  made: number
  readonly over: NameMaps
}

const nameLookupsOf = new WeakMap<Snapshot, NameLookups>()

/**
 * Keys given to other objects, past which a snapshot makes its own maps again (the shared maps
 * keep the objects edits replaced alive until then).
 */
const MAX_OVER = 256

/** Adds the next skill to the maps; false once they hold every skill. */
const addNextName = (names: NameLookups): boolean => {
  const skill = names.skills[names.made]
  if (skill === undefined) return false
  names.made++
  const { byName, byIdLower, byNameLower } = names.maps
  const idLower = skill.id.toLowerCase()
  const nameLower = skill.name.toLowerCase()
  if (!byName.has(skill.name)) byName.set(skill.name, skill)
  if (!byIdLower.has(idLower)) byIdLower.set(idLower, skill)
  if (!byNameLower.has(nameLower)) byNameLower.set(nameLower, skill)
  return true
}

/** Adds every skill not in the maps yet. */
const completeNames = (names: NameLookups): void => {
  while (addNextName(names)) {}
}

/**
 * Adds the next skill of a snapshot to its lookups by name and case, which are otherwise made
 * whole on first use; false once they are complete. The background makes them this way, in
 * slices, before a query needs them (`findSkill`).
 */
export const prepareLookups = (snapshot: Snapshot): boolean => {
  const names = nameLookupsOf.get(snapshot)
  return names !== undefined && addNextName(names)
}

/**
 * A snapshot's skills with some replaced in place by edits that kept their id, name and file
 * (`Catalog.replaceEdited`): the lookups are the same but for those objects.
 */
export interface Replacing {
  readonly before: Snapshot
  /** Old skill object to new one. */
  readonly replaced: ReadonlyMap<Skill, Skill>
}

/** The lookup of `key` in a snapshot's map `kind`. */
const lookUp = (names: NameLookups, kind: keyof NameMaps, key: string): Skill | undefined =>
  names.over[kind].get(key) ?? names.maps[kind].get(key)

/**
 * The lookups by name and case of `skills` after `replacing`: the earlier maps with the objects
 * swapped. `skills` must be the earlier ones with the replaced ones in place (`replaceEdited`
 * makes them so); the maps are shared only when complete and `skills` as many, so neither
 * snapshot adds to them again.
 */
const replacedNames = (
  skills: ReadonlyArray<Skill>,
  { before, replaced }: Replacing,
): NameLookups | undefined => {
  const earlier = nameLookupsOf.get(before)
  if (
    earlier === undefined ||
    earlier.made !== before.skills.length ||
    skills.length !== before.skills.length
  )
    return undefined
  const over: NameMaps = {
    byName: new Map(earlier.over.byName),
    byIdLower: new Map(earlier.over.byIdLower),
    byNameLower: new Map(earlier.over.byNameLower),
  }
  const swap = (kind: keyof NameMaps, key: string, old: Skill, next: Skill) => {
    if (lookUp(earlier, kind, key) === old) over[kind].set(key, next)
  }
  for (const [old, next] of replaced) {
    swap("byName", old.name, old, next)
    swap("byIdLower", old.id.toLowerCase(), old, next)
    swap("byNameLower", old.name.toLowerCase(), old, next)
  }
  const size = over.byName.size + over.byIdLower.size + over.byNameLower.size
  return size > MAX_OVER ? undefined : { skills, maps: earlier.maps, made: earlier.made, over }
}

/** The lookup of `key` by name or ignoring case in a snapshot (made whole first if need be). */
const findByName = (snapshot: Snapshot, kind: keyof NameMaps, key: string): Skill | undefined => {
  const names = nameLookupsOf.get(snapshot)
  if (names === undefined) return snapshot[kind].get(key)
  completeNames(names)
  return lookUp(names, kind, key)
}

export const makeSnapshot = (input: {
  readonly skills: ReadonlyArray<Skill>
  readonly skipped?: ReadonlyArray<SkippedSkill>
  readonly shadowed?: ReadonlyArray<ShadowedSkill>
  readonly notices?: ReadonlyArray<DiscoveryNotice>
  readonly folders?: ReadonlyArray<string>
  readonly version?: number
  /** The skills are those of an earlier snapshot, some replaced in place. */
  readonly replacing?: Replacing
}): Snapshot => {
  const { skills } = input
  // Built on first use, once per snapshot: a change makes a new snapshot, and most of these
  // are not needed for every one (lookups by id come first; the extension's listing may never
  // be asked for).
  let published: Publication | undefined
  const names: NameLookups = (input.replacing && replacedNames(skills, input.replacing)) ?? {
    skills,
    maps: nameMaps(),
    made: 0,
    over: nameMaps(),
  }
  /** A whole map of the snapshot, with the keys edits changed (made once, for callers of the getter). */
  const whole: Partial<Record<keyof NameMaps, Map<string, Skill>>> = {}
  const wholeMap = (kind: keyof NameMaps) => {
    completeNames(names)
    const over = names.over[kind]
    if (over.size === 0) return names.maps[kind]
    whole[kind] ??= new Map([...names.maps[kind], ...over])
    return whole[kind]
  }
  const publication = () => {
    published ??= publish(skills)
    return published
  }
  const snapshot: Snapshot = {
    skills,
    skipped: input.skipped ?? [],
    shadowed: input.shadowed ?? [],
    notices: input.notices ?? [],
    folders: input.folders ?? [],
    version: input.version ?? 0,
    byId: firstBy(skills, (skill) => skill.id),
    get published() {
      return publication().published
    },
    get unpublished() {
      return publication().unpublished
    },
    get claims() {
      return publication().claims
    },
    get addresses() {
      return publication().addresses
    },
    get byName() {
      return wholeMap("byName")
    },
    get byIdLower() {
      return wholeMap("byIdLower")
    },
    get byNameLower() {
      return wholeMap("byNameLower")
    },
  }
  nameLookupsOf.set(snapshot, names)
  return snapshot
}

const sameItems = <A>(left: ReadonlyArray<A>, right: ReadonlyArray<A>, same: (a: A, b: A) => boolean) =>
  left.length === right.length && left.every((item, index) => same(item, right[index] as A))

/** Whether a rebuilt catalog is the one a snapshot holds: same skills (the very objects), same problems. */
const sameCatalog = (
  snapshot: Snapshot,
  next: Pick<Snapshot, "skills" | "skipped" | "shadowed" | "notices" | "folders">,
): boolean =>
  sameItems(snapshot.skills, next.skills, (a, b) => a === b) &&
  sameItems(
    snapshot.skipped,
    next.skipped,
    (a, b) => a.file === b.file && a.id === b.id && a.reason === b.reason && a.line === b.line,
  ) &&
  sameItems(
    snapshot.shadowed,
    next.shadowed,
    (a, b) => a.file === b.file && a.id === b.id && a.shadowedBy === b.shadowedBy,
  ) &&
  sameItems(snapshot.notices, next.notices, (a, b) => a.path === b.path && a.reason === b.reason) &&
  sameItems(snapshot.folders, next.folders, (a, b) => a === b)

/** Discovery's order: root order, then path order. */
type Ordered = { readonly rootIndex: number; readonly segments: ReadonlyArray<string> }
const precedes = (a: Ordered, b: Ordered) =>
  a.rootIndex < b.rootIndex || (a.rootIndex === b.rootIndex && compareSegments(a.segments, b.segments) < 0)

/**
 * `items` (in discovery's order) with `added` merged in where a discovery would have found
 * them: one pass, however many are added.
 */
const inDiscoveryOrder = <A extends Ordered>(items: ReadonlyArray<A>, added: ReadonlyArray<A>): Array<A> => {
  const pending = [...added].sort((a, b) => (precedes(a, b) ? -1 : precedes(b, a) ? 1 : 0))
  const merged: Array<A> = []
  let next = 0
  for (const item of items) {
    for (let first = pending[next]; first !== undefined && precedes(first, item); first = pending[++next])
      merged.push(first)
    merged.push(item)
  }
  for (; next < pending.length; next++) merged.push(pending[next] as A)
  return merged
}

/** Every folder a watcher should follow for a catalog: collections, skill folders, broken skills. */
export const foldersToWatch = (snapshot: Snapshot): Array<string> => [
  ...snapshot.folders,
  ...snapshot.skills.map((skill) => skill.dir),
  ...snapshot.skipped.map((skipped) => path.dirname(skipped.file)),
]

/** An id or name as `findSkill`'s last resort compares it: NFC and lowercase. */
const folded = (text: string) => text.normalize("NFC").toLowerCase()

/** A snapshot's ids, then names, by their folded form (the first skill in catalog order wins a key). */
const byFolded = perSnapshot((snapshot): ReadonlyMap<string, Skill> => {
  const map = new Map<string, Skill>()
  for (const key of ["id", "name"] as const)
    for (const skill of snapshot.skills) if (!map.has(folded(skill[key]))) map.set(folded(skill[key]), skill)
  return map
})

/**
 * Lookup by id or name: exact id, exact name, then the same ignoring case, then ignoring the
 * Unicode normalisation form too (`café` typed decomposed, or a folder name written so).
 */
export const findSkill = (snapshot: Snapshot, query: string): Skill | undefined => {
  const lower = query.toLowerCase()
  return (
    snapshot.byId.get(query) ??
    findByName(snapshot, "byName", query) ??
    findByName(snapshot, "byIdLower", lower) ??
    findByName(snapshot, "byNameLower", lower) ??
    byFolded(snapshot).get(folded(query))
  )
}

/**
 * Levenshtein distance, two rows. With a `limit`, any distance over it is answered as
 * `limit + 1`, and the rows stop as soon as every entry of one is over it (the distance can
 * only grow from there): an unrelated id is given up after a few characters.
 */
export const editDistance = (a: string, b: string, limit = Number.POSITIVE_INFINITY): number => {
  let previous = new Uint32Array(b.length + 1)
  let current = new Uint32Array(b.length + 1)
  for (let j = 0; j <= b.length; j++) previous[j] = j
  for (let i = 1; i <= a.length; i++) {
    current[0] = i
    let least = i
    for (let j = 1; j <= b.length; j++) {
      const cost = a.charCodeAt(i - 1) === b.charCodeAt(j - 1) ? 0 : 1
      const value = Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + cost)
      current[j] = value
      if (value < least) least = value
    }
    if (least > limit) return limit + 1
    const swap = previous
    previous = current
    current = swap
  }
  const distance = previous[b.length] ?? 0
  return distance > limit ? limit + 1 : distance
}

/** Longest query suggestions are looked for: longer ones are not a mistyped id. */
const MAX_SUGGESTION_QUERY = 200

/** Character buckets of `bagDistance` (code unit modulo this). */
const BAGS = 64

/** How many characters of `text` fall in each bucket. */
const bagOf = (text: string): Int32Array => {
  const bag = new Int32Array(BAGS)
  for (let i = 0; i < text.length; i++) {
    const bucket = text.charCodeAt(i) % BAGS
    bag[bucket] = (bag[bucket] ?? 0) + 1
  }
  return bag
}

/**
 * A lower bound of the edit distance between the text `bag` counts and `text`: each edit adds,
 * removes or changes one character, so it changes by at most one how many more characters of
 * a bucket one side has than the other (characters sharing a bucket only lower the bound).
 * `scratch` is overwritten.
 */
const bagDistance = (bag: Int32Array, text: string, scratch: Int32Array): number => {
  scratch.set(bag)
  for (let i = 0; i < text.length; i++) {
    const bucket = text.charCodeAt(i) % BAGS
    scratch[bucket] = (scratch[bucket] ?? 0) - 1
  }
  let more = 0
  let fewer = 0
  for (let k = 0; k < BAGS; k++) {
    const difference = scratch[k] ?? 0
    if (difference > 0) more += difference
    else fewer -= difference
  }
  return Math.max(more, fewer)
}

/** Up to `count` ids closest to `query` (ignoring case), nearest first; unrelated ids are left out. */
export const closestIds = (skills: ReadonlyArray<Skill>, query: string, count = 3): Array<string> => {
  if (query.length > MAX_SUGGESTION_QUERY) return []
  const needle = query.toLowerCase()
  const bag = bagOf(needle)
  const scratch = new Int32Array(BAGS)
  const close: Array<{ readonly id: string; readonly distance: number }> = []
  for (const skill of skills) {
    const id = skill.id.toLowerCase()
    // A typo or two (a third of the longer word): further off, an id is a guess, not a hint.
    const limit = Math.max(2, Math.max(needle.length, id.length) / 3)
    if (id.includes(needle) || needle.includes(id)) close.push({ id: skill.id, distance: 0.5 })
    // The distance is at least the difference in length, and at least the difference in the
    // characters used: most ids need no computing, and the rest are given up once over the
    // limit. An unknown id at 50,000 skills took 200 to 360 ms without these two, holding every
    // other request back as long.
    else if (Math.abs(needle.length - id.length) <= limit && bagDistance(bag, id, scratch) <= limit) {
      const distance = editDistance(needle, id, limit)
      if (distance <= limit) close.push({ id: skill.id, distance })
    }
  }
  return close
    .sort((a, b) => a.distance - b.distance || (a.id < b.id ? -1 : 1))
    .slice(0, count)
    .map((entry) => entry.id)
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

/** Where a page of ranked results starts: the ranking (catalog version and query) and the offset. */
export interface RankedCursor {
  readonly version: number
  readonly offset: number
  readonly query: string
}

export const encodeRankedCursor = (cursor: RankedCursor): string =>
  Buffer.from(`r:${cursor.version}:${cursor.offset}:${queryHash(cursor.query)}`).toString("base64url")

export const decodeRankedCursor = (
  cursor: string,
  query: string,
): Either.Either<{ readonly version: number; readonly offset: number }, InvalidArgument> => {
  const invalid = (reason: string) => Either.left(new InvalidArgument({ argument: "cursor", reason }))
  const text = Buffer.from(cursor, "base64url").toString("utf8")
  const parts = /^r:(\d{1,15}):(\d{1,15}):([0-9a-z]+)$/.exec(text)
  if (parts === null) return invalid("not a cursor of a list_skills search; repeat the call without it")
  if (parts[3] !== queryHash(query)) {
    return invalid("this cursor belongs to another query; repeat the call with its query, or without cursor")
  }
  const version = Number(parts[1])
  const offset = Number(parts[2])
  return Either.right({ version, offset })
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

/**
 * A folder changed this long before a discovery began might not have been seen by it (file
 * system timestamps lag the clock by up to a few ms; some file systems keep seconds).
 */
const FOLDER_TIME_MARGIN_MS = 2_000

/** A folder's times say nothing changed in it since `since` (ms since the epoch). */
const unchangedSince = (info: Stats | null, since: number) =>
  info !== null && info.mtimeMs < since && info.ctimeMs < since

/** An open failed because nothing is at the path (or a part of it is not a folder). */
const nothingThere = (error: unknown): boolean => {
  const code = errorCode(error)
  return code === "ENOENT" || code === "ENOTDIR"
}

/** Rankings kept for paging (each at most one reference per skill). */
const MAX_RANKINGS = 16

type Ranked = Ranking<Skill>

/** What discovery last found: the candidates, in priority order, and what it noticed. */
type Discovered = DiscoveryResult

export class Catalog extends Effect.Service<Catalog>()("skills-mcp/Catalog", {
  scoped: Effect.gen(function* () {
    const settings = yield* Settings
    const discovery = yield* Discovery
    const headCap = Math.min(settings.maxFileBytes, MAX_FRONTMATTER_BYTES)
    /** Parse results by SKILL.md path, valid while the file's fingerprint holds. */
    const entries = new Map<string, Entry>()
    const state = yield* Ref.make(makeSnapshot({ skills: [] }))
    const changes = yield* Effect.acquireRelease(PubSub.unbounded<CatalogChange>(), PubSub.shutdown)
    const lock = yield* Effect.makeSemaphore(1)
    let discovered: Discovered = { candidates: [], nested: [], notices: [], folders: [], edges: [] }
    /** Skill folders of the last discovery (served, skipped or shadowed), for targeted refreshes. */
    let candidateByDir = new Map<string, Candidate>()
    let lastCheck = Number.NEGATIVE_INFINITY
    /**
     * While a file watcher covers every folder: its not-yet-delivered changes. Requests then
     * skip the disk sweep and only apply those.
     */
    let watched: Effect.Effect<ReadonlyArray<string>> | undefined
    /**
     * While the watches are first being set up: requests leave the disk to the check that
     * follows the set-up (see setWatched). At 10,000 skills the set-up takes about a second, and
     * a sweep per request meanwhile kept the thread pool busy for as long.
     */
    let watchesComing = false
    /** The first scan builds the catalog; changes are published from then on. */
    let published = false
    /** When the discovery behind the current snapshot began (ms since the epoch). */
    let discoveredAt = 0
    /** The sweep that follows the watches' set-up, while it runs. */
    let catchingUp: Deferred.Deferred<void> | undefined
    /** Checks that follow the watches' set-up running now (a set-up may follow a lost one). */
    let checksAfterWatches = 0
    const scope = yield* Effect.scope

    // ---- search: the index, built once in slices, then kept in step with every snapshot ----
    let searchIndex: SearchIndex<Skill> | undefined
    let searchVersion = -1
    const searchReady = yield* Deferred.make<SearchIndex<Skill>>()
    let searchStarted = false
    /** Whether the search index's build has ended (built, or failed). */
    let searchBuilt = false
    /** Queries waiting for the index: it is then built in long slices (see `sliced`). */
    let searchWaiters = 0
    const awaitSearch = Effect.suspend(() =>
      searchIndex !== undefined
        ? Deferred.await(searchReady)
        : Effect.acquireUseRelease(
            Effect.sync(() => {
              searchWaiters++
            }),
            () => Deferred.await(searchReady),
            () =>
              Effect.sync(() => {
                searchWaiters--
              }),
          ),
    )
    /** Rankings by catalog version and query, so later pages keep the order of the first. */
    const rankings = new Map<string, Ranked>()

    /** Brings the search index (when built) in step with a snapshot: only what changed is re-indexed. */
    const syncSearch = (snapshot: Snapshot) => {
      if (searchIndex === undefined || searchVersion === snapshot.version) return
      searchIndex.sync(snapshot.skills, snapshot.byId)
      searchVersion = snapshot.version
    }

    /** The snapshot whose lookups the background is making (see `prepareSliced`). */
    let preparing: Snapshot | undefined
    /** Makes a snapshot's lookups by name and case in slices, until a newer snapshot comes. */
    const prepareSliced = (snapshot: Snapshot) =>
      Effect.suspend(() => {
        preparing = snapshot
        return sliced(snapshot.skills, () => preparing === snapshot && prepareLookups(snapshot))
      })

    const buildSearch = Effect.gen(function* () {
      const index = makeSearchIndex<Skill>()
      const { skills } = yield* Ref.get(state)
      yield* sliced(
        skills,
        (skill) => {
          index.addNew(skill)
          return true
        },
        () => searchWaiters > 0,
      )
      searchIndex = index
      syncSearch(yield* Ref.get(state))
      yield* Deferred.succeed(searchReady, index)
      // What the first query would otherwise pay for: findSkill's lookups (made in slices
      // here), and a first ranking, which computes BM25's length normalisation and runs the
      // ranking code once. At 10,000 skills the first query after start took 25 to 40 ms
      // without this (about 22 of them the lookups), and 6 to 8 with it. The ranking is of a
      // name (about 5 ms there): a whole description of 12 words took 40 ms, in one piece.
      // Start-up lasts until this is done (`startingUp`: the idle collection waits for it).
      const current = yield* Ref.get(state)
      yield* prepareSliced(current)
      const sample = current.skills[0]
      if (sample !== undefined) index.rank(sample.name)
    }).pipe(
      Effect.withSpan("Catalog.buildSearch"),
      // Built or not, start-up is over for it (a failed build would otherwise keep it "starting").
      Effect.ensuring(
        Effect.sync(() => {
          searchBuilt = true
        }),
      ),
    )

    /**
     * After a change: the search index follows the new snapshot and, once queries are being
     * made (the index exists), its lookups by name and case are made in the background, before
     * the next query needs them (an edit in place carries them over: nothing to do then). At
     * 10,000 skills the first query after an addition made them itself.
     */
    const followSnapshot = (snapshot: Snapshot) =>
      Effect.suspend(() => {
        syncSearch(snapshot)
        return searchIndex === undefined
          ? Effect.void
          : Effect.asVoid(Effect.forkIn(prepareSliced(snapshot), scope))
      })

    /** Starts building the search index in the background, unless it is built or being built. */
    const warmSearch = Effect.suspend(() => {
      if (searchStarted) return Effect.void
      searchStarted = true
      return Effect.asVoid(Effect.forkIn(buildSearch, scope))
    })

    /** The skills a query ranks, best first, for a snapshot that the index is in step with. */
    const rankFor = (snapshot: Snapshot, index: SearchIndex<Skill>, key: string): Ranked => {
      const ranking = index.rank(key)
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
        yield* warmSearch
        const index = yield* awaitSearch
        const current = yield* Ref.get(state)
        syncSearch(current)
        const version = from?.version ?? current.version
        let ranked = rankings.get(`${version}\n${key}`)
        if (ranked === undefined) {
          if (version !== current.version) {
            return yield* new InvalidArgument({
              argument: "cursor",
              reason: "the skills changed since this search; repeat the call without cursor",
            })
          }
          ranked = rankFor(current, index, key)
          if (rankings.size >= MAX_RANKINGS) rankings.delete(rankings.keys().next().value ?? "")
          rankings.set(`${version}\n${key}`, ranked)
        }
        const offset = from?.offset ?? 0
        const end = offset + limit
        // A page of an earlier ranking shows the skills as they are now; ones that left are dropped.
        const page =
          version === current.version
            ? ranked.skills.slice(offset, end)
            : ranked.skills.slice(offset, end).flatMap((skill) => {
                const now = current.byId.get(skill.id)
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

    /**
     * Frontmatter the first scan read as discovery looked at each SKILL.md (`lookReading`), by
     * path, with the fingerprint of the very file read. `build` takes it; what is left (skills
     * not tried) goes when the first scan ends.
     */
    const preread = new Map<string, { readonly fingerprint: Fingerprint; readonly read: FrontmatterRead }>()

    /**
     * The first scan's look at a SKILL.md: it opens the file (not through a link) instead of an
     * lstat, and a regular file within the size limit has its frontmatter read there and then.
     * One path lookup and one open per skill, where an lstat in discovery and an open in `build`
     * made two. A link, or a file that cannot be opened, is looked at with an lstat as before,
     * and read (or not) by `build`. Discovery does not know yet which skills will be served (a
     * folder may be shadowed, or over `--max-skills`): once `maxSkills` files have been read
     * this way, the others are only looked at with an lstat, so a catalog far over the cap is
     * not opened whole. So is a file read already (one found from two roots), and every file
     * where an open cannot refuse a link (Windows).
     */
    const lookReading =
      (port: SyncFsPort): SkillFileLook =>
      (file) => {
        if (!opensRefuseLinks || preread.size >= settings.maxSkills || preread.has(file))
          return port.lstat(file)
        let fd: number
        try {
          fd = port.openNoFollow(file)
        } catch (error) {
          // Nothing there (a group's folder) is what an lstat would answer too.
          return nothingThere(error) ? null : port.lstat(file)
        }
        try {
          const info = port.fstat(fd)
          if (info.isFile() && info.size <= settings.maxFileBytes) {
            const read = readFrontmatterFromNow(port, fd, file, headCap)
            preread.set(file, { fingerprint: fingerprintOf(info), read })
          }
          return info
        } catch {
          return port.lstat(file)
        } finally {
          try {
            port.close(fd)
          } catch {
            // already closed: nothing to release
          }
        }
      }

    const skippedAs = (
      candidate: Candidate,
      rule: FrontmatterRule,
      reason: string,
      line?: number,
    ): Parsed => ({
      _tag: "Skipped",
      skipped: {
        id: candidate.id,
        file: candidate.file,
        root: candidate.root.path,
        rule,
        reason,
        ...(line === undefined ? {} : { line }),
      },
    })

    /** What a candidate's frontmatter makes of it: a skill, or a skipped one. */
    const parsedOf = (candidate: Candidate, result: FrontmatterRead): Parsed => {
      if (Either.isLeft(result))
        return skippedAs(candidate, result.left.rule, result.left.reason, result.left.line)
      const parsed = result.right
      return {
        _tag: "Skill",
        skill: {
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
          diagnostics: checkSkill({ folder: candidate.id, frontmatter: parsed }),
        },
      }
    }

    /**
     * A candidate's result when nothing is left to read: a SKILL.md over the size limit, or one
     * the first scan read already (taken from `preread`). Undefined otherwise.
     */
    const parsedNow = (candidate: Candidate): Parsed | undefined => {
      // Only the head is read here, but get_skill reads the whole file: one it could not load
      // is not listed either.
      const { size } = candidate.fingerprint
      if (size > settings.maxFileBytes) {
        return skippedAs(
          candidate,
          "skill-unreadable",
          `SKILL.md is ${size} bytes, over the ${settings.maxFileBytes}-byte limit (raise it with --max-file-bytes)`,
        )
      }
      const early = preread.get(candidate.file)
      if (early === undefined) return undefined
      preread.delete(candidate.file)
      return sameFingerprint(early.fingerprint, candidate.fingerprint)
        ? parsedOf(candidate, early.read)
        : undefined
    }

    /** Keeps a candidate's result for its fingerprint (`entries`). */
    const keep = (candidate: Candidate, parsed: Parsed): Parsed => {
      entries.set(candidate.file, { fingerprint: candidate.fingerprint, parsed })
      return parsed
    }

    /** Parses a candidate's SKILL.md and keeps the result for its fingerprint (`entries`). */
    const parseKept = async (port: FsPort, candidate: Candidate): Promise<Parsed> =>
      keep(
        candidate,
        parsedNow(candidate) ?? parsedOf(candidate, await readFrontmatter(port, candidate.file, headCap)),
      )

    /**
     * Builds the snapshot from discovered candidates: first id wins, the cap applies, and only
     * SKILL.md files whose fingerprint changed are read again. Swaps it in and publishes the change.
     */
    const build = (port: FsPort, found: Discovered) =>
      Effect.gen(function* () {
        discovered = found
        // One folder may be found from two roots (nested roots): the first is the one served.
        candidateByDir = new Map()
        for (const candidate of found.candidates)
          if (!candidateByDir.has(candidate.dir)) candidateByDir.set(candidate.dir, candidate)
        // Candidates by id, in priority order. The first wins; when it cannot be served
        // (skipped), the next with that id is tried: a broken copy in an earlier root hides
        // nothing. Only candidates tried are read here (the first scan's discovery read up to
        // `maxSkills` files as it came to them: see lookReading).
        const sameId = new Map<string, Array<Candidate>>()
        let overLimit = 0
        for (const candidate of found.candidates) {
          const group = sameId.get(candidate.id)
          if (group !== undefined) group.push(candidate)
          else if (sameId.size >= settings.maxSkills) overLimit++
          else sameId.set(candidate.id, [candidate])
        }
        const results = new Map<Candidate, Parsed>()
        let round = [...sameId.values()].flatMap((group) => group.slice(0, 1))
        while (round.length > 0) {
          // Unchanged files, and ones with nothing to read, in one synchronous pass; only the
          // others are read.
          const stale: Array<Candidate> = []
          for (const candidate of round) {
            const cached = entries.get(candidate.file)
            if (cached !== undefined && sameFingerprint(cached.fingerprint, candidate.fingerprint)) {
              results.set(candidate, cached.parsed)
              continue
            }
            const now = parsedNow(candidate)
            if (now === undefined) stale.push(candidate)
            else results.set(candidate, keep(candidate, now))
          }
          yield* Effect.promise(() =>
            mapLimit(stale, port.concurrency, async (candidate) => {
              results.set(candidate, await parseKept(port, candidate))
            }),
          )
          round = round.flatMap((candidate) => {
            if (results.get(candidate)?._tag !== "Skipped") return []
            const group = sameId.get(candidate.id) ?? []
            return group.slice(group.indexOf(candidate) + 1, group.indexOf(candidate) + 2)
          })
        }
        const liveFiles = new Set([...results.keys()].map((candidate) => candidate.file))
        for (const file of entries.keys()) if (!liveFiles.has(file)) entries.delete(file)

        const servedFile = new Map<string, string>()
        for (const result of results.values())
          if (result._tag === "Skill") servedFile.set(result.skill.id, result.skill.file)
        const skills: Array<Skill> = []
        const skipped: Array<SkippedSkill> = []
        const shadowed: Array<ShadowedSkill> = []
        for (const candidate of found.candidates) {
          const result = results.get(candidate)
          const winner = servedFile.get(candidate.id)
          if (result?._tag === "Skill") skills.push(result.skill)
          else if (result?._tag === "Skipped") skipped.push(result.skipped)
          else if (winner !== undefined)
            shadowed.push({ id: candidate.id, file: candidate.file, shadowedBy: winner })
        }
        for (const nested of found.nested) {
          const refused = skippedAs(nested.candidate, "skill-nested", nestedReason(nested))
          if (refused._tag === "Skipped") skipped.push(refused.skipped)
        }
        const before = yield* Ref.get(state)
        const folders = [...found.folders, ...found.edges]
        if (
          published &&
          sameCatalog(before, { skills, skipped, shadowed, notices: found.notices, folders })
        ) {
          // Nothing changed (the common sweep): the snapshot, and all that hangs on it (lookups,
          // the published listing, rendered catalogs), is kept as it is.
          lastCheck = yield* Clock.currentTimeMillis
          return false
        }
        const change = describeChange(before, skills)
        const changedAny = change.added.length + change.removed.length + change.changed.length > 0
        const version = changedAny ? before.version + 1 : before.version
        const after = makeSnapshot({
          skills,
          skipped,
          shadowed,
          notices: found.notices,
          folders,
          version,
        })
        yield* Ref.set(state, after)
        yield* followSnapshot(after)
        yield* logNews(before, after, overLimit)
        if (changedAny && published) yield* PubSub.publish(changes, { version, ...change })
        published = true
        lastCheck = yield* Clock.currentTimeMillis
        return changedAny
      })

    /**
     * Re-discovers everything (one stat per skill; `look` may read as well, see `lookReading`),
     * then builds.
     */
    const rescan = (port: FsPort, look?: SkillFileLook) =>
      Effect.gen(function* () {
        const startedAt = yield* Clock.currentTimeMillis
        const found = yield* discovery.discover(port, look)
        discoveredAt = startedAt
        return yield* build(port, found)
      }).pipe(Effect.withSpan("Catalog.rescan"))

    /**
     * Whether the disk still holds what the last discovery found, checked without reading any
     * file and in slices (the event loop stays free): every SKILL.md has its fingerprint, and
     * no folder discovery read (where a skill folder would appear or go) changed since that
     * discovery began. Any doubt answers false.
     */
    const diskUnchanged = Effect.gen(function* () {
      const since = discoveredAt - FOLDER_TIME_MARGIN_MS
      const { candidates, folders, edges } = discovered
      const fileHolds = (candidate: Candidate) => {
        const info = lstatNow(candidate.file)
        return info?.isFile() === true && sameFingerprint(fingerprintOf(info), candidate.fingerprint)
      }
      const folderHolds = (dir: string) => unchangedSince(lstatNow(dir), since)
      return (yield* sliced(candidates, fileHolds)) && (yield* sliced([...folders, ...edges], folderHolds))
    })

    /**
     * After file changes: when each changed path is directly inside a skill folder, only those
     * skills' SKILL.md are checked again; anything else (a skill folder added, removed, renamed
     * or replaced) re-discovers the roots. Either way only changed files are read.
     */
    const refreshPaths = (paths: ReadonlyArray<string>) =>
      lock.withPermits(1)(
        Effect.gen(function* () {
          const touched = new Set<Candidate>()
          const elsewhere: Array<string> = []
          for (const changed of paths) {
            // Only a change inside a skill folder is checked on its own: a change of the folder
            // itself (renamed, removed, replaced by a link) is for discovery to judge, unless
            // all that changed are new skill folders in a root (see addNew).
            const candidate = candidateByDir.get(path.dirname(changed))
            if (candidate === undefined || candidateByDir.has(changed)) elsewhere.push(changed)
            else touched.add(candidate)
          }
          if (elsewhere.length > 0) {
            if (touched.size === 0 && (yield* addNew(elsewhere))) return true
            return yield* rescan(asyncFs)
          }
          if (touched.size === 0) return false
          const restat = yield* Effect.promise(() =>
            mapLimit([...touched], asyncFs.concurrency, async (candidate) => ({
              candidate,
              info: await asyncFs.lstat(candidate.file),
            })),
          )
          if (restat.some(({ info }) => info === null || !info.isFile())) return yield* rescan(asyncFs)
          const updated = new Map<Candidate, Candidate>()
          for (const { candidate, info } of restat) {
            if (info === null) continue
            const fingerprint = fingerprintOf(info)
            if (!sameFingerprint(fingerprint, candidate.fingerprint))
              updated.set(candidate, { ...candidate, fingerprint })
          }
          if (updated.size === 0) return false
          const found = {
            ...discovered,
            candidates: discovered.candidates.map((candidate) => updated.get(candidate) ?? candidate),
          }
          return (yield* replaceEdited(updated, found)) || (yield* build(asyncFs, found))
        }),
      )

    /**
     * The common addition: new folders directly in a root, each holding a SKILL.md that parses,
     * with ids no other skill folder has. They are inserted where a discovery would put them,
     * without discovering every root again (at 10,000 skills, a rediscovery and rebuild for one
     * new skill allocated about 70 MB). Answers false, having changed nothing but the files
     * parsed (kept for `build`), for anything else: a group, a link, a name discovery skips, an
     * id in use (shadowing), a skill that does not parse, the cap.
     */
    const addNew = (dirs: ReadonlyArray<string>) =>
      Effect.gen(function* () {
        // Only folders directly in a folder discovery read, and none it knew (as a group or an
        // edge, whose skills a SKILL.md now hides, or as a skill folder). A skill below a folder
        // discovery never read can only be the folder itself.
        const folders = new Set(discovered.folders)
        const edges = new Set(discovered.edges)
        const known = (dir: string) => folders.has(dir) || edges.has(dir) || candidateByDir.has(dir)
        if (!published || !dirs.every((dir) => folders.has(path.dirname(dir)) && !known(dir))) return false
        const found = yield* Effect.promise(() =>
          mapLimit(dirs, asyncFs.concurrency, async (dir) => {
            const candidate = await discovery.plainSkillIn(dir)
            if (candidate === null) return null
            const result = await parseKept(asyncFs, candidate)
            return result._tag === "Skill" ? { candidate, skill: result.skill } : null
          }),
        )
        const added = found.filter((item) => item !== null)
        const ids = new Set(added.map(({ candidate }) => candidate.id))
        if (
          added.length !== dirs.length ||
          ids.size !== added.length ||
          discovered.candidates.length + added.length > settings.maxSkills ||
          discovered.candidates.some((candidate) => ids.has(candidate.id))
        )
          return false
        const before = yield* Ref.get(state)
        const candidates = inDiscoveryOrder(
          discovered.candidates,
          added.map(({ candidate }) => candidate),
        )
        const skills = inDiscoveryOrder(
          before.skills,
          added.map(({ skill }) => skill),
        )
        for (const { candidate } of added) candidateByDir.set(candidate.dir, candidate)
        discovered = { ...discovered, candidates }
        const after = yield* swapSkills(before, skills, { added: added.map(({ skill }) => skill.id) })
        // A new skill may be left out of the extension (its name, or a URI already served).
        yield* logNews(before, after, 0)
        return true
      })

    /**
     * Swaps in the last snapshot with other skills and nothing else changed (what is skipped,
     * shadowed or noticed, the folders), and publishes the change.
     */
    const swapSkills = (
      before: Snapshot,
      skills: ReadonlyArray<Skill>,
      change: { readonly added?: ReadonlyArray<string>; readonly changed?: ReadonlyArray<string> },
      replaced?: ReadonlyMap<Skill, Skill>,
    ) =>
      Effect.gen(function* () {
        const version = before.version + 1
        const after = makeSnapshot({
          skills,
          skipped: before.skipped,
          shadowed: before.shadowed,
          notices: before.notices,
          folders: before.folders,
          version,
          ...(replaced === undefined ? {} : { replacing: { before, replaced } }),
        })
        yield* Ref.set(state, after)
        yield* followSnapshot(after)
        yield* PubSub.publish(changes, {
          version,
          added: change.added ?? [],
          removed: [],
          changed: change.changed ?? [],
        })
        lastCheck = yield* Clock.currentTimeMillis
        return after
      })

    /**
     * The common edit: served skills whose SKILL.md changed and still parses, with the same id,
     * name and file (a description or body changed). The snapshot is the last one with those
     * skills replaced: nothing else can differ (what is skipped, shadowed or left out of the
     * extension depends on ids, names and files only), so the catalog is not rebuilt over every
     * skill (at 10,000 skills a rebuild allocated about 21 MB for one edit). Answers false, with
     * the files parsed for `build` to reuse, when any of that does not hold.
     */
    const replaceEdited = (updated: ReadonlyMap<Candidate, Candidate>, found: Discovered) =>
      Effect.gen(function* () {
        if (!published) return false
        const parsed = yield* Effect.promise(() =>
          mapLimit([...updated.values()], asyncFs.concurrency, async (candidate) => ({
            candidate,
            result: await parseKept(asyncFs, candidate),
          })),
        )
        const before = yield* Ref.get(state)
        const replaced = new Map<Skill, Skill>()
        for (const { candidate, result } of parsed) {
          const current = before.byId.get(candidate.id)
          if (
            current === undefined ||
            current.file !== candidate.file ||
            result._tag !== "Skill" ||
            result.skill.name !== current.name
          )
            return false
          replaced.set(current, result.skill)
        }
        discovered = found
        for (const candidate of updated.values()) candidateByDir.set(candidate.dir, candidate)
        yield* swapSkills(
          before,
          before.skills.map((skill) => replaced.get(skill) ?? skill),
          { changed: [...replaced.keys()].map((skill) => skill.id) },
          replaced,
        )
        return true
      })

    /**
     * After watches were added for these folders: what changed in them between the read that
     * found them and their watch is found now. A skill folder's SKILL.md is looked at (one stat
     * each); a group folder changed since the last discovery began means discovering again.
     * Answers whether the catalog changed.
     */
    const recheck = (dirs: ReadonlyArray<string>) =>
      Effect.gen(function* () {
        // A group folder watched now may have gained a skill folder after discovery read it:
        // looked at as the check after the first set-up does (its times against the discovery's).
        const read = new Set([...discovered.folders, ...discovered.edges])
        const since = discoveredAt - FOLDER_TIME_MARGIN_MS
        const groups = dirs.filter((dir) => read.has(dir))
        const times = yield* Effect.promise(() => mapLimit(groups, asyncFs.concurrency, asyncFs.lstat))
        if (!times.every((info) => unchangedSince(info, since))) return yield* refresh
        const files = dirs.filter((dir) => candidateByDir.has(dir)).map((dir) => path.join(dir, SKILL_FILE))
        return files.length === 0 ? false : yield* refreshPaths(files)
      })

    /**
     * After a change: `sync` brings the watches in step with the catalog and answers the folders
     * it newly watches, which are then re-checked (`recheck`); a few rounds at most, since each
     * may add folders, and the watches are in step at the end.
     */
    const followWatches = (sync: Effect.Effect<ReadonlyArray<string>>) =>
      Effect.gen(function* () {
        for (let round = 0; ; round++) {
          const added = yield* sync
          if (added.length === 0 || round === 3 || !(yield* recheck(added))) return
        }
      })

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
            `Skill '${left.id}' (${left.file}) is not listed over the MCP Skills extension (still served by the tools): ${left.reason}`,
          )
        }
        if (overLimit > 0) {
          yield* Effect.logWarning(
            `${overLimit} skill(s) not indexed: the catalog holds at most ${settings.maxSkills} (raise with --max-skills).`,
          )
        }
      })

    /**
     * Before a read: nothing to do while a watcher covers every folder or its watches are first
     * being set up; otherwise rescan unless the last check is more recent than the refresh interval.
     */
    const ensureFresh = Effect.suspend(() =>
      watched !== undefined
        ? Effect.flatMap(Effect.zipRight(nextIoTurn, watched), (paths) =>
            paths.length === 0 ? Effect.void : refreshPaths(paths),
          )
        : watchesComing
          ? Effect.void
          : lock.withPermits(1)(
              Effect.gen(function* () {
                const now = yield* Clock.currentTimeMillis
                if (now - lastCheck < settings.refreshIntervalMs) return
                yield* rescan(asyncFs)
              }),
            ),
    )

    /** Rescans now, whatever the interval. */
    const refresh = lock.withPermits(1)(rescan(asyncFs))

    const snapshot = Effect.zipRight(ensureFresh, Ref.get(state))

    // Untraced, as SkillFiles' methods are (see there): both run on every request.
    const get = Effect.fnUntraced(function* (query: string) {
      const current = yield* snapshot
      const skill = findSkill(current, query)
      if (skill !== undefined) return skill
      return yield* new SkillNotFound({ query, suggestions: closestIds(current.skills, query) })
    })

    /** Without a query: every skill in catalog order. With one: the matching skills, best first. */
    const list = Effect.fnUntraced(function* (options: ListOptions) {
      const current = yield* snapshot
      const limit = Math.min(options.limit ?? settings.pageSize, settings.pageSize)
      if (options.query !== undefined && options.query.trim() !== "") {
        return yield* search(options.query, limit, options.cursor)
      }
      const { page, nextCursor } = yield* paginate(current.skills, limit, options.cursor)
      const result: ListPage = {
        skills: page,
        total: current.skills.length,
        ...(nextCursor ? { nextCursor } : {}),
      }
      return result
    })

    // The first scan runs before anything is served: synchronous reads are the faster choice,
    // and each SKILL.md is read as discovery comes to it.
    yield* rescan(syncFs, lookReading(syncFs)).pipe(Effect.ensuring(Effect.sync(() => preread.clear())))
    return {
      /** The current index, after a (throttled) freshness check. */
      snapshot,
      get,
      list,
      /** Rescans now, whatever the interval. */
      refresh,
      /** Checks what changed after the watcher saw these paths change. */
      refreshPaths,
      /** Finds what changed in newly watched folders before their watches existed. */
      recheck,
      followWatches,
      /** Builds the search index in the background now, so the first query does not wait for it. */
      warmSearch,
      /**
       * Whether start-up work is still to come or runs in the background: the search index is
       * not built yet, or the watches are being set up, or the check after them runs.
       */
      startingUp: (): boolean => !searchBuilt || watchesComing || checksAfterWatches > 0,
      /**
       * Runs the watches' first set-up. Meanwhile requests do not sweep the disk: the check that
       * follows a complete set-up finds any change made before it (setWatched).
       */
      whileWatchesStart: <A, E, R>(setUp: Effect.Effect<A, E, R>) =>
        Effect.suspend(() => {
          watchesComing = watched === undefined
          return Effect.ensuring(
            setUp,
            Effect.sync(() => {
              watchesComing = false
            }),
          )
        }),
      /**
       * A file watcher now covers every folder (give its pending changes), or no longer does
       * (undefined): requests then check the disk themselves again.
       */
      setWatched: (pending: Effect.Effect<ReadonlyArray<string>> | undefined) =>
        Effect.gen(function* () {
          const starting = watched === undefined && pending !== undefined
          watched = pending
          if (!starting) return
          // A change made after the last sweep but before its folder's watch existed reaches
          // no watcher. Once the watches are in place, a check in the background (a stat of
          // each SKILL.md and collection folder, nothing read) finds it, and only then sweeps.
          const done = yield* Deferred.make<void>()
          catchingUp = done
          checksAfterWatches++
          const catchUp = lock.withPermits(1)(
            Effect.flatMap(diskUnchanged, (unchanged) =>
              unchanged ? Effect.void : Effect.asVoid(rescan(asyncFs)),
            ),
          )
          const finish = Effect.zipRight(
            Effect.sync(() => {
              checksAfterWatches--
            }),
            Deferred.succeed(done, undefined),
          )
          yield* Effect.forkIn(Effect.ensuring(catchUp, finish), scope)
        }),
      /** Catalog changes after start-up. */
      changes: Stream.fromPubSub(changes),
      /** The index as it is, without touching the disk. */
      peek: Ref.get(state),
      /**
       * Completes once no refresh is running (one that started earlier, the sweep after the
       * watches were set up included, has finished).
       */
      settled: Effect.suspend(() =>
        catchingUp === undefined ? Effect.void : Deferred.await(catchingUp),
      ).pipe(Effect.zipRight(lock.withPermits(1)(Effect.void))),
    } as const
  }),
}) {}
