/**
 * `POST /hooks/git` (HTTP mode): a push webhook makes the git sources that follow a branch fetch
 * at once instead of at their next poll. Authenticated with a shared secret, GitHub's way
 * (`X-Hub-Signature-256: sha256=<HMAC-SHA256 of the body>`) or GitLab's (`X-Gitlab-Token`),
 * checked by `webhookTokenMatches` and `webhookSignatureMatches` (src/sources/Git.ts). The
 * secret is the `git_webhook.secret` of the `--auth` file in force (read again when it changes);
 * without it, or without git sources, the route is not served.
 * The answer (202) does not wait for the fetch: a webhook sender gives up after a few seconds.
 */
import { createHmac } from "node:crypto"
import type * as http from "node:http"
import * as Effect from "effect/Effect"
import * as Runtime from "effect/Runtime"
import { GitSources, webhookSignatureMatches, webhookTokenMatches } from "../sources/Git.js"

/** Largest webhook body read (a push event of many commits stays far below). */
const MAX_BODY_BYTES = 5 * 1024 * 1024

type Hook = (req: http.IncomingMessage, res: http.ServerResponse) => void

/**
 * Answers `status`; with `close`, the connection is closed after the answer, so that a body not
 * read (refused before it) is never read at all.
 */
const answer = (res: http.ServerResponse, status: number, body: Record<string, unknown>, close = false) => {
  if (res.headersSent) return void res.end()
  res.writeHead(status, {
    "content-type": "application/json",
    "cache-control": "no-store",
    ...(close ? { connection: "close" } : {}),
  })
  res.end(JSON.stringify(body))
}

const TOO_LARGE = `A webhook body may take at most ${MAX_BODY_BYTES} bytes.`
/** A webhook's secret is not HTTP authentication: a missing or wrong one is 403 (401 asks for credentials). */
const FORBIDDEN =
  "The webhook's signature (X-Hub-Signature-256) or token (X-Gitlab-Token) is missing or does not match the secret."

/**
 * The HMAC-SHA256 (hex) of the body under `key`, computed as it arrives (nothing is kept); undefined
 * when the body is larger than MAX_BODY_BYTES or the request broke off.
 */
const hmacOfBody = (req: http.IncomingMessage, key: string) =>
  new Promise<string | undefined>((resolve) => {
    const hmac = createHmac("sha256", key)
    let size = 0
    req.on("data", (chunk: Buffer) => {
      size += chunk.length
      if (size > MAX_BODY_BYTES) {
        resolve(undefined)
        req.destroy()
      } else hmac.update(chunk)
    })
    req.on("end", () => resolve(hmac.digest("hex")))
    req.on("error", () => resolve(undefined))
  })

const header = (req: http.IncomingMessage, name: string) => {
  const value = req.headers[name]
  return Array.isArray(value) ? value[0] : value
}

/**
 * The handler of POST /hooks/git; undefined without git sources. `secret` gives the secret in
 * force: while there is none, the route answers 404. Nothing of a body is kept: a request without
 * a signature or token, with a wrong token, or announcing too large a body is answered before it
 * is read; GitHub's signature is computed over the body as it arrives.
 */
export const makeGitHook = (secret: () => string | undefined) =>
  Effect.gen(function* () {
    const git = yield* GitSources
    if (!git.hasSources) return undefined
    const runtime = yield* Effect.runtime<never>()
    const fetch = (res: http.ServerResponse) => {
      Runtime.runFork(runtime)(git.fetchSoon)
      answer(res, 202, { fetching: true })
    }
    const hook: Hook = (req, res) => {
      const key = secret()
      if (key === undefined) return answer(res, 404, { error: NOT_SERVED }, true)
      if (req.method !== "POST") return answer(res, 405, { error: "Send webhooks with POST." }, true)
      if (Number(req.headers["content-length"]) > MAX_BODY_BYTES)
        return answer(res, 413, { error: TOO_LARGE }, true)
      const signature = header(req, "x-hub-signature-256")
      if (signature === undefined) {
        // GitLab's token (or nothing) decides before any of the body is read; the body is not used.
        const token = header(req, "x-gitlab-token")
        if (token === undefined || !webhookTokenMatches(key, token))
          return answer(res, 403, { error: FORBIDDEN }, true)
        req.resume()
        return fetch(res)
      }
      // A sender that waits for 100 Continue sends its body only now that it is accepted.
      if (req.headers.expect !== undefined) res.writeContinue()
      void hmacOfBody(req, key).then((hmacHex) => {
        if (hmacHex === undefined) return answer(res, 413, { error: TOO_LARGE }, true)
        if (!webhookSignatureMatches(key, signature, hmacHex)) return answer(res, 403, { error: FORBIDDEN })
        fetch(res)
      })
    }
    return hook
  })

/** Why /hooks/git is not served. */
export const NOT_SERVED =
  "Not found: /hooks/git needs a git source (--skills-git) and a git_webhook secret in the --auth file."
