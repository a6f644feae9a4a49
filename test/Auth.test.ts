import * as fs from "node:fs/promises"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { SignJWT, UnsecuredJWT } from "jose"
import type { Caller } from "../src/Access.js"
import type { Auth, Authenticated } from "../src/mcp/Auth.js"
import { callerOf, claimedGroups, decodeAuthFile, jwtCaller, makeAuth } from "../src/mcp/Auth.js"
import { AUDIENCE, ISSUER, makeSigningKey, serveJwks, sha256, signJwt } from "./support/jwt.js"
import { tempTree } from "./support/tree.js"

const DIGEST = sha256("alice-token")

/** Why the text does not decode (fails the test when it does). */
const problem = (text: string): string =>
  Either.match(decodeAuthFile(text), {
    onLeft: (reason) => reason,
    onRight: () => expect.fail(`decoded:\n${text}`),
  })

/** The caller of a request with this Authorization header (fails the test when refused). */
const callerFor = async (auth: Auth, header: string): Promise<Caller> => {
  const outcome = await auth.authenticate(header)
  if (outcome._tag !== "Caller") return expect.fail(`refused (${outcome._tag}): ${JSON.stringify(outcome)}`)
  return outcome.caller
}

const tagOf = (outcome: Authenticated) => outcome._tag

const seen = (caller: Caller, ids: ReadonlyArray<string>) =>
  ids.filter((id) => caller.sees === undefined || caller.sees(id))

const IDS = ["pdf", "docx-a", "canvas-x", "brand-y", "internal-z"]

describe("the auth file", () => {
  it("decodes the issue's example", () => {
    const file = decodeAuthFile(`
tokens:
  - name: alice
    sha256: "${DIGEST}"
    allow: ["pdf", "docx*"]
    deny: []
    groups: [design]
groups:
  design: { allow: ["canvas-*", "brand-*"] }
jwt:
  issuer: "https://auth.example.com/"
  jwks: "https://auth.example.com/.well-known/jwks.json"
  audience: "https://skills.example.com/mcp"
  groups_claim: groups
`)
    expect(Either.isRight(file)).toBe(true)
  })

  it("names an unknown key and where it is", () => {
    expect(problem(`tokens:\n  - name: a\n    sha256: "${DIGEST}"\n    alow: [x]\n`)).toContain(
      "tokens[0].alow: is unexpected",
    )
    expect(problem("token: []\n")).toContain("token: is unexpected")
    expect(problem(`groups:\n  g: { allow: [x], denny: [] }\n`)).toContain("groups.g.denny: is unexpected")
  })

  it("takes the git webhook's secret, and names a misspelt key in it", () => {
    const file = decodeAuthFile(`git_webhook: { secret: "s3cret" }\n`)
    expect(Either.getOrThrow(file).git_webhook).toEqual({ secret: "s3cret" })
    expect(problem(`git_webhook: { secrets: "s3cret" }\n`)).toContain("git_webhook.secrets: is unexpected")
    expect(problem(`git_webhook: { secret: "" }\n`)).toContain("git_webhook.secret")
  })

  it("names the entry of a bad sha256, and never repeats the value", () => {
    const reason = problem(`tokens:\n  - name: bob\n    sha256: "the-token-itself"\n`)
    expect(reason).toContain("token 'bob': sha256 must be the SHA-256 of the token as 64 hexadecimal digits")
    expect(reason).not.toContain("the-token-itself")
  })

  it("names the entry and pattern of a bad glob, and an undefined group", () => {
    expect(problem(`tokens:\n  - { name: a, sha256: "${DIGEST}", deny: ["x/y"] }\n`)).toContain(
      "token 'a': deny pattern 'x/y': skill ids have no '/'",
    )
    expect(problem(`groups:\n  ops: { allow: ["[a-"] }\n`)).toContain("group 'ops': allow pattern '[a-'")
    expect(
      problem(`tokens:\n  - { name: a, sha256: "${DIGEST}", groups: [desing] }\ngroups: { design: {} }\n`),
    ).toContain("token 'a': group 'desing' is not defined under groups (defined: design)")
  })

  it("refuses keys fetched over plain http (but from a loopback address), and a resource that is not the audience", () => {
    const jwt = (jwks: string) => `jwt: { issuer: "${ISSUER}", jwks: "${jwks}", audience: "${AUDIENCE}" }\n`
    expect(problem(jwt("http://auth.example.com/jwks.json"))).toContain(
      "jwt.jwks: 'http://auth.example.com/jwks.json' must be https",
    )
    for (const local of [
      "http://127.0.0.1:9/jwks.json",
      "http://[::1]:9/jwks.json",
      "https://auth.example.com/jwks.json",
    ])
      expect(Either.isRight(decodeAuthFile(jwt(local))), local).toBe(true)
    expect(problem(`resource: "https://other.example.com/mcp"\n${jwt("keys.json")}`)).toContain(
      `resource 'https://other.example.com/mcp' differs from jwt.audience '${AUDIENCE}'`,
    )
  })

  it("refuses two entries of one token, a jwt without audience, a bad URL, an empty file", () => {
    expect(
      problem(
        `tokens:\n  - { name: a, sha256: "${DIGEST}" }\n  - { name: b, sha256: "${DIGEST.toUpperCase()}" }\n`,
      ),
    ).toContain("token 'b': the same sha256 as token 'a'")
    expect(problem(`jwt: { issuer: "${ISSUER}", jwks: keys.json }\n`)).toContain("jwt.audience: is missing")
    expect(problem(`resource: "ftp://x/mcp"\n`)).toContain("resource: 'ftp://x/mcp' is not an http(s) URL")
    expect(problem("")).toContain("empty")
    expect(problem("tokens: [ {\n")).toContain("YAML error")
  })
})

describe("a caller's skills", () => {
  it("allows the union of the allow patterns (none: every skill); deny wins", () => {
    const everything = callerOf("a", [{}])
    expect(everything.sees).toBeUndefined()
    expect(everything.policy).toBeUndefined()
    const caller = callerOf("a", [{ allow: ["pdf", "docx*"] }, { allow: ["canvas-*"], deny: ["docx-a"] }])
    expect(seen(caller, IDS)).toEqual(["pdf", "canvas-x"])
    const denyOnly = callerOf("b", [{ deny: ["internal-*"] }])
    expect(seen(denyOnly, IDS)).toEqual(["pdf", "docx-a", "canvas-x", "brand-y"])
  })

  it("names equal patterns by one policy, whatever their order and repeats", () => {
    const one = callerOf("a", [{ allow: ["b", "a"] }, { deny: ["z"] }])
    const two = callerOf("b", [{ allow: ["a"], deny: ["z"] }, { allow: ["b", "a"] }])
    expect(one.policy).toBeDefined()
    expect(one.policy).toBe(two.policy)
    expect(callerOf("c", [{ allow: ["a"] }]).policy).not.toBe(one.policy)
  })

  it("reads a groups claim as an array or a space-separated string", () => {
    expect(claimedGroups(["a", 1, "b"])).toEqual(["a", "b"])
    expect(claimedGroups(" a  b ")).toEqual(["a", "b"])
    expect(claimedGroups(undefined)).toEqual([])
    expect(claimedGroups({ a: 1 })).toEqual([])
  })

  it("gives a JWT its groups' skills, or the jwt defaults when it names no known group", () => {
    const file = Either.getOrThrow(
      decodeAuthFile(`
groups:
  design: { allow: ["canvas-*"] }
  legal: { allow: ["docx*"], deny: ["docx-a"] }
jwt: { issuer: "${ISSUER}", jwks: keys.json, audience: "${AUDIENCE}", groups_claim: roles, allow: ["pdf"] }
`),
    )
    const jwt = file.jwt
    if (jwt === undefined) return expect.fail("no jwt section")
    const designer = jwtCaller(file, jwt, { sub: "dana", roles: "design unknown" })
    expect(designer.name).toBe("dana")
    expect(seen(designer, IDS)).toEqual(["canvas-x"])
    expect(seen(jwtCaller(file, jwt, { sub: "x", roles: ["design", "legal"] }), IDS)).toEqual(["canvas-x"])
    const nobody = jwtCaller(file, jwt, { roles: ["unknown"] })
    expect(nobody.name).toBe("jwt")
    expect(seen(nobody, IDS)).toEqual(["pdf"])
    const { allow: _allow, ...open } = jwt
    expect(jwtCaller(file, open, {}).sees).toBeUndefined()
  })
})

describe("makeAuth", () => {
  it.scoped("accepts a static token by its SHA-256, with its own and its groups' patterns", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({
        "auth.yaml": `
tokens:
  - { name: alice, sha256: "${DIGEST}", allow: [pdf], groups: [design] }
  - { name: ci, sha256: "${sha256("ci-token")}" }
groups:
  design: { allow: ["canvas-*"], deny: [canvas-x] }
`,
      })
      const auth = yield* makeAuth(path.join(root, "auth.yaml"))
      const alice = yield* Effect.promise(() => callerFor(auth, "Bearer alice-token"))
      expect(alice.name).toBe("alice")
      expect(seen(alice, [...IDS, "canvas-w"])).toEqual(["pdf", "canvas-w"])
      const ci = yield* Effect.promise(() => callerFor(auth, "bearer ci-token"))
      expect(ci).toEqual({ name: "ci", sees: undefined, policy: undefined })
      expect(tagOf(yield* Effect.promise(() => auth.authenticate(undefined)))).toBe("Missing")
      expect(tagOf(yield* Effect.promise(() => auth.authenticate("Basic YWxpY2U6eA==")))).toBe("Missing")
      expect(tagOf(yield* Effect.promise(() => auth.authenticate("Bearer alice-token2")))).toBe("Invalid")
      expect(tagOf(yield* Effect.promise(() => auth.authenticate("Bearer ")))).toBe("Missing")
      expect(auth.metadata("127.0.0.1:8080")).toEqual({
        resource: "http://127.0.0.1:8080/mcp",
        bearer_methods_supported: ["header"],
      })
      expect(auth.challenge("127.0.0.1:8080", { _tag: "Missing" })).toBe(
        'Bearer resource_metadata="http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp"',
      )
      expect(auth.challenge("127.0.0.1:8080", { _tag: "Invalid", reason: "x" })).toBe(
        'Bearer error="invalid_token", resource_metadata="http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp"',
      )
    }),
  )

  it.scoped("verifies JWTs against a JWKS file: signature, issuer, audience, expiry, not-before", () =>
    Effect.gen(function* () {
      const key = yield* Effect.promise(() => makeSigningKey())
      const other = yield* Effect.promise(() => makeSigningKey())
      const root = yield* tempTree({
        "keys/jwks.json": JSON.stringify(key.jwks),
        "auth.yaml": `
resource: "${AUDIENCE}"
groups: { design: { allow: ["canvas-*"] } }
jwt: { issuer: "${ISSUER}", jwks: keys/jwks.json, audience: "${AUDIENCE}", groups_claim: groups }
`,
      })
      const auth = yield* makeAuth(path.join(root, "auth.yaml"))
      const bearer = (jwt: string) => `Bearer ${jwt}`
      const sign = (...args: Parameters<typeof signJwt>) => Effect.promise(() => signJwt(...args))
      const outcome = (jwt: string) => Effect.promise(() => auth.authenticate(bearer(jwt)))
      const valid = yield* sign(key, { sub: "dana", groups: ["design"] })
      const dana = yield* Effect.promise(() => callerFor(auth, bearer(valid)))
      expect(dana.name).toBe("dana")
      expect(seen(dana, IDS)).toEqual(["canvas-x"])
      const now = Math.floor(Date.now() / 1000)
      const refused = {
        expired: yield* sign(key, { sub: "d" }, { expiresAt: now - 60 }),
        "wrong audience": yield* sign(key, { sub: "d" }, { audience: "https://elsewhere.example/mcp" }),
        "wrong issuer": yield* sign(key, { sub: "d" }, { issuer: "https://evil.example/" }),
        "bad signature": yield* sign(other, { sub: "d" }),
        "not yet valid": yield* sign(key, { sub: "d" }, { notBefore: now + 3600 }),
        "without expiry": yield* sign(key, { sub: "d" }, { expiresAt: null }),
        unsigned: new UnsecuredJWT({ sub: "d" })
          .setIssuer(ISSUER)
          .setAudience(AUDIENCE)
          .setExpirationTime("1h")
          .encode(),
        "signed with a shared secret": yield* Effect.promise(() =>
          new SignJWT({ sub: "d" })
            .setProtectedHeader({ alg: "HS256", kid: "test-key" })
            .setIssuer(ISSUER)
            .setAudience(AUDIENCE)
            .setExpirationTime("1h")
            .sign(new TextEncoder().encode("a-shared-secret-of-at-least-32-bytes!")),
        ),
        tampered: `${valid.split(".")[0]}.${Buffer.from(JSON.stringify({ sub: "root", iss: ISSUER, aud: AUDIENCE, exp: now + 60 })).toString("base64url")}.${valid.split(".")[2]}`,
      }
      for (const [what, jwt] of Object.entries(refused)) {
        const result = yield* outcome(jwt)
        expect(result._tag, what).toBe("Invalid")
        if (result._tag === "Invalid") expect(result.reason, what).not.toContain(jwt)
      }
      expect(auth.metadata("127.0.0.1:1")).toEqual({
        resource: AUDIENCE,
        authorization_servers: [ISSUER],
        bearer_methods_supported: ["header"],
      })
      expect(auth.challenge("127.0.0.1:1", { _tag: "Missing" })).toBe(
        `Bearer resource_metadata="https://skills.test.example/.well-known/oauth-protected-resource/mcp"`,
      )
    }),
  )

  it.scoped("fetches the keys of a JWKS URL", () =>
    Effect.gen(function* () {
      const key = yield* Effect.promise(() => makeSigningKey())
      const jwks = yield* Effect.acquireRelease(
        Effect.promise(() => serveJwks(key.jwks)),
        (server) => Effect.promise(() => server.close()),
      )
      const root = yield* tempTree({
        "auth.yaml": `jwt: { issuer: "${ISSUER}", jwks: "${jwks.url}", audience: "${AUDIENCE}" }\n`,
      })
      const auth = yield* makeAuth(path.join(root, "auth.yaml"))
      const jwt = yield* Effect.promise(() => signJwt(key, { sub: "erin" }))
      const erin = yield* Effect.promise(() => callerFor(auth, `Bearer ${jwt}`))
      expect(erin).toEqual({ name: "erin", sees: undefined, policy: undefined })
      expect(jwks.fetches()).toBeGreaterThan(0)
      expect(auth.metadata("h:1")).toMatchObject({ resource: AUDIENCE, authorization_servers: [ISSUER] })
    }),
  )

  it.scoped("is a usage error naming the file when the file cannot be used", () =>
    Effect.gen(function* () {
      const root = yield* tempTree({
        "bad.yaml": `tokens:\n  - { name: a, sha256: nope }\n`,
        "jwks-bad.yaml": `jwt: { issuer: "${ISSUER}", jwks: missing.json, audience: "${AUDIENCE}" }\n`,
      })
      for (const [file, expected] of [
        ["bad.yaml", "token 'a': sha256 must be"],
        ["jwks-bad.yaml", "cannot read the JWKS file"],
        ["absent.yaml", "cannot read it"],
      ] as const) {
        const error = yield* Effect.flip(makeAuth(path.join(root, file)))
        expect(error._tag).toBe("UsageError")
        expect(error.message).toContain(`The auth file ${path.join(root, file)} cannot be used`)
        expect(error.message).toContain(expected)
      }
      yield* Effect.promise(() =>
        fs.writeFile(
          path.join(root, "keys.json"),
          '{"keys": [{"kty": "oct", "kid": "shared", "k": "c2VjcmV0"}]}',
        ),
      )
      yield* Effect.promise(() =>
        fs.writeFile(
          path.join(root, "oct.yaml"),
          `jwt: { issuer: "${ISSUER}", jwks: keys.json, audience: "${AUDIENCE}" }\n`,
        ),
      )
      // A JWKS of secret keys decodes; no JWT can use it (jose takes public keys only), not even
      // one signed with that very key.
      const auth = yield* makeAuth(path.join(root, "oct.yaml"))
      const now = Math.floor(Date.now() / 1000)
      const signed = yield* Effect.promise(() =>
        new SignJWT({ sub: "mallory" })
          .setProtectedHeader({ alg: "HS256", kid: "shared" })
          .setIssuer(ISSUER)
          .setAudience(AUDIENCE)
          .setExpirationTime(now + 60)
          .sign(new TextEncoder().encode("secret")),
      )
      const outcome = yield* Effect.promise(() => auth.authenticate(`Bearer ${signed}`))
      expect(outcome._tag).toBe("Invalid")
      if (outcome._tag === "Invalid") expect(outcome.reason).toContain("JWT refused")
    }),
  )
})
