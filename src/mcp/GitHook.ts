/**
 * `POST /hooks/git` (HTTP mode): a push webhook makes the git sources that follow a branch fetch
 * at once instead of at their next poll. Authenticated with a shared secret, GitHub's way
 * (`X-Hub-Signature-256: sha256=<HMAC-SHA256 of the body>`) or GitLab's (`X-Gitlab-Token`),
 * checked by `webhookAuthorized` (src/sources/Git.ts). The secret is the `git_webhook.secret` of
 * the `--auth` file in force (read again when it changes); without it, or without git sources,
 * the route is not served.
 * The answer (202) does not wait for the fetch: a webhook sender gives up after a few seconds.
 */
import type * as http from "node:http"
import * as Effect from "effect/Effect"
import * as Runtime from "effect/Runtime"
import { GitSources, webhookAuthorized } from "../sources/Git.js"

/** Largest webhook body read (a push event of many commits stays far below). */
const MAX_BODY_BYTES = 5 * 1024 * 1024

type Hook = (req: http.IncomingMessage, res: http.ServerResponse) => void

const answer = (res: http.ServerResponse, status: number, body: Record<string, unknown>) => {
  if (res.headersSent) return void res.end()
  res.writeHead(status, { "content-type": "application/json", "cache-control": "no-store" })
  res.end(JSON.stringify(body))
}

/** The body, or undefined when it is larger than MAX_BODY_BYTES or the request broke off. */
const readBody = (req: http.IncomingMessage) =>
  new Promise<Buffer | undefined>((resolve) => {
    const chunks: Array<Buffer> = []
    let size = 0
    req.on("data", (chunk: Buffer) => {
      size += chunk.length
      if (size > MAX_BODY_BYTES) {
        resolve(undefined)
        req.destroy()
      } else chunks.push(chunk)
    })
    req.on("end", () => resolve(Buffer.concat(chunks)))
    req.on("error", () => resolve(undefined))
  })

const header = (req: http.IncomingMessage, name: string) => {
  const value = req.headers[name]
  return Array.isArray(value) ? value[0] : value
}

/**
 * The handler of POST /hooks/git; undefined without git sources. `secret` gives the secret in
 * force: while there is none, the route answers 404.
 */
export const makeGitHook = (secret: () => string | undefined) =>
  Effect.gen(function* () {
    const git = yield* GitSources
    if (!git.hasSources) return undefined
    const runtime = yield* Effect.runtime<never>()
    const hook: Hook = (req, res) => {
      const key = secret()
      if (key === undefined) return answer(res, 404, { error: NOT_SERVED })
      if (req.method !== "POST") return answer(res, 405, { error: "Send webhooks with POST." })
      void readBody(req).then((body) => {
        if (body === undefined)
          return answer(res, 413, { error: `A webhook body may take at most ${MAX_BODY_BYTES} bytes.` })
        const authorized = webhookAuthorized(
          key,
          { githubSignature: header(req, "x-hub-signature-256"), gitlabToken: header(req, "x-gitlab-token") },
          body,
        )
        if (!authorized)
          return answer(res, 401, {
            error:
              "The webhook's signature (X-Hub-Signature-256) or token (X-Gitlab-Token) does not match the secret.",
          })
        Runtime.runFork(runtime)(git.fetchSoon)
        answer(res, 202, { fetching: true })
      })
    }
    return hook
  })

/** Why /hooks/git is not served. */
export const NOT_SERVED =
  "Not found: /hooks/git needs a git source (--skills-git) and a git_webhook secret in the --auth file."
