import { availableParallelism } from "node:os"
import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"

export default defineConfig({
  root: fileURLToPath(new URL("..", import.meta.url)),
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/build.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Vitest's default (one worker less than the cores) runs one file at a time on two cores,
    // where most end-to-end tests wait on a server process rather than compute.
    maxWorkers: Math.max(2, availableParallelism() - 1),
  },
})
