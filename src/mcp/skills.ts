/**
 * The MCP Skills extension (SEP-2640): `skills/list` and `skills/get`. An entry is a skill's
 * SKILL.md URI, its frontmatter verbatim and every file with its size and SHA-256 digest;
 * digests are computed on first request and cached by file fingerprint.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { Catalog } from "../catalog/Catalog.js"
import { paginate } from "../catalog/Paging.js"
import { SEARCH_PAGE } from "../catalog/Searching.js"
import type { Skill, Snapshot } from "../catalog/Snapshot.js"
import { DEBOUNCE_MS } from "../catalog/Watcher.js"
import { SkillNotPublished, UnknownUri } from "../Errors.js"
import type { Manifest } from "../files/Manifests.js"
import { SkillFiles } from "../files/SkillFiles.js"
import { Settings } from "../Settings.js"
import {
  fileUri,
  parseSkillUri,
  resolveSegments,
  skillMdUri,
  skillPathOf,
  UriString,
} from "../skills/Uris.js"

export const SKILLS_EXTENSION = "io.modelcontextprotocol/skills"

/**
 * Freshness hint and cache scope of extension results (and resource reads). Over stdio the
 * server tells its one client of every change, so nothing is cached (`ttlMs: 0`). Over HTTP,
 * stateless, nothing can be pushed: an answer stays good for as long as the server takes to
 * see a change (the watcher's debounce, or without it `--refresh-ms`). Any cache may share it
 * (`public`) unless it answered an authenticated caller, whose catalog is its own (`private`).
 */
export const cacheHints = Effect.gen(function* () {
  const settings = yield* Settings
  const { personal } = yield* Catalog
  const hints: { readonly ttlMs: number; readonly cacheScope: "public" | "private" } =
    settings.http === undefined
      ? { ttlMs: 0, cacheScope: "private" }
      : {
          ttlMs: settings.watch ? DEBOUNCE_MS : settings.refreshIntervalMs,
          cacheScope: personal ? "private" : "public",
        }
  return hints
})

export const GetSkillParams = Schema.Struct({ uri: UriString })

/**
 * `skills/list`'s parameters: the cursor, and `query`, our extension until the standard has one:
 * the published skills ranked as `list_skills {query}` ranks them.
 */
export const ListSkillsParams = Schema.Struct({
  cursor: Schema.optional(Schema.String),
  query: Schema.optional(Schema.String.pipe(Schema.maxLength(1_000))),
})

export interface SkillEntry {
  readonly uri: string
  readonly frontmatter: Readonly<Record<string, unknown>>
  readonly resources: ReadonlyArray<{ readonly uri: string; readonly digest: string; readonly size: number }>
}

/** Entries made, by the manifest they were made of (the same object while the skill is unchanged). */
const entries = new WeakMap<Manifest, { readonly skill: Skill; readonly entry: SkillEntry }>()

/** A skill's entry made of its manifest; SkillNotPublished when SKILL.md changed meanwhile. */
const entryOf = (skill: Skill, manifest: Manifest) => {
  const made = entries.get(manifest)
  if (made?.skill === skill) return Either.right(made.entry)
  if (manifest.frontmatter.fields.name !== skill.name) {
    return Either.left(
      new SkillNotPublished({
        skillId: skill.id,
        reason: "its SKILL.md changed while it was being listed; list again",
      }),
    )
  }
  const skillPath = skillPathOf(skill)
  const entry: SkillEntry = {
    uri: skillMdUri(skillPath),
    frontmatter: manifest.frontmatter.raw,
    resources: manifest.files.map((file) => ({
      uri: fileUri(skillPath, file.path),
      digest: file.digest,
      size: file.size,
    })),
  }
  entries.set(manifest, { skill, entry })
  return Either.right(entry)
}

/** A published skill's entry; fails with SkillNotPublished when it is over a limit. */
const skillEntry = (skill: Skill) =>
  Effect.gen(function* () {
    const files = yield* SkillFiles
    return yield* entryOf(skill, yield* files.manifest(skill))
  })

/** Logs why a skill is left out of a listing, once per skill and reason (one per server). */
export const makeLeftOutLog = () => {
  const reported = new Set<string>()
  return (skill: Skill, reason: string) =>
    Effect.suspend(() => {
      const key = `${skill.file}\n${reason}`
      if (reported.has(key)) return Effect.void
      reported.add(key)
      return Effect.logWarning(`Skill '${skill.id}' is left out of skills/list: ${reason}`)
    })
}

/** A page of the published skills: in catalog order, or ranked by a query. */
const publishedPage = (params: typeof ListSkillsParams.Type) =>
  Effect.gen(function* () {
    const catalog = yield* Catalog
    const { protocolPageSize } = yield* Settings
    if (params.query !== undefined && params.query.trim() !== "") {
      const { skills, nextCursor } = yield* catalog.search(
        params.query,
        Math.min(SEARCH_PAGE, protocolPageSize),
        params.cursor,
        "published",
      )
      return { page: skills, ...(nextCursor === undefined ? {} : { nextCursor }) }
    }
    const snapshot = yield* catalog.snapshot
    return yield* paginate(snapshot.published, protocolPageSize, params.cursor)
  })

export const listSkills = (
  params: typeof ListSkillsParams.Type,
  logLeftOut: (skill: Skill, reason: string) => Effect.Effect<void>,
) =>
  Effect.gen(function* () {
    const { page, nextCursor } = yield* publishedPage(params)
    // Skills whose manifests are kept and unchanged are answered at once; the others are walked
    // and read, one after the other (a manifest's calls are synchronous: Manifests.ts).
    const files = yield* SkillFiles
    const manifests = files.keptManifests(page)
    const kept = page.map((skill, index) => {
      const manifest = manifests[index]
      const entry = manifest === undefined ? undefined : entryOf(skill, manifest)
      return entry !== undefined && Either.isRight(entry) ? entry.right : undefined
    })
    const listed = kept.every((entry) => entry !== undefined)
      ? kept
      : yield* Effect.forEach(page, (skill, index) =>
          kept[index] !== undefined
            ? Effect.succeed(kept[index])
            : skillEntry(skill).pipe(
                Effect.map((entry): SkillEntry | undefined => entry),
                Effect.catchTags({
                  SkillNotPublished: (error) => Effect.as(logLeftOut(skill, error.reason), undefined),
                  SkillUnreadable: (error) => Effect.as(logLeftOut(skill, error.reason), undefined),
                  MalformedFrontmatter: (error) => Effect.as(logLeftOut(skill, error.reason), undefined),
                  FileTooLarge: (error) => Effect.as(logLeftOut(skill, error.message), undefined),
                  FileNotFound: (error) => Effect.as(logLeftOut(skill, error.message), undefined),
                  PathEscape: (error) => Effect.as(logLeftOut(skill, error.message), undefined),
                }),
              ),
        )
    return {
      resultType: "complete" as const,
      skills: listed.filter((entry) => entry !== undefined),
      ...(nextCursor === undefined ? {} : { nextCursor }),
      ...(yield* cacheHints),
    }
  })

/** The published skill whose SKILL.md a URI names, or -32602 saying why there is none. */
const publishedSkillAt = (snapshot: Snapshot, uri: string) => {
  const unknown = (reason: string) => Effect.fail(new UnknownUri({ uri, reason }))
  const segments = parseSkillUri(uri)
  if (Either.isLeft(segments)) return unknown(segments.left)
  const target = resolveSegments(snapshot, segments.right)
  if (target?._tag === "Skill" && !target.published && target.rest.length <= 1) {
    const unpublished = snapshot.unpublished.find((left) => left.id === target.skill.id)
    if (unpublished !== undefined) {
      return Effect.fail(new SkillNotPublished({ skillId: target.skill.id, reason: unpublished.reason }))
    }
  }
  if (target?._tag !== "Skill" || !target.published || target.rest.join("/") !== "SKILL.md") {
    return unknown("no skill is served there (a skill URI is skill://<skill-path>/SKILL.md; see skills/list)")
  }
  return Effect.succeed(target.skill)
}

export const getSkill = (params: typeof GetSkillParams.Type) =>
  Effect.gen(function* () {
    const catalog = yield* Catalog
    const snapshot = yield* catalog.snapshot
    const skill = yield* publishedSkillAt(snapshot, params.uri)
    const entry = yield* skillEntry(skill)
    return { resultType: "complete" as const, skill: entry, ...(yield* cacheHints) }
  })
