/**
 * GitSpec: what `--skills-git URL[#[REF][:SUBDIR]]` names, parsed and checked once at start-up.
 * Pure (no disk, no git): Settings uses it to refuse a bad value with a usage error, and
 * src/sources/Git.ts to fetch. A URL with a password in it is refused: git's own mechanisms
 * supply credentials (credential helpers, the SSH agent, GIT_ASKPASS), so the server never holds
 * a secret on its command line, in its environment or in its logs.
 */
import * as Either from "effect/Either"

export interface GitSpec {
  /** The repository, as given (never with a password). */
  readonly url: string
  /** A branch, tag or full commit id; undefined: the remote's default branch (followed). */
  readonly ref: string | undefined
  /** Where the skills sit inside the repository (`/`-separated); "" for its top. */
  readonly subdir: string
  /** The spec as shown in logs, `list` and diagnostics: the URL without user info, `#REF:SUBDIR`. */
  readonly display: string
}

/** Schemes git may use for a skills repository (no `ext::` or other remote helpers). */
const SCHEMES = new Set(["https", "http", "ssh", "git", "file", "git+ssh", "ssh+git"])

/** A full commit id (SHA-1 or SHA-256): such a REF pins the source without asking the remote. */
export const isCommitId = (ref: string): boolean => /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/.test(ref)

const CREDENTIALS_HELP =
  "pass credentials through git instead: a credential helper (git config --global credential.helper ...), an SSH key in the agent (ssh-add) with an ssh:// or git@host: URL, or a GIT_ASKPASS program"

/** The URL as logs show it: an http(s) URL without its user info (a token may be the user name). */
export const displayUrl = (url: string): string => url.replace(/^(https?:\/\/)[^/@]*@/i, "$1")

/** Why a URL is not accepted; undefined when it is. */
const urlProblem = (url: string): string | undefined => {
  if (url === "") return "the URL is empty"
  if (url.startsWith("-")) return "a URL cannot start with '-'"
  if (/[\s\0]/.test(url)) return "a URL cannot contain spaces or control characters"
  const scheme = /^([a-z][a-z0-9+.-]*):\/\/([^/]*)/i.exec(url)
  if (scheme !== null) {
    const name = (scheme[1] ?? "").toLowerCase()
    if (!SCHEMES.has(name)) return `the scheme '${name}' is not one of ${[...SCHEMES].join(", ")}`
    const authority = scheme[2] ?? ""
    const at = authority.lastIndexOf("@")
    if (at >= 0 && authority.slice(0, at).includes(":"))
      return `the URL has a password in it, which skills-mcp refuses (it would show in process lists and logs); remove it and ${CREDENTIALS_HELP}`
    return undefined
  }
  if (url.includes("::")) return "remote helpers ('transport::address') are not accepted; use a URL"
  // scp-like `[user@]host:path` (ssh), or a local absolute path.
  if (/^(?:[^@/:]+@)?[^@/:]+:.+$/.test(url) || url.startsWith("/")) return undefined
  return "expected a URL (https://, ssh://, git://, file://), an scp-like address (git@host:owner/repo.git) or an absolute path"
}

/** Why a REF is not accepted (git's ref-name rules, roughly, and never an option). */
const refProblem = (ref: string): string | undefined =>
  /^[A-Za-z0-9._/+-]+$/.test(ref) &&
  !ref.startsWith("-") &&
  !ref.startsWith("/") &&
  !ref.endsWith("/") &&
  !ref.endsWith(".lock") &&
  !ref.includes("..") &&
  !ref.includes("//")
    ? undefined
    : `'${ref}' is not a branch, tag or commit name`

/** SUBDIR as plain `/`-separated names (a leading `/` means the repository's top); or why not. */
const subdirOf = (raw: string): Either.Either<string, string> => {
  const names = raw.split("/").filter((name) => name !== "")
  if (names.some((name) => name === "." || name === ".." || /[\\\0]/.test(name)))
    return Either.left(`the folder '${raw}' must be a path inside the repository (no '.', '..' or '\\')`)
  return Either.right(names.join("/"))
}

/**
 * `URL[#[REF][:SUBDIR]]`: `https://host/acme/skills#main:skills`, `file:///srv/skills.git#v2`,
 * `git@host:acme/skills.git#:skills` (default branch). The reason when it is not one.
 */
export const parseGitSpec = (raw: string): Either.Either<GitSpec, string> => {
  const text = raw.trim()
  const hash = text.indexOf("#")
  const url = hash < 0 ? text : text.slice(0, hash)
  const problem = urlProblem(url)
  if (problem !== undefined) return Either.left(problem)
  const fragment = hash < 0 ? "" : text.slice(hash + 1)
  const colon = fragment.indexOf(":")
  const ref = colon < 0 ? fragment : fragment.slice(0, colon)
  if (ref !== "") {
    const bad = refProblem(ref)
    if (bad !== undefined) return Either.left(bad)
  }
  return Either.map(subdirOf(colon < 0 ? "" : fragment.slice(colon + 1)), (subdir) => {
    const suffix = ref === "" && subdir === "" ? "" : `#${ref}${subdir === "" ? "" : `:${subdir}`}`
    return { url, ref: ref === "" ? undefined : ref, subdir, display: `${displayUrl(url)}${suffix}` }
  })
}
