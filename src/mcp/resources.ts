/**
 * Resources: every file of a skill at `skill://<skill-path>/<file-path>` (text as `text`,
 * binary as base64 `blob`), each skill's SKILL.md listed, `skill://prompt-xml` (the catalog
 * for system prompts), `resources/directory/read`, and the URIs of clients written before
 * the Skills extension (`skill://<id>`, `skill://<id>/_manifest`). Unknown or escaping URIs
 * are JSON-RPC -32602, under the same containment rules as read_skill_file.
 */
import type { Resource, ResourceTemplate } from "@modelcontextprotocol/sdk/types.js"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { Catalog } from "../catalog/Catalog.js"
import { decodeCursor, encodeCursor, paginate } from "../catalog/Paging.js"
import type { Skill, Snapshot } from "../catalog/Snapshot.js"
import { perSnapshot } from "../catalog/Snapshot.js"
import { echo, InvalidArgument, UnknownUri } from "../Errors.js"
import { mimeTypeOf } from "../files/MimeTypes.js"
import { kindOf } from "../files/Reading.js"
import { SkillFiles } from "../files/SkillFiles.js"
import type { CatalogEntry } from "../instructions.js"
import { renderAvailableSkills } from "../instructions.js"
import { diagnosticsDocument } from "../report/CatalogReport.js"
import { defaults, Settings } from "../Settings.js"
import type { Address, UriTarget } from "../skills/Uris.js"
import {
  DIAGNOSTICS_URI,
  fileOfPath,
  fileUri,
  MANIFEST_SEGMENT,
  PROMPT_XML_URI,
  parseSkillUri,
  resolveSegments,
  skillMdUri,
  UriString,
} from "../skills/Uris.js"
import type { ListParams } from "./Run.js"
import { cacheHints } from "./skills.js"

export const UriParams = Schema.Struct({ uri: UriString })
export const DirectoryReadParams = Schema.Struct({
  uri: UriString,
  cursor: Schema.optional(Schema.String),
})

/** Any file of any skill; `skill` is a `<skill-path>` (or an id), `path` a file path inside it. */
export const SKILL_FILE_TEMPLATE = "skill://{+skill}/{+path}"
const DIRECTORY_MIME = "inode/directory"

/** Where a skill's files live in URI space (src/catalog/Publication.ts decides); undefined for none. */
export const addressOf = (snapshot: Snapshot, skill: Skill): Address | undefined =>
  snapshot.addresses.get(skill)

/**
 * The URI of a skill's SKILL.md as a resource: `skill://<skill-path>/SKILL.md`, or
 * `skill://<id>`; undefined for a skill no `skill://` URI leads to (see `addressOf`).
 */
export const skillResourceUri = (snapshot: Snapshot, skill: Skill): string | undefined => {
  const address = addressOf(snapshot, skill)
  if (address === undefined) return undefined
  return address.published ? skillMdUri(address.base) : fileUri(address.base, "")
}

/** What a client's URI names, or -32602 saying why nothing (see `resolveSegments`). */
export const resolveUri = (
  snapshot: Snapshot,
  uri: string,
  documents = true,
): Effect.Effect<UriTarget<Skill>, UnknownUri> => {
  const segments = parseSkillUri(uri)
  if (Either.isLeft(segments)) return Effect.fail(new UnknownUri({ uri, reason: segments.left }))
  const target = resolveSegments(snapshot, segments.right, documents)
  return target === undefined
    ? Effect.fail(
        new UnknownUri({ uri, reason: "no skill is served there; see resources/list or skills/list" }),
      )
    : Effect.succeed(target)
}

/** Catalog entries with each skill's URI (for hosts), once per snapshot. */
export const catalogEntriesWithUris = perSnapshot(
  (snapshot): ReadonlyArray<CatalogEntry> =>
    snapshot.skills.map((skill): CatalogEntry => {
      const uri = skillResourceUri(snapshot, skill)
      return {
        id: skill.id,
        name: skill.name,
        description: skill.description,
        ...(uri === undefined ? {} : { uri }),
        rootIndex: skill.rootIndex,
        diagnostics: skill.diagnostics,
      }
    }),
)

/** The catalog as `<available_skills>` XML with each skill's URI, for hosts' system prompts. */
const promptXml = (snapshot: Snapshot, budget: number): string =>
  renderAvailableSkills(catalogEntriesWithUris(snapshot), budget > 0 ? budget : defaults.catalogBudget)

const promptXmlResource: Resource = {
  uri: PROMPT_XML_URI,
  name: "prompt-xml",
  title: "Skills catalog for system prompts",
  description: "The available skills as <available_skills> XML, to place in a system prompt.",
  mimeType: "application/xml",
}

const diagnosticsResource: Resource = {
  uri: DIAGNOSTICS_URI,
  name: "diagnostics",
  title: "Skills that are not served, and why",
  description:
    "JSON: the skills folders' skipped, shadowed and warned skills with the reasons, as the server sees them now.",
  mimeType: "application/json",
}

/** The text of `skill://diagnostics`. */
export const diagnosticsText = (
  snapshot: Snapshot,
  files: Pick<SkillFiles, "leftOut" | "withheld">,
): string => JSON.stringify(diagnosticsDocument(snapshot, files.leftOut(), files.withheld()), null, 2)

/**
 * Every resource `resources/list` pages through, once per snapshot: the two catalog documents,
 * then each skill's SKILL.md at its URI (a skill no skill:// URI leads to is left out).
 */
const resourcesOf = perSnapshot(
  (snapshot): ReadonlyArray<Resource> => [
    promptXmlResource,
    diagnosticsResource,
    ...snapshot.skills.flatMap((skill): Array<Resource> => {
      const address = addressOf(snapshot, skill)
      const uri = skillResourceUri(snapshot, skill)
      if (address === undefined || uri === undefined) return []
      return [
        {
          uri,
          name: address.published ? skill.name : skill.id,
          ...(address.published || skill.name === skill.id ? {} : { title: skill.name }),
          description: skill.description,
          mimeType: "text/markdown",
          size: skill.fingerprint.size,
        },
      ]
    }),
  ],
)

export const listResources = (params: typeof ListParams.Type) =>
  Effect.gen(function* () {
    const catalog = yield* Catalog
    const { protocolPageSize } = yield* Settings
    const snapshot = yield* catalog.snapshot
    const { page: resources, nextCursor } = yield* paginate(
      resourcesOf(snapshot),
      protocolPageSize,
      params.cursor,
    )
    return { resources, ...(nextCursor === undefined ? {} : { nextCursor }) }
  })

export const resourceTemplates = (): Array<ResourceTemplate> => [
  {
    uriTemplate: SKILL_FILE_TEMPLATE,
    name: "skill-file",
    title: "A file of a skill",
    description:
      "Any file of a skill: skill is the skill's path (see resources/list), path the file inside it, e.g. references/guide.md.",
  },
]

export const readResource = (params: typeof UriParams.Type) =>
  Effect.gen(function* () {
    const catalog = yield* Catalog
    const files = yield* SkillFiles
    const settings = yield* Settings
    const snapshot = yield* catalog.snapshot
    const target = yield* resolveUri(snapshot, params.uri)
    const contents = yield* Effect.gen(function* () {
      if (target._tag === "Diagnostics") {
        return {
          uri: params.uri,
          mimeType: "application/json",
          text: diagnosticsText(snapshot, files),
        }
      }
      if (target._tag === "PromptXml") {
        return {
          uri: params.uri,
          mimeType: "application/xml",
          text: promptXml(snapshot, settings.catalogBudget),
        }
      }
      const { skill, rest } = target
      if (rest.length === 1 && rest[0] === MANIFEST_SEGMENT) {
        const manifest = yield* files.manifest(skill)
        const json = {
          skill: skill.id,
          files: manifest.files.map((file) => ({ path: file.path, size: file.size, hash: file.digest })),
        }
        return { uri: params.uri, mimeType: "application/json", text: JSON.stringify(json, null, 2) }
      }
      const entry = yield* files.readEntry(skill, fileOfPath(rest))
      if (entry._tag === "Folder") {
        return yield* new InvalidArgument({
          argument: "uri",
          reason: `${echo(params.uri)} is a folder; list it with resources/directory/read`,
        })
      }
      const { bytes } = entry.content
      const { binary, mimeType } = kindOf(entry.content)
      return binary
        ? { uri: params.uri, mimeType, blob: Buffer.from(bytes).toString("base64") }
        : { uri: params.uri, mimeType, text: Buffer.from(bytes).toString("utf8") }
    })
    return { contents: [contents], resultType: "complete" as const, ...(yield* cacheHints) }
  })

export const readDirectory = (params: typeof DirectoryReadParams.Type) =>
  Effect.gen(function* () {
    const catalog = yield* Catalog
    const files = yield* SkillFiles
    const { protocolPageSize } = yield* Settings
    const snapshot = yield* catalog.snapshot
    // A folder's URI may end with one slash (`skill://pdf/references/`).
    const folderUri = /[^/]\/$/.test(params.uri) ? params.uri.slice(0, -1) : params.uri
    const target = yield* resolveUri(snapshot, folderUri, false)
    const notDirectory = new UnknownUri({ uri: params.uri, reason: "it is not a directory resource" })
    if (target._tag !== "Skill") return yield* notDirectory
    const start = params.cursor === undefined ? 0 : yield* decodeCursor(params.cursor)
    const { entries, more } = yield* files
      .children(target.skill, target.rest.join("/"), start, protocolPageSize)
      .pipe(
        Effect.catchTags({
          InvalidArgument: () => Effect.fail(notDirectory),
          FileNotFound: () => Effect.fail(notDirectory),
        }),
      )
    const resources = entries.map(
      (entry): Resource => ({
        uri: fileUri(target.base, entry.path),
        name: entry.path.slice(entry.path.lastIndexOf("/") + 1),
        mimeType: entry.type === "directory" ? DIRECTORY_MIME : mimeTypeOf(entry.path),
        ...(entry.size === undefined ? {} : { size: entry.size }),
      }),
    )
    return {
      resultType: "complete" as const,
      resources,
      ...(more ? { nextCursor: encodeCursor(start + protocolPageSize) } : {}),
    }
  })
