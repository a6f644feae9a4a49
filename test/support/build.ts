/** Vitest global setup: build the real bin once, so end-to-end tests run what users run. */
import { execFileSync } from "node:child_process"
import { fileURLToPath } from "node:url"

export default function setup() {
  const root = fileURLToPath(new URL("../..", import.meta.url))
  execFileSync("npm", ["run", "--silent", "build:bin"], { cwd: root, stdio: "inherit" })
}
