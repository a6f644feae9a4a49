import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"

export default defineConfig({
  root: fileURLToPath(new URL("..", import.meta.url)),
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/build.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
})
