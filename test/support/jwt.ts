/**
 * Test credentials for `--auth`: a signing key made in the test (jose), its public JWKS, JWTs
 * signed with it, static tokens with their SHA-256, and a tiny JWKS server on 127.0.0.1.
 */
import { createHash } from "node:crypto"
import * as http from "node:http"
import type { CryptoKey, JWK, JWTPayload } from "jose"
import { exportJWK, generateKeyPair, SignJWT } from "jose"

export const ISSUER = "https://auth.test.example/"
export const AUDIENCE = "https://skills.test.example/mcp"

/** The SHA-256 of a static token, as the auth file holds it. */
export const sha256 = (token: string) => createHash("sha256").update(token, "utf8").digest("hex")

export interface SigningKey {
  readonly privateKey: CryptoKey
  /** `{ keys: [publicJwk] }`, as a JWKS file or endpoint serves it. */
  readonly jwks: { readonly keys: ReadonlyArray<JWK> }
}

export const makeSigningKey = async (kid = "test-key"): Promise<SigningKey> => {
  const { privateKey, publicKey } = await generateKeyPair("ES256")
  const jwk = { ...(await exportJWK(publicKey)), kid, alg: "ES256", use: "sig" }
  return { privateKey, jwks: { keys: [jwk] } }
}

/**
 * A JWT signed by `key`: issued by ISSUER for AUDIENCE, valid for an hour, unless `options`
 * say otherwise (times in seconds since the epoch).
 */
export const signJwt = (
  key: SigningKey,
  claims: JWTPayload = {},
  options: {
    readonly issuer?: string
    readonly audience?: string
    /** null: no `exp` at all. */
    readonly expiresAt?: number | null
    readonly notBefore?: number
    readonly kid?: string
  } = {},
): Promise<string> => {
  const now = Math.floor(Date.now() / 1000)
  const jwt = new SignJWT(claims)
    .setProtectedHeader({ alg: "ES256", kid: options.kid ?? "test-key" })
    .setIssuer(options.issuer ?? ISSUER)
    .setAudience(options.audience ?? AUDIENCE)
    .setIssuedAt(now)
  if (options.expiresAt !== null) jwt.setExpirationTime(options.expiresAt ?? now + 3600)
  if (options.notBefore !== undefined) jwt.setNotBefore(options.notBefore)
  return jwt.sign(key.privateKey)
}

/** Serves `jwks` at http://127.0.0.1:PORT/jwks.json until `close`; counts the fetches. */
export const serveJwks = (
  jwks: SigningKey["jwks"],
): Promise<{ readonly url: string; readonly fetches: () => number; readonly close: () => Promise<void> }> =>
  new Promise((resolve) => {
    let fetches = 0
    const server = http.createServer((req, res) => {
      if (req.url !== "/jwks.json") return void res.writeHead(404).end()
      fetches++
      res.writeHead(200, { "content-type": "application/json" })
      res.end(JSON.stringify(jwks))
    })
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      resolve({
        url: `http://127.0.0.1:${port}/jwks.json`,
        fetches: () => fetches,
        close: () =>
          new Promise((done) => {
            server.closeAllConnections()
            server.close(() => done())
          }),
      })
    })
  })
