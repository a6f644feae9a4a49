/**
 * `skill://` URIs (MCP Skills extension, SEP-2640): building them from skills and files, and
 * parsing a client's URI into decoded path segments without trusting any of it.
 *
 * A published skill lives at `skill://<skill-path>/...`, where `<skill-path>` is its folder
 * path below the collection with the last segment replaced by the frontmatter `name`. For
 * older clients, `skill://<id>` reads SKILL.md and `skill://<id>/_manifest` its file list.
 */
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { SKILL_FILE } from "./Discovery.js"

const SCHEME = "skill://"
/** The server's own documents: single-segment URIs no skill can claim. */
export const PROMPT_XML_DOCUMENT = "prompt-xml"
export const DIAGNOSTICS_DOCUMENT = "diagnostics"
/** The catalog as `<available_skills>` XML. */
export const PROMPT_XML_URI = `${SCHEME}${PROMPT_XML_DOCUMENT}`
/** Skipped, shadowed and warned skills with the reasons, as JSON. */
export const DIAGNOSTICS_URI = `${SCHEME}${DIAGNOSTICS_DOCUMENT}`
/** The file list (sizes, digests) of a skill, for clients written before the extension. */
export const MANIFEST_SEGMENT = "_manifest"
/** The file a skill URI's path (below the skill) names: SKILL.md for the skill's own URI. */
export const fileOfPath = (rest: ReadonlyArray<string>): string =>
  rest.length === 0 ? SKILL_FILE : rest.join("/")
/** Longest URI accepted. */
export const MAX_URI_CHARS = 4096

/** The part of a skill URIs are made from. */
export interface UriSubject {
  readonly name: string
  /** Folder path below the collection (last segment: the skill folder). */
  readonly segments: ReadonlyArray<string>
}

/** `<skill-path>` as segments: the folder path with the last segment replaced by the name. */
export const skillPathOf = (skill: UriSubject): ReadonlyArray<string> => [
  ...skill.segments.slice(0, -1),
  skill.name,
]

export const pathKey = (segments: ReadonlyArray<string>): string => segments.join("/")

/** The lookup key of URI segments: NFC, so `café` matches however a client composed it. */
export const uriKey = (segments: ReadonlyArray<string>): string => {
  const key = pathKey(segments)
  // biome-ignore lint/suspicious/noControlCharactersInRegex: ASCII is what needs no normalising
  return /^[\x00-\x7f]*$/.test(key) ? key : key.normalize("NFC")
}

/**
 * A path segment as written in a URI: letters and digits of any script stay as they are, so
 * the last segment of a skill path is the skill's `name` itself (SEP-2640: it "MUST equal"
 * the name; `café` is not `caf%C3%A9`); anything else outside RFC 3986's unreserved set is
 * percent-encoded. Reading decodes either spelling.
 */
const encodeSegment = (segment: string) =>
  segment.replace(/[^\p{L}\p{N}\-._~]/gu, (char) => encodeURIComponent(char))

const encodeSegments = (segments: ReadonlyArray<string>) => segments.map(encodeSegment).join("/")

/**
 * `skill://<skill-path>/<file-path>`; `relative` is `/`-separated, and "" names the skill's
 * root directory resource, `skill://<skill-path>`.
 */
export const fileUri = (skillPath: ReadonlyArray<string>, relative: string): string => {
  const root = `${SCHEME}${encodeSegments(skillPath)}`
  return relative === "" ? root : `${root}/${encodeSegments(relative.split("/"))}`
}

/** `skill://<skill-path>/SKILL.md`. */
export const skillMdUri = (skillPath: ReadonlyArray<string>): string => fileUri(skillPath, "SKILL.md")

/**
 * Decoded segments of a `skill://` URI, or why it is not one this server could serve:
 * other schemes, queries, fragments, empty segments, undecodable escapes, and segments
 * that decode to `.`, `..`, or contain a separator or NUL are refused.
 */
export const parseSkillUri = (uri: string): Either.Either<ReadonlyArray<string>, string> => {
  if (uri.length > MAX_URI_CHARS) return Either.left(`the URI is longer than ${MAX_URI_CHARS} characters`)
  if (!uri.startsWith(SCHEME)) return Either.left("only skill:// URIs are served here")
  const rest = uri.slice(SCHEME.length)
  if (/[?#\s\\]/.test(rest) || /\p{Cc}/u.test(rest)) {
    return Either.left("skill:// URIs carry no query, fragment, whitespace, backslash or control character")
  }
  const raw = rest.split("/")
  const segments: Array<string> = []
  for (const part of raw) {
    if (part === "") return Either.left("empty path segment")
    let decoded: string
    try {
      decoded = decodeURIComponent(part)
    } catch {
      return Either.left("invalid percent-encoding")
    }
    if (decoded === "." || decoded === ".." || /[/\\\0]/.test(decoded)) {
      return Either.left("path segments may not be '.', '..' or contain separators")
    }
    segments.push(decoded)
  }
  return Either.right(segments)
}

/** Where a skill's files live in URI space. */
export interface Address {
  /** The URI path of the skill's folder: its `<skill-path>`, or its id for older clients. */
  readonly base: ReadonlyArray<string>
  /** True when `base` is the published `<skill-path>` (listed by `skills/list`). */
  readonly published: boolean
}

/** A URI space a skill owns. */
export type UriClaim<S> = Address & { readonly skill: S }

/** Who owns which URI space (src/catalog/Publication.ts decides). */
export interface UriSpace<S> {
  /** Every claim by its key (`uriKey` of its base): no key is a prefix of another. */
  readonly claims: ReadonlyMap<string, UriClaim<S>>
  /** The most segments any claim's base has. */
  readonly deepest: number
}

/** What a `skill://` URI names. */
export type UriTarget<S> =
  | { readonly _tag: "PromptXml" }
  | { readonly _tag: "Diagnostics" }
  | (UriClaim<S> & {
      readonly _tag: "Skill"
      /** Path segments inside the skill ([] for the skill itself). */
      readonly rest: ReadonlyArray<string>
    })

/**
 * Resolves decoded URI segments: `prompt-xml` and `diagnostics` (unless `documents` is false:
 * a directory read looks for folders only), then the claim whose base is a prefix of them. No
 * claim's base is a prefix of another's, so at most one matches.
 */
export const resolveSegments = <S>(
  space: UriSpace<S>,
  segments: ReadonlyArray<string>,
  documents = true,
): UriTarget<S> | undefined => {
  if (documents && segments.length === 1) {
    if (segments[0] === PROMPT_XML_DOCUMENT) return { _tag: "PromptXml" }
    if (segments[0] === DIAGNOSTICS_DOCUMENT) return { _tag: "Diagnostics" }
  }
  // Longest prefix first, no longer than the deepest claim. The key of each shorter prefix is
  // the longer one's up to its last "/": NFC never moves a "/", and no segment holds one.
  let length = Math.min(segments.length, space.deepest)
  let key = uriKey(segments.slice(0, length))
  for (; length > 0; length--) {
    const claim = space.claims.get(key)
    if (claim !== undefined) return { _tag: "Skill", ...claim, rest: segments.slice(length) }
    key = key.slice(0, key.lastIndexOf("/"))
  }
  return undefined
}

/** A URI parameter of a request: at most MAX_URI_CHARS characters (longer is -32602, unread). */
export const UriString = Schema.String.pipe(Schema.maxLength(MAX_URI_CHARS))
