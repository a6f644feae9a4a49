import { describe, expect, it } from "@effect/vitest"
import type { HostRules } from "../src/mcp/HttpGuard.js"
import { hostProblem, originProblem, splitAuthority } from "../src/mcp/HttpGuard.js"

const loopback: HostRules = { host: "127.0.0.1", port: 8080, allowedHosts: [] }
const everywhere: HostRules = {
  host: "0.0.0.0",
  port: 8080,
  allowedHosts: ["skills.example.com", "proxy:9443"],
}
const one: HostRules = { host: "192.168.1.5", port: 8080, allowedHosts: [] }

describe("HttpGuard", () => {
  it("splits a Host header into a lower-case name and a port", () => {
    expect(splitAuthority("LocalHost:8080")).toEqual({ hostname: "localhost", port: 8080 })
    expect(splitAuthority("[::1]:80")).toEqual({ hostname: "[::1]", port: 80 })
    expect(splitAuthority("example.com")).toEqual({ hostname: "example.com", port: undefined })
    for (const bad of ["", "a b", "user@host", "host:port", "[::1", "a/b"])
      expect(splitAuthority(bad), bad).toBeUndefined()
  })

  it("accepts the loopback names with the listening port on a loopback address", () => {
    for (const host of ["127.0.0.1:8080", "localhost:8080", "[::1]:8080"])
      expect(hostProblem(loopback, host), host).toBeUndefined()
  })

  it("refuses other names, other ports, and a missing or malformed Host", () => {
    for (const host of [
      "evil.example:8080",
      "127.0.0.1:9090",
      "localhost",
      "192.168.1.5:8080",
      "",
      "a b",
      undefined,
    ]) {
      expect(hostProblem(loopback, host), String(host)).toBeDefined()
    }
  })

  it("on a specific address, accepts that address; on every address, any IP literal and the listed names", () => {
    expect(hostProblem(one, "192.168.1.5:8080")).toBeUndefined()
    expect(hostProblem(one, "10.0.0.1:8080")).toBeDefined()
    expect(hostProblem(everywhere, "10.0.0.1:8080")).toBeUndefined()
    expect(hostProblem(everywhere, "[fd00::1]:8080")).toBeUndefined()
    expect(hostProblem(everywhere, "skills.example.com")).toBeUndefined()
    expect(hostProblem(everywhere, "skills.example.com:443")).toBeUndefined()
    expect(hostProblem(everywhere, "proxy:9443")).toBeUndefined()
    expect(hostProblem(everywhere, "proxy:9444")).toBeDefined()
    expect(hostProblem(everywhere, "rebound.attacker.example:8080")).toBeDefined()
  })

  it("takes a header without a port as naming the scheme's default port for a name:port entry", () => {
    const behindProxy: HostRules = { host: "0.0.0.0", port: 8080, allowedHosts: ["skills.example.com:443"] }
    expect(hostProblem(behindProxy, "skills.example.com")).toBeUndefined()
    expect(hostProblem(behindProxy, "skills.example.com:443")).toBeUndefined()
    expect(hostProblem(behindProxy, "skills.example.com:8443")).toBeDefined()
    expect(originProblem(behindProxy, "https://skills.example.com")).toBeUndefined()
    expect(originProblem(behindProxy, "https://skills.example.com:443")).toBeUndefined()
    expect(originProblem(behindProxy, "http://skills.example.com")).toBeDefined()
    const plainHttp: HostRules = { host: "0.0.0.0", port: 8080, allowedHosts: ["intranet:80"] }
    expect(hostProblem(plainHttp, "intranet")).toBeUndefined()
    expect(originProblem(plainHttp, "http://intranet")).toBeUndefined()
    expect(originProblem(plainHttp, "https://intranet")).toBeDefined()
  })

  it("accepts no Origin, or one whose host the server serves; refuses others", () => {
    expect(originProblem(loopback, undefined)).toBeUndefined()
    expect(originProblem(loopback, "http://localhost:3000")).toBeUndefined()
    expect(originProblem(loopback, "http://127.0.0.1:8080")).toBeUndefined()
    expect(originProblem(everywhere, "https://skills.example.com")).toBeUndefined()
    for (const origin of [
      "http://evil.example",
      "null",
      "file:///x",
      "not a url",
      "https://skills.example.com.evil.example",
    ]) {
      expect(originProblem(loopback, origin), origin).toBeDefined()
    }
  })

  it("on every address, does not take any IP address as an Origin it serves (a page may come from one)", () => {
    expect(originProblem(everywhere, "http://203.0.113.9")).toBeDefined()
    expect(originProblem(everywhere, "http://[2001:db8::1]:8080")).toBeDefined()
    expect(originProblem(everywhere, "http://127.0.0.1:8080")).toBeUndefined()
    // The Host rule is unchanged: any IP literal names this server when it listens everywhere.
    expect(hostProblem(everywhere, "203.0.113.9:8080")).toBeUndefined()
  })

  it("refuses a trailing dot and odd spellings of loopback in Host", () => {
    for (const header of ["localhost.:8080", "LOCALHOST.:8080", "[0:0::1]:8080", "127.1:8080"])
      expect(hostProblem(loopback, header), header).toBeDefined()
  })
})
