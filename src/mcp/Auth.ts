/**
 * Authentication of `serve --http --auth FILE`: which bearer tokens the server accepts, and the
 * `Caller` (src/Access.ts) each one makes: a name for the audit log and the skills it may see.
 *
 * The file (YAML; an unknown key is an error):
 *
 *     resource: "https://skills.example.com/mcp"   # optional: this server's URL as clients reach it
 *     tokens:                                       # static bearer tokens
 *       - { name: alice, sha256: "<64 hex>", allow: ["pdf"], deny: [], groups: [design] }
 *     groups:
 *       design: { allow: ["canvas-*"], deny: [] }
 *     jwt:                                          # access tokens of an OAuth 2.1 authorization server
 *       issuer: "https://auth.example.com/"
 *       jwks: "https://auth.example.com/.well-known/jwks.json"   # or a file, relative to this one
 *       audience: "https://skills.example.com/mcp"               # required
 *       groups_claim: groups                                      # optional
 *       allow: []                                                 # optional, and deny: see below
 *
 * What a caller sees: allow = its own allow patterns ∪ its groups' (none at all: every skill),
 * deny = its own ∪ its groups'; deny wins. A static token's own patterns are its entry's; a
 * JWT's are `jwt.allow`/`jwt.deny`, but only when its groups claim names no group of the file
 * (groups it names that the file does not define are ignored). A token naming an undefined
 * group is an error.
 *
 * Static tokens are known by their SHA-256 only, compared in constant time with every entry's.
 * JWTs are verified by `jose` (signature against the JWKS, issuer, audience, expiry and
 * not-before; `exp` is required). The file (and a JWKS file) is checked for changes every
 * second and read again; a file that does not decode leaves the last good one in force.
 */
import { createHash, timingSafeEqual } from "node:crypto"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import type { JSONWebKeySet, JWTPayload, JWTVerifyGetKey } from "jose"
import { createLocalJWKSet, createRemoteJWKSet, jwtVerify } from "jose"
import type { Caller } from "../Access.js"
import { globProblem, idFilter } from "../Access.js"
import { AuthFileUnusable, UsageError } from "../Errors.js"
import { isLoopback } from "../Settings.js"
import { readYaml } from "../skills/Yaml.js"

// ---------------------------------------------------------------------------------------------
// The file

/** A key that may be left out (but not given as null). */
const optional = <S extends Schema.Schema.Any>(schema: S) => Schema.optionalWith(schema, { exact: true })

const Patterns = optional(Schema.Array(Schema.String))

const TokenEntry = Schema.Struct({
  name: Schema.NonEmptyString,
  sha256: Schema.String,
  allow: Patterns,
  deny: Patterns,
  groups: optional(Schema.Array(Schema.String)),
})

const GroupEntry = Schema.Struct({ allow: Patterns, deny: Patterns })

const JwtEntry = Schema.Struct({
  issuer: Schema.NonEmptyString,
  /** An http(s) URL, or a file path (relative to the auth file's folder). */
  jwks: Schema.NonEmptyString,
  /** Required: without it, any token of the issuer, for any service, would be accepted. */
  audience: Schema.NonEmptyString,
  groups_claim: optional(Schema.NonEmptyString),
  allow: Patterns,
  deny: Patterns,
})

/** The skill-id patterns of a token, group or the jwt section. */
interface Rules {
  readonly allow?: ReadonlyArray<string> | undefined
  readonly deny?: ReadonlyArray<string> | undefined
}

const SHA256 = /^[0-9a-fA-F]{64}$/

/** Problems a field's type cannot say, each naming its entry (never a token or digest). */
const fileProblems = (file: {
  readonly resource?: string | undefined
  readonly tokens?: ReadonlyArray<typeof TokenEntry.Type> | undefined
  readonly groups?: Readonly<Record<string, typeof GroupEntry.Type>> | undefined
  readonly jwt?: typeof JwtEntry.Type | undefined
}): Array<string> => {
  const problems: Array<string> = []
  const patterns = (entry: string, rules: Rules) => {
    for (const [key, list] of [
      ["allow", rules.allow],
      ["deny", rules.deny],
    ] as const)
      for (const pattern of list ?? []) {
        const problem = globProblem(pattern)
        if (problem !== undefined) problems.push(`${entry}: ${key} pattern '${pattern}': ${problem}`)
      }
  }
  const groups = file.groups ?? {}
  const digests = new Map<string, string>()
  for (const token of file.tokens ?? []) {
    const entry = `token '${token.name}'`
    if (!SHA256.test(token.sha256)) {
      problems.push(
        `${entry}: sha256 must be the SHA-256 of the token as 64 hexadecimal digits (it has ${token.sha256.length} characters); e.g. printf %s "$TOKEN" | sha256sum`,
      )
    }
    const twin = digests.get(token.sha256.toLowerCase())
    if (twin !== undefined)
      problems.push(`${entry}: the same sha256 as token '${twin}'; one token, one entry`)
    digests.set(token.sha256.toLowerCase(), token.name)
    patterns(entry, token)
    for (const group of token.groups ?? []) {
      if (!Object.hasOwn(groups, group)) {
        const known = Object.keys(groups)
        problems.push(
          `${entry}: group '${group}' is not defined under groups (${known.length === 0 ? "none is" : `defined: ${known.join(", ")}`})`,
        )
      }
    }
  }
  for (const [name, group] of Object.entries(groups)) patterns(`group '${name}'`, group)
  if (file.jwt !== undefined) patterns("jwt", file.jwt)
  for (const [key, url] of [
    ["resource", file.resource],
    ["jwt.jwks", file.jwt?.jwks],
  ] as const) {
    if (url === undefined || (key === "jwt.jwks" && !/^https?:/i.test(url))) continue
    if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol))
      problems.push(`${key}: '${url}' is not an http(s) URL`)
    // Keys fetched in the clear could be anyone's: whoever is on the path could mint tokens.
    else if (
      key === "jwt.jwks" &&
      new URL(url).protocol === "http:" &&
      !isLoopback(new URL(url).hostname.replace(/^\[|\]$/g, ""))
    )
      problems.push(`${key}: '${url}' must be https (plain http is for a loopback address only)`)
  }
  // Clients ask the authorization server for tokens for `resource` (RFC 8707): tokens for
  // another audience would all be refused.
  if (file.resource !== undefined && file.jwt !== undefined && file.resource !== file.jwt.audience)
    problems.push(
      `resource '${file.resource}' differs from jwt.audience '${file.jwt.audience}': clients ask for tokens for the resource, which must be the audience`,
    )
  return problems
}

/** The auth file's content (`--auth FILE`). */
export const AuthFile = Schema.Struct({
  /** This server's resource URL as clients reach it (behind a TLS proxy: the https URL). */
  resource: optional(Schema.NonEmptyString),
  tokens: optional(Schema.Array(TokenEntry)),
  groups: optional(Schema.Record({ key: Schema.String, value: GroupEntry })),
  jwt: optional(JwtEntry),
  /** The shared secret of the git host's push webhook (`POST /hooks/git`, src/mcp/GitHook.ts). */
  git_webhook: optional(Schema.Struct({ secret: Schema.NonEmptyString })),
}).pipe(Schema.filter((file) => fileProblems(file)))
export type AuthFile = typeof AuthFile.Type

/** `tokens[0].sha256`: where an issue is in the file. */
const pathText = (at: ReadonlyArray<PropertyKey>) =>
  at
    .map((key, index) => (typeof key === "number" ? `[${key}]` : `${index === 0 ? "" : "."}${String(key)}`))
    .join("")

/** The file's content, or why it cannot be used (its problems, `; `-separated: usage errors are one line). */
export const decodeAuthFile = (text: string): Either.Either<AuthFile, string> => {
  const read = readYaml(text)
  if (!("data" in read))
    return Either.left(`${read.reason}${read.line === undefined ? "" : ` (line ${read.line})`}`)
  if (read.data === null || read.data === undefined) return Either.left("the file is empty")
  return Schema.decodeUnknownEither(AuthFile, { onExcessProperty: "error", errors: "all" })(read.data).pipe(
    Either.mapLeft((error) =>
      ParseResult.ArrayFormatter.formatErrorSync(error)
        .map((issue) =>
          issue.path.length === 0 ? issue.message : `${pathText(issue.path)}: ${issue.message}`,
        )
        .join("; "),
    ),
  )
}

// ---------------------------------------------------------------------------------------------
// Callers

const sortedUnion = (lists: ReadonlyArray<ReadonlyArray<string> | undefined>) =>
  [...new Set(lists.flatMap((list) => list ?? []))].sort()

/**
 * A caller and what it sees: allow = the union of every rule's allow (empty: every skill), deny
 * = the union of their deny; deny wins. The policy names the sorted patterns, so callers with
 * the same patterns share it.
 */
export const callerOf = (name: string, rules: ReadonlyArray<Rules>): Caller => {
  const allow = sortedUnion(rules.map((rule) => rule.allow))
  const deny = sortedUnion(rules.map((rule) => rule.deny))
  const sees = idFilter(allow, deny)
  return { name, sees, policy: sees === undefined ? undefined : JSON.stringify({ allow, deny }) }
}

/** The groups a JWT's claim names: an array of strings, or one space-separated string. */
export const claimedGroups = (claim: unknown): ReadonlyArray<string> => {
  if (typeof claim === "string") return claim.split(/\s+/).filter((group) => group.length > 0)
  if (Array.isArray(claim)) return claim.filter((group): group is string => typeof group === "string")
  return []
}

/**
 * What JWT callers see, by the groups of the file they name (per `jwt` section, so per version of
 * the file; 256 sets at most): made once per set of groups, not at every request.
 */
const jwtRules = new WeakMap<typeof JwtEntry.Type, Map<string, Caller>>()

/** The Caller of a verified JWT: named by its subject; see the module comment for its skills. */
export const jwtCaller = (file: AuthFile, jwt: typeof JwtEntry.Type, payload: JWTPayload): Caller => {
  const groups = file.groups ?? {}
  const claimed = claimedGroups(jwt.groups_claim === undefined ? undefined : payload[jwt.groups_claim])
  const known = [...new Set(claimed.filter((group) => Object.hasOwn(groups, group)))].sort()
  const name = typeof payload.sub === "string" && payload.sub !== "" ? payload.sub : "jwt"
  let made = jwtRules.get(jwt)
  if (made === undefined) {
    made = new Map()
    jwtRules.set(jwt, made)
  }
  const key = known.join("\n")
  let rules = made.get(key)
  if (rules === undefined) {
    const chosen = known.flatMap((group) => (groups[group] === undefined ? [] : [groups[group]]))
    rules = callerOf("", chosen.length > 0 ? chosen : [jwt])
    if (made.size < 256) made.set(key, rules)
  }
  return { ...rules, name }
}

// ---------------------------------------------------------------------------------------------
// Authenticating a request

/** What a request's `Authorization` header gives. */
export type Authenticated =
  | { readonly _tag: "Caller"; readonly caller: Caller }
  /** No bearer token: the client may not know it needs one. */
  | { readonly _tag: "Missing" }
  /** A token that is not accepted; `reason` is for the server's log (it never holds the token). */
  | { readonly _tag: "Invalid"; readonly reason: string }

/** A file in force: its content, with what checking a token needs made once. */
interface Loaded {
  readonly file: AuthFile
  readonly tokens: ReadonlyArray<{ readonly digest: Buffer; readonly caller: Caller }>
  readonly keys: JWTVerifyGetKey | undefined
}

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest()

/** The token of `Authorization: Bearer <token>` (RFC 6750's token68); undefined for any other header. */
const bearerToken = (header: string | undefined): string | undefined =>
  header === undefined ? undefined : /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(header)?.[1]

/** Who sends `header`, under `loaded`. */
const authenticateWith = async (loaded: Loaded, header: string | undefined): Promise<Authenticated> => {
  const token = bearerToken(header)
  if (token === undefined) return { _tag: "Missing" }
  // Every entry's digest is compared, each in constant time: the time taken does not say which
  // entry (nor how much of one) matched.
  const digest = sha256(token)
  let found: Caller | undefined
  for (const entry of loaded.tokens) {
    const equal = timingSafeEqual(entry.digest, digest)
    if (equal) found = entry.caller
  }
  if (found !== undefined) return { _tag: "Caller", caller: found }
  const jwt = loaded.file.jwt
  if (jwt === undefined || loaded.keys === undefined || token.split(".").length !== 3)
    return { _tag: "Invalid", reason: "not a known static token" }
  try {
    const { payload } = await jwtVerify(token, loaded.keys, {
      issuer: jwt.issuer,
      audience: jwt.audience,
      requiredClaims: ["exp"],
    })
    return { _tag: "Caller", caller: jwtCaller(loaded.file, jwt, payload) }
  } catch (error) {
    return {
      _tag: "Invalid",
      reason: `JWT refused: ${error instanceof Error ? error.message : String(error)}`,
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Loading and reloading

/** A JWKS file: `{ "keys": [ { "kty": ..., ... } ] }` (jose checks the keys themselves). */
const JwksFile = Schema.parseJson(
  Schema.Struct({
    keys: Schema.mutable(
      Schema.Array(
        Schema.Struct({ kty: Schema.String }, Schema.Record({ key: Schema.String, value: Schema.Unknown })),
      ),
    ),
  }),
)

/** Where the JWKS file is, when `jwks` names one (relative paths from the auth file's folder). */
const jwksFileOf = (authFile: string, file: AuthFile) =>
  file.jwt === undefined || /^https?:/i.test(file.jwt.jwks)
    ? undefined
    : path.resolve(path.dirname(authFile), file.jwt.jwks)

/** The keys that verify JWTs: fetched from the URL (and cached by jose), or read from the file now. */
const jwtKeys = (
  authFile: string,
  file: AuthFile,
): Effect.Effect<JWTVerifyGetKey | undefined, AuthFileUnusable> => {
  const jwks = file.jwt?.jwks
  if (jwks === undefined) return Effect.succeed(undefined)
  const local = jwksFileOf(authFile, file)
  if (local === undefined) return Effect.succeed(createRemoteJWKSet(new URL(jwks)))
  return Effect.tryPromise({
    try: () => fs.readFile(local, "utf8"),
    catch: (error) =>
      new AuthFileUnusable({
        reason: `cannot read the JWKS file ${local}: ${error instanceof Error ? error.message : String(error)}`,
      }),
  }).pipe(
    Effect.flatMap((text) =>
      Schema.decodeUnknown(JwksFile)(text).pipe(
        Effect.mapError(
          (error) =>
            new AuthFileUnusable({
              reason: `the JWKS file ${local} is not a JSON Web Key Set: ${ParseResult.TreeFormatter.formatErrorSync(error)}`,
            }),
        ),
      ),
    ),
    Effect.flatMap((set: JSONWebKeySet) =>
      Effect.try({
        try: () => createLocalJWKSet(set),
        catch: (error) =>
          new AuthFileUnusable({
            reason: `the JWKS file ${local}: ${error instanceof Error ? error.message : String(error)}`,
          }),
      }),
    ),
  )
}

/** Reads, decodes and prepares the auth file; the reason it cannot be used otherwise. */
const load = (authFile: string): Effect.Effect<Loaded, AuthFileUnusable> =>
  Effect.gen(function* () {
    const text = yield* Effect.tryPromise({
      try: () => fs.readFile(authFile, "utf8"),
      catch: (error) =>
        new AuthFileUnusable({
          reason: `cannot read it: ${error instanceof Error ? error.message : String(error)}`,
        }),
    })
    const file = yield* Either.match(decodeAuthFile(text), {
      onLeft: (reason) => Effect.fail(new AuthFileUnusable({ reason })),
      onRight: Effect.succeed,
    })
    const keys = yield* jwtKeys(authFile, file)
    const groups = file.groups ?? {}
    const tokens = (file.tokens ?? []).map((token) => ({
      digest: Buffer.from(token.sha256, "hex"),
      caller: callerOf(token.name, [token, ...(token.groups ?? []).flatMap((group) => groups[group] ?? [])]),
    }))
    return { file, tokens, keys }
  })

/** What identifies a version of a file: a change of any of these is a change of the file. */
const stampOf = (file: string | undefined) =>
  file === undefined
    ? Effect.succeed("")
    : Effect.promise(() =>
        fs.stat(file, { bigint: true }).then(
          (info) => `${info.dev}:${info.ino}:${info.size}:${info.mtimeNs}:${info.ctimeNs}`,
          () => "missing",
        ),
      )

/** The auth file in force, and what the HTTP server asks of it. */
export interface Auth {
  /** Who sends a request with this `Authorization` header, under the file in force. */
  readonly authenticate: (header: string | undefined) => Promise<Authenticated>
  /**
   * The RFC 9728 protected-resource metadata, for a request to `host` (its checked Host header):
   * the resource (`resource:`, else `jwt.audience`, else http://HOST/mcp), the authorization
   * server (the JWT issuer), and that tokens go in the Authorization header.
   */
  readonly metadata: (host: string) => Record<string, unknown>
  /**
   * The path the 401's challenge names for the metadata document (`/.well-known/oauth-protected-resource`
   * then the resource's path), so the server serves the document there too.
   */
  readonly metadataPath: (host: string) => string
  /** The `WWW-Authenticate` header of a 401 answer to a request to `host`. */
  readonly challenge: (host: string, outcome: Authenticated) => string
  /** Checks the file (and a JWKS file) for changes every second and reads it again; runs until interrupted. */
  readonly watch: Effect.Effect<never>
  /** What the file in force holds, for the start-up log. */
  readonly summary: () => string
  /** The git webhook's shared secret in the file in force, if it sets one. */
  readonly webhookSecret: () => string | undefined
}

/** This server's /mcp URL for a request to `host`: `resource:`, else `jwt.audience`, else http://HOST/mcp. */
const resourceOf = (file: AuthFile, host: string) =>
  file.resource ?? file.jwt?.audience ?? `http://${host}/mcp`

/**
 * Where the resource's RFC 9728 document is: `/.well-known/oauth-protected-resource` put between
 * the resource URL's origin and its path (RFC 9728 section 3.1), so the 401's challenge and the
 * document name the same URL.
 */
const metadataUrlOf = (file: AuthFile, host: string) => {
  const resource = URL.canParse(resourceOf(file, host)) ? new URL(resourceOf(file, host)) : undefined
  if (resource === undefined) return `http://${host}/.well-known/oauth-protected-resource`
  const pathname = resource.pathname === "/" ? "" : resource.pathname
  return `${resource.origin}/.well-known/oauth-protected-resource${pathname}`
}

/**
 * Reads `authFile` (an absolute path); a file that cannot be used is a usage error at start-up.
 * Later versions of the file replace it (see `watch`).
 */
export const makeAuth = (authFile: string): Effect.Effect<Auth, UsageError> =>
  Effect.gen(function* () {
    let loaded = yield* load(authFile).pipe(
      Effect.mapError(
        ({ reason }) => new UsageError({ reason: `The auth file ${authFile} cannot be used: ${reason}` }),
      ),
    )
    // The JWKS file is the one the file in force names (a new version may name another).
    const stamps = Effect.suspend(() =>
      Effect.all([stampOf(authFile), stampOf(jwksFileOf(authFile, loaded.file))]),
    ).pipe(Effect.map((parts) => parts.join("|")))
    let seen = yield* stamps
    const summary = () => {
      const tokens = loaded.tokens.length
      const jwt = loaded.file.jwt
      return `${tokens} static token${tokens === 1 ? "" : "s"}${jwt === undefined ? "" : `, JWTs of ${jwt.issuer} for ${jwt.audience}`}`
    }
    const reload = Effect.gen(function* () {
      const now = yield* stamps
      if (now === seen) return
      const next = yield* Effect.either(load(authFile))
      // Written again while it was read (maybe half written): read at the next check.
      if ((yield* stamps) !== now) return
      seen = now
      const read: Effect.Effect<Loaded, AuthFileUnusable> = Either.isLeft(next)
        ? Effect.fail(next.left)
        : Effect.succeed(next.right)
      yield* read.pipe(
        Effect.tap((read) =>
          Effect.sync(() => {
            loaded = read
          }),
        ),
        Effect.matchEffect({
          onSuccess: () => Effect.logInfo(`Auth file ${authFile} read again: ${summary()}`),
          onFailure: ({ reason }) =>
            Effect.logError(
              `Auth file ${authFile} changed but cannot be used, so the last good version stays in force: ${reason}`,
            ),
        }),
      )
    })
    return {
      authenticate: (header) => authenticateWith(loaded, header),
      metadata: (host) => ({
        resource: resourceOf(loaded.file, host),
        ...(loaded.file.jwt === undefined ? {} : { authorization_servers: [loaded.file.jwt.issuer] }),
        bearer_methods_supported: ["header"],
      }),
      metadataPath: (host) => new URL(metadataUrlOf(loaded.file, host)).pathname,
      challenge: (host, outcome) =>
        `Bearer ${outcome._tag === "Invalid" ? 'error="invalid_token", ' : ""}resource_metadata="${metadataUrlOf(loaded.file, host)}"`,
      watch: reload.pipe(Effect.repeat(Schedule.spaced("1 second")), Effect.zipRight(Effect.never)),
      summary,
      webhookSecret: () => loaded.file.git_webhook?.secret,
    } satisfies Auth
  })
