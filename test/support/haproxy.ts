/**
 * A real load balancer for end-to-end tests: HAProxy from Debian's packages, installed with
 * apt-get when missing (CI runs as root), started in the foreground as a child of the test with
 * a configuration the test writes, listening on 127.0.0.1 only.
 */
import type { ChildProcessWithoutNullStreams } from "node:child_process"
import { spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs/promises"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { send } from "./http.js"

/** The command that runs HAProxy: `haproxy` on the PATH, else Debian's (not on a user's PATH). */
const haproxyCommand = (): string | undefined =>
  ["haproxy", "/usr/sbin/haproxy"].find(
    (command) => spawnSync(command, ["-v"], { encoding: "utf8" }).status === 0,
  )

const aptGet = (args: ReadonlyArray<string>) =>
  spawnSync("apt-get", args, {
    encoding: "utf8",
    env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
  })

/**
 * The command that runs HAProxy, after installing Debian's package when there is none (after
 * `apt-get update` when the package lists do not know it); or throws saying what to install.
 */
export const ensureHaproxy = (): string => {
  const command = haproxyCommand()
  if (command !== undefined) return command
  const install = ["install", "-y", "--no-install-recommends", "haproxy"]
  let run = aptGet(install)
  if (run.status !== 0) {
    aptGet(["update"])
    run = aptGet(install)
  }
  const installed = haproxyCommand()
  if (run.status !== 0 || installed === undefined) {
    const why =
      run.status === 0
        ? "it was installed, but neither `haproxy` on the PATH nor /usr/sbin/haproxy runs"
        : `\`apt-get install -y haproxy\` failed: ${run.error?.message ?? run.stderr.trim()}`
    throw new Error(
      `This test needs HAProxy (a real load balancer in front of three replicas): ${why}\n` +
        "Install it (Debian/Ubuntu: `apt-get install haproxy`; or put any haproxy >= 2.2 on the PATH), then run the tests again.",
    )
  }
  return installed
}

/** A TCP port nobody listens on now (the system's choice, released at once). */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const probe = net.createServer()
    probe.once("error", reject)
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address()
      const port = address !== null && typeof address === "object" ? address.port : 0
      probe.close(() => resolve(port))
    })
  })

export interface RunningHaproxy {
  readonly port: number
  readonly stderr: () => string
  readonly child: ChildProcessWithoutNullStreams
  /** SIGTERM, then waits until it has exited. */
  readonly stop: () => Promise<void>
}

/**
 * HAProxy on 127.0.0.1:`port`, round robin over `backends` (ports on 127.0.0.1), each checked
 * at /readyz; a request whose connection to a replica fails, or that got no answer, is sent to
 * another one (retries, redispatch). Every request is balanced on its own: no affinity. Resolves once it answers.
 */
export const startHaproxy = async (
  command: string,
  port: number,
  backends: ReadonlyArray<number>,
): Promise<RunningHaproxy> => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "skills-mcp-haproxy-"))
  const config = path.join(dir, "haproxy.cfg")
  await fs.writeFile(
    config,
    [
      "global",
      "  maxconn 256",
      "defaults",
      "  mode http",
      "  timeout connect 2s",
      "  timeout client 35s",
      "  timeout server 35s",
      "  retries 3",
      "  option redispatch 1",
      // Every MCP method skills-mcp serves only reads, so a request that got no answer may be sent again.
      "  retry-on conn-failure empty-response",
      "frontend mcp",
      `  bind 127.0.0.1:${port}`,
      "  default_backend replicas",
      "backend replicas",
      "  balance roundrobin",
      "  option httpchk",
      `  http-check send meth GET uri /readyz ver HTTP/1.1 hdr Host 127.0.0.1:${port}`,
      "  default-server check inter 250ms fall 2 rise 2",
      ...backends.map((backend, index) => `  server replica${index} 127.0.0.1:${backend}`),
      "",
    ].join("\n"),
  )
  // -db: in the foreground, not a daemon, so it is this test's child and dies with it.
  const child = spawn(command, ["-db", "-f", config])
  let stderr = ""
  child.stdout.on("data", (chunk: Buffer) => {
    stderr += chunk.toString("utf8")
  })
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString("utf8")
  })
  let exited = false
  // Should the test's process end without stopping it, HAProxy goes too (it would hold its port).
  const orphaned = () => child.kill("SIGKILL")
  process.once("exit", orphaned)
  const done = new Promise<void>((resolve) =>
    child.on("close", () => {
      exited = true
      process.off("exit", orphaned)
      resolve()
    }),
  )
  const stop = async () => {
    if (!exited) child.kill("SIGTERM")
    await done
    await fs.rm(dir, { recursive: true, force: true })
  }
  for (let tries = 0; ; tries++) {
    if (exited) {
      await stop()
      throw new Error(`HAProxy exited before answering:\n${stderr}`)
    }
    const answer = await send(port, { path: "/readyz" }).catch(() => undefined)
    if (answer?.status === 200) break
    if (tries >= 400) {
      await stop()
      throw new Error(`HAProxy did not answer /readyz with 200 after 10 s:\n${stderr}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  return { port, child, stderr: () => stderr, stop }
}
