/**
 * Subscriptions under load: a request that arrives between a file change and the watcher's
 * debounce takes the change itself (to answer from fresh data); the subscriber must still be
 * told, once.
 */
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { RunningServer } from "../support/server.js"
import { copyFixtures, eventually, startServer } from "../support/server.js"

let dir: string
let server: RunningServer

beforeAll(async () => {
  dir = await copyFixtures()
  server = await startServer([path.join(dir, "valid")], { env: { HOME: path.join(dir, "home") } })
  await server.client.listTools()
})

afterAll(async () => {
  await server.close()
  await fs.rm(dir, { recursive: true, force: true })
})

const updatesFor = (uri: string) =>
  server.notifications.filter(
    (notification) =>
      notification.method === "notifications/resources/updated" &&
      (notification.params as { uri?: string } | undefined)?.uri === uri,
  ).length

describe("subscriptions while requests keep coming", () => {
  it("notifies a subscriber of a change that a request picked up before the watcher's debounce", async () => {
    const uri = "skill://pdf-processing/references/forms.md"
    await server.client.subscribeResource({ uri })
    // Let the watch on the subscribed file's folder settle.
    await new Promise((resolve) => setTimeout(resolve, 300))
    for (let round = 1; round <= 3; round++) {
      await fs.appendFile(
        path.join(dir, "valid", "pdf-processing", "references", "forms.md"),
        `\nEdit ${round}.\n`,
      )
      // Requests back to back, each draining the watcher's pending changes, until notified.
      const started = Date.now()
      while (updatesFor(uri) < round && Date.now() - started < 5_000) {
        await server.client.callTool({ name: "list_skills", arguments: {} })
      }
      expect(updatesFor(uri)).toBe(round)
    }
  })

  it("notifies subscribers of a manifest and of the catalog, and no longer after unsubscribe", async () => {
    const manifest = "skill://pdf-processing/_manifest"
    const catalog = "skill://prompt-xml"
    const dropped = "skill://api-design/SKILL.md"
    for (const uri of [manifest, catalog, dropped]) await server.client.subscribeResource({ uri })
    await server.client.unsubscribeResource({ uri: dropped })
    await new Promise((resolve) => setTimeout(resolve, 300))
    // A file deep in the skill changes its manifest (its digest), a new skill the catalog.
    await fs.appendFile(path.join(dir, "valid", "pdf-processing", "references", "forms.md"), "\nMore.\n")
    await eventually(() => expect(updatesFor(manifest)).toBe(1))
    await fs.appendFile(path.join(dir, "valid", "api-design", "SKILL.md"), "\nEdited.\n")
    await fs.mkdir(path.join(dir, "valid", "sub-added"))
    await fs.writeFile(
      path.join(dir, "valid", "sub-added", "SKILL.md"),
      "---\nname: sub-added\ndescription: Added for a subscriber.\n---\nBody\n",
    )
    await eventually(() => expect(updatesFor(catalog)).toBeGreaterThanOrEqual(1))
    expect(updatesFor(dropped)).toBe(0)
  })

  it("without the watcher, still notifies a subscriber (the files are polled)", async () => {
    const quiet = await startServer([path.join(dir, "valid"), "--no-watch"], {
      env: { HOME: path.join(dir, "home") },
    })
    try {
      const uri = "skill://git-commit-messages/SKILL.md"
      await quiet.client.subscribeResource({ uri })
      await fs.appendFile(path.join(dir, "valid", "git-commit-messages", "SKILL.md"), "\nPolled.\n")
      await eventually(
        () =>
          expect(
            quiet.notifications.some(
              (notification) =>
                notification.method === "notifications/resources/updated" &&
                (notification.params as { uri?: string } | undefined)?.uri === uri,
            ),
          ).toBe(true),
        8_000,
      )
    } finally {
      await quiet.close()
    }
  })
})
