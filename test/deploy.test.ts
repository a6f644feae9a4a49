/**
 * The deployment files (Dockerfile, deploy/compose.yaml, deploy/k8s/*.yaml, the YAML in
 * docs/deploy.md): every YAML document parses, and they agree with each other and with what the
 * server does (probe paths, the drain's 30 s, no session affinity, the image's command).
 * No container engine runs here: the image itself is not built by the tests.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import * as Schema from "effect/Schema"
import { describe, expect, it } from "vitest"
import { parseAllDocuments } from "yaml"
import { decode, PROJECT } from "./support/server.js"

const read = (file: string) => fs.readFileSync(path.join(PROJECT, file), "utf8")

/** Every document of a YAML text, as plain values; throws on any parse error. */
const documents = (text: string, what: string): Array<unknown> =>
  parseAllDocuments(text).map((document) => {
    if (document.errors.length > 0) throw new Error(`${what}: ${document.errors[0]?.message}`)
    return document.toJS()
  })

const K8S = fs
  .readdirSync(path.join(PROJECT, "deploy", "k8s"))
  .filter((name) => name.endsWith(".yaml"))
  .map((name) => path.join("deploy", "k8s", name))

const Kind = Schema.Struct({ kind: Schema.String })
const Probe = Schema.Struct({ httpGet: Schema.Struct({ path: Schema.String }) })
const Deployment = Schema.Struct({
  spec: Schema.Struct({
    template: Schema.Struct({
      spec: Schema.Struct({
        terminationGracePeriodSeconds: Schema.Number,
        containers: Schema.Tuple(
          Schema.Struct({
            args: Schema.Array(Schema.String),
            livenessProbe: Probe,
            readinessProbe: Probe,
            securityContext: Schema.Struct({ readOnlyRootFilesystem: Schema.Literal(true) }),
            lifecycle: Schema.Struct({
              preStop: Schema.Struct({
                exec: Schema.Struct({
                  command: Schema.Tuple(Schema.Literal("sleep"), Schema.NumberFromString),
                }),
              }),
            }),
          }),
        ),
      }),
    }),
  }),
})
const Service = Schema.Struct({ spec: Schema.Struct({ sessionAffinity: Schema.Literal("None") }) })
const Compose = Schema.Struct({
  services: Schema.Struct({
    "skills-mcp": Schema.Struct({
      command: Schema.Array(Schema.String),
      read_only: Schema.Literal(true),
      stop_grace_period: Schema.String,
    }),
  }),
})

/** The image's default arguments (the Dockerfile's CMD, an exec-form JSON array). */
const imageCommand = (): ReadonlyArray<string> => {
  const found = /^CMD (\[.*\])$/m.exec(read("Dockerfile"))
  if (found?.[1] === undefined) throw new Error("the Dockerfile has no exec-form CMD")
  return decode(Schema.parseJson(Schema.Array(Schema.String)), found[1], "CMD")
}

const byKind = (kind: string): unknown => {
  for (const file of K8S) {
    for (const document of documents(read(file), file)) {
      if (decode(Kind, document, file).kind === kind) return document
    }
  }
  throw new Error(`no ${kind} in deploy/k8s`)
}

describe("deployment files", () => {
  it("parse: deploy/compose.yaml, deploy/k8s/*.yaml and every yaml block of docs/deploy.md", () => {
    expect(K8S.length).toBeGreaterThan(0)
    for (const file of ["deploy/compose.yaml", ...K8S]) expect(documents(read(file), file).length).toBe(1)
    const blocks = [...read("docs/deploy.md").matchAll(/```yaml\n([\s\S]*?)```/g)]
    expect(blocks.length).toBeGreaterThan(0)
    for (const [, block] of blocks) documents(block ?? "", "a yaml block of docs/deploy.md")
  })

  it("run the image's command, with authentication, in compose and Kubernetes", () => {
    const command = imageCommand()
    expect(command).toContain("--auth")
    expect(command.slice(0, 3)).toEqual(["serve", "--http", "0.0.0.0:8080"])
    const compose = decode(Compose, documents(read("deploy/compose.yaml"), "compose")[0], "compose")
    expect(compose.services["skills-mcp"].command.slice(0, command.length)).toEqual(command)
    const deployment = decode(Deployment, byKind("Deployment"), "Deployment")
    const [container] = deployment.spec.template.spec.containers
    expect(container.args.slice(0, command.length)).toEqual(command)
  })

  it("probe /healthz and /readyz, leave the 30 s drain time, and keep no session affinity", () => {
    const deployment = decode(Deployment, byKind("Deployment"), "Deployment")
    const [container] = deployment.spec.template.spec.containers
    expect(container.livenessProbe.httpGet.path).toBe("/healthz")
    expect(container.readinessProbe.httpGet.path).toBe("/readyz")
    // The drain's 30 s and a margin come after the preStop pause.
    const [, pause] = container.lifecycle.preStop.exec.command
    expect(deployment.spec.template.spec.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(35 + pause)
    decode(Service, byKind("Service"), "Service")
    const compose = decode(Compose, documents(read("deploy/compose.yaml"), "compose")[0], "compose")
    expect(Number.parseInt(compose.services["skills-mcp"].stop_grace_period, 10)).toBeGreaterThanOrEqual(35)
    expect(byKind("HorizontalPodAutoscaler")).toBeDefined()
  })
})
