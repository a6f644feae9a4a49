/**
 * `POST /hooks/git` (HTTP mode): a push webhook makes the git sources that follow a branch fetch
 * at once instead of at their next poll. Authenticated with a shared secret, GitHub's way
 * (`X-Hub-Signature-256: sha256=<HMAC-SHA256 of the body>`) or GitLab's (`X-Gitlab-Token`),
 * checked with `githubSignature` and `gitlabTokenMatches` (src/sources/Git.ts); 403 otherwise.
 * The secret is the `git_webhook.secret` of the `--auth` file in force (read again when it
 * changes); without it, or without git sources, the route is not served.
 * The answer (202) does not wait for the fetch: a webhook sender gives up after a few seconds.
 */
import type * as http from "node:http"
import * as Effect from "effect/Effect"
import * as Runtime from "effect/Runtime"
import { GitSources, githubSignature, gitlabTokenMatches } from "../sources/Git.js"

/** Largest webhook body read (a push event of many commits stays far below). */
const MAX_BODY_BYTES = 5 * 1024 * 1024

type Hook = (req: http.IncomingMessage, res: http.ServerResponse) => void

/** Closes the connection after an answer sent before its request's body was read (if it has one). */
const CLOSE = { connection: "close" } as const

const answer = (
  res: http.ServerResponse,
  status: number,
  body: Record<string, unknown>,
  headers: Readonly<Record<string, string>> = {},
) => {
  if (res.headersSent) return void res.end()
  res.writeHead(status, { "content-type": "application/json", "cache-control": "no-store", ...headers })
  res.end(JSON.stringify(body))
}

/**
 * Feeds the body to `update` chunk by chunk, nothing kept; true once it is all read, false when
 * it passes MAX_BODY_BYTES (reading stops) or the request broke off.
 */
const readInto = (req: http.IncomingMessage, update: (chunk: Buffer) => void) =>
  new Promise<boolean>((resolve) => {
    let size = 0
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size <= MAX_BODY_BYTES) return update(chunk)
      req.off("data", onData)
      req.pause()
      resolve(false)
    }
    req.on("data", onData)
    req.on("end", () => resolve(true))
    req.on("error", () => resolve(false))
  })

const header = (req: http.IncomingMessage, name: string) => {
  const value = req.headers[name]
  return Array.isArray(value) ? value[0] : value
}

const TOO_LARGE = { error: `A webhook body may take at most ${MAX_BODY_BYTES} bytes.` }

/**
 * 403, not 401: a webhook's signature is not HTTP authentication (there is no scheme for a
 * `WWW-Authenticate` challenge a sender could answer).
 */
const REFUSED = {
  error:
    "Forbidden: the webhook has no signature (X-Hub-Signature-256) or token (X-Gitlab-Token) matching the secret.",
}

/**
 * The handler of POST /hooks/git; undefined without git sources. `secret` gives the secret in
 * force: while there is none, the route answers 404. Nothing of the body is kept, and it is read
 * only for GitHub's signature (an HMAC of it): a request without a signature or token, with a
 * wrong GitLab token, or announcing a body too large is answered at once.
 */
export const makeGitHook = (secret: () => string | undefined) =>
  Effect.gen(function* () {
    const git = yield* GitSources
    if (!git.hasSources) return undefined
    const runtime = yield* Effect.runtime<never>()
    const fetchSoon = () => Runtime.runFork(runtime)(git.fetchSoon)
    const hook: Hook = (req, res) => {
      const key = secret()
      if (key === undefined) return answer(res, 404, { error: NOT_SERVED }, CLOSE)
      if (req.method !== "POST") return answer(res, 405, { error: "Send webhooks with POST." }, CLOSE)
      if (Number(req.headers["content-length"]) > MAX_BODY_BYTES) return answer(res, 413, TOO_LARGE, CLOSE)
      const signature = header(req, "x-hub-signature-256")
      if (signature === undefined) {
        const token = header(req, "x-gitlab-token")
        if (token === undefined || !gitlabTokenMatches(key, token)) return answer(res, 403, REFUSED, CLOSE)
        fetchSoon()
        return answer(res, 202, { fetching: true }, CLOSE)
      }
      const signed = githubSignature(key)
      // A client that waits for 100 Continue sends its body only now.
      if (req.headers.expect !== undefined) res.writeContinue()
      void readInto(req, signed.update).then((complete) => {
        if (!complete) return answer(res, 413, TOO_LARGE, CLOSE)
        if (!signed.matches(signature)) return answer(res, 403, REFUSED)
        fetchSoon()
        answer(res, 202, { fetching: true })
      })
    }
    return hook
  })

/** Why /hooks/git is not served. */
export const NOT_SERVED =
  "Not found: /hooks/git needs a git source (--skills-git) and a git_webhook secret in the --auth file."
