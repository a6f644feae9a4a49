/**
 * DNS-rebinding protection for the HTTP server: which Host and Origin headers a request may
 * carry. A web page can make a browser send requests to any address, but under its own host
 * name (the attacker's, rebound to this address); the names below are the only ones a
 * legitimate client uses:
 * - the loopback names (`localhost`, `127.0.0.1`, `[::1]`) and the address listened on;
 * - listening on every address (`0.0.0.0`, `::`): any IP address literal too;
 * - every name of `--allowed-hosts` (`name` for any port, `name:port` for that port), e.g. the
 *   name a reverse proxy serves; a header without a port names the scheme's default one (Host:
 *   80 or 443, the scheme is unknown; Origin: 80 for http, 443 for https).
 * Host must name the listening port too (a built-in name without a port means port 80); an
 * Origin (sent by browsers) is checked by its host name only, since a page on another local
 * port is not a rebinding. A request without Origin (every non-browser client) passes that check.
 */
import * as net from "node:net"

export interface HostRules {
  /** The address listened on (IPv6 without brackets). */
  readonly host: string
  /** The port listened on (the one the system gave, for port 0). */
  readonly port: number
  /** `--allowed-hosts`: lower-case `name` or `name:port`. */
  readonly allowedHosts: ReadonlyArray<string>
}

const LOOPBACK_NAMES: ReadonlyArray<string> = ["localhost", "127.0.0.1", "[::1]"]
const WILDCARDS: ReadonlyArray<string> = ["0.0.0.0", "::"]

/** A host name or IP literal (IPv6 in brackets), then an optional port. */
const AUTHORITY = /^(\[[0-9a-f:.]+\]|[^\s:[\]/@]+)(?::(\d{1,5}))?$/

/** A Host header's name (lower case, IPv6 in brackets) and port; undefined when malformed. */
export const splitAuthority = (
  value: string,
): { readonly hostname: string; readonly port: number | undefined } | undefined => {
  const match = AUTHORITY.exec(value.trim().toLowerCase())
  if (match === null || match[1] === undefined) return undefined
  return { hostname: match[1], port: match[2] === undefined ? undefined : Number(match[2]) }
}

/** The name as it appears in a Host header: an IPv6 address in brackets. */
const asHostname = (host: string) => (net.isIPv6(host) ? `[${host.toLowerCase()}]` : host.toLowerCase())

/** One of the server's own names (see the module comment), whatever the port. */
const isBuiltIn = (rules: HostRules, hostname: string): boolean => {
  if (LOOPBACK_NAMES.includes(hostname)) return true
  if (!WILDCARDS.includes(rules.host)) return hostname === asHostname(rules.host)
  const bare = hostname.startsWith("[") ? hostname.slice(1, -1) : hostname
  return net.isIP(bare) !== 0
}

/**
 * A page's origin the server trusts: a loopback name, or the address it listens on when that is
 * not a wildcard. Not any IP address on a wildcard: an attacker's page may be served from one.
 */
const isOwnOrigin = (rules: HostRules, hostname: string): boolean =>
  LOOPBACK_NAMES.includes(hostname) ||
  (!WILDCARDS.includes(rules.host) && hostname === asHostname(rules.host))

/**
 * Named by `--allowed-hosts`: as `name`, or as `name:port` with one of `ports` (the port the
 * header names; without one, the scheme's default: see DEFAULT_PORTS).
 */
const isListed = (rules: HostRules, hostname: string, ports: ReadonlyArray<number>): boolean =>
  rules.allowedHosts.some(
    (entry) => entry === hostname || ports.some((port) => entry === `${hostname}:${port}`),
  )

/**
 * A Host without a port names the scheme's default port; the scheme is not in the request (a
 * proxy may have ended TLS), so either of http's 80 and https's 443.
 */
const DEFAULT_PORTS: ReadonlyArray<number> = [80, 443]

/** Why a Host header is refused; undefined when it is accepted. */
export const hostProblem = (rules: HostRules, header: string | undefined): string | undefined => {
  if (header === undefined || header === "") return "the request has no Host header"
  const authority = splitAuthority(header)
  if (authority === undefined) return "the Host header is malformed"
  const { hostname, port } = authority
  if (isListed(rules, hostname, port === undefined ? DEFAULT_PORTS : [port])) return undefined
  if (isBuiltIn(rules, hostname) && (port ?? 80) === rules.port) return undefined
  return `the Host header names a host this server does not serve (add it with --allowed-hosts)`
}

/** Why an Origin header is refused; undefined when it is accepted or absent. */
export const originProblem = (rules: HostRules, header: string | undefined): string | undefined => {
  if (header === undefined) return undefined
  let url: URL
  try {
    url = new URL(header)
  } catch {
    return "the Origin header is malformed"
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    return "the Origin header is not an http(s) origin"
  const hostname = url.hostname.toLowerCase()
  // The URL parser drops a scheme's default port: `https://name:443` reads as `https://name`.
  const port = url.port !== "" ? Number(url.port) : url.protocol === "https:" ? 443 : 80
  if (isListed(rules, hostname, [port]) || isOwnOrigin(rules, hostname)) return undefined
  return "the Origin header names a site this server does not serve (add its host with --allowed-hosts)"
}
