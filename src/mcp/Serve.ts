/**
 * Serving one client over a pair of streams (stdio): the transport, the notifications (catalog
 * changes, log lines, subscribed resources), the background work once the handshake is done (the
 * search index, the watches), and the end: when input ends (or a signal comes), the requests in
 * flight are answered and their answers delivered before the server closes.
 */
import type { Readable, Writable } from "node:stream"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Logger from "effect/Logger"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import { Catalog } from "../catalog/Catalog.js"
import { watchCatalog } from "../catalog/Watching.js"
import { writeStderr } from "../Logging.js"
import { Settings } from "../Settings.js"
import type { ClientLog } from "./ClientLog.js"
import { clientLogger } from "./ClientLog.js"
import { makeServer } from "./Server.js"
import { LineTransport } from "./Transport.js"

/**
 * Once input has ended, how long the output may take nothing before the server exits with
 * requests unanswered (a disk that stopped answering, a client that stopped reading).
 */
const DRAIN_STALL_MS = 1_000
/** Without a watcher, subscribed files are re-checked this often (only while there are any). */
const SUBSCRIPTION_POLL = "2 seconds"

/**
 * After the input ended: "drained" once every request read is answered and every answer
 * flushed to the client, or "stalled" when the output has taken nothing for `stallMs`
 * (counting from the end of input) while some are pending. A slow client that reads gets
 * everything; one that stopped reading does not keep the process.
 */
export const drain = (
  transport: { readonly whenIdle: () => Promise<void>; readonly lastFlushed: number },
  stallMs: number,
): Effect.Effect<"drained" | "stalled"> =>
  Effect.suspend(() => {
    const endedAt = performance.now()
    const stalled = Effect.suspend(() => {
      const quiet = performance.now() - Math.max(transport.lastFlushed, endedAt)
      return quiet >= stallMs ? Effect.succeed(true) : Effect.as(Effect.sleep(stallMs - quiet), false)
    }).pipe(Effect.repeat({ until: (done) => done }))
    return Effect.raceFirst(
      Effect.as(
        Effect.promise(() => transport.whenIdle()),
        "drained" as const,
      ),
      Effect.as(stalled, "stalled" as const),
    )
  })

/** Serves MCP on `input`/`output` until the input ends, then drains (`drain`) and closes. */
export const serve = (io: { readonly input: Readable; readonly output: Writable }) => {
  const clientLog: ClientLog = { level: "warning", server: undefined }
  return Effect.gen(function* () {
    const settings = yield* Settings
    const catalog = yield* Catalog
    const made = yield* makeServer(clientLog)
    const { server } = made
    const ended = yield* Deferred.make<void>()
    const transport = new LineTransport(io.input, io.output, {
      onEnd: () => Deferred.unsafeDone(ended, Exit.void),
      outgoing: made.outgoing,
    })
    server.onerror = (error) => {
      writeStderr(`${JSON.stringify({ message: `MCP transport: ${error.message}`, logLevel: "DEBUG" })}\n`)
    }
    yield* Effect.acquireRelease(
      Effect.promise(() => server.connect(transport)),
      () => Effect.promise(() => server.close()),
    )

    // Catalog changes: one notification of each kind per change, and subscribers told of what
    // changed (a git source's new commit changes files no watcher saw).
    yield* catalog.changes.pipe(
      Stream.runForEach(() =>
        made.isInitialized()
          ? Effect.promise(async () => {
              if (settings.tools !== "never") await server.sendToolListChanged().catch(() => undefined)
              await server.sendPromptListChanged().catch(() => undefined)
              await server.sendResourceListChanged().catch(() => undefined)
            }).pipe(Effect.zipRight(made.subscriptions.check))
          : Effect.void,
      ),
      Effect.forkScoped,
    )

    /** The handshake is done (the client's `notifications/initialized`), or a second has passed. */
    const handshakeDone = made.initialized.pipe(Effect.timeoutOption("1 second"))

    // Once the handshake is done: the search index is built in the background, before a query
    // needs it, and the watches are set up (src/catalog/Watching.ts). Without watches, the files
    // of subscribed URIs are polled while there are any.
    yield* handshakeDone.pipe(Effect.zipRight(catalog.warmSearch), Effect.forkScoped)
    if (settings.watch) {
      yield* handshakeDone.pipe(
        Effect.zipRight(
          watchCatalog({ extraFolders: made.subscriptions.folders, afterChanges: made.subscriptions.check }),
        ),
        // A subscription made while the first watches were set up may have come after they read
        // the folders to watch: follow once more, and check what changed meanwhile.
        Effect.tap(({ follow }) =>
          made
            .afterSubscribe(follow)
            .pipe(Effect.zipRight(follow), Effect.zipRight(made.subscriptions.check)),
        ),
        Effect.forkScoped,
      )
    } else {
      yield* Effect.suspend(() => (made.subscriptions.any() ? made.subscriptions.check : Effect.void)).pipe(
        Effect.repeat({ schedule: Schedule.spaced(SUBSCRIPTION_POLL) }),
        Effect.forkScoped,
      )
    }

    yield* Deferred.await(ended)
    const outcome = yield* drain(transport, DRAIN_STALL_MS)
    if (outcome === "stalled") {
      const unanswered = transport.unanswered
      yield* Effect.logWarning(
        `Input ended and nothing was delivered for ${DRAIN_STALL_MS} ms: ${unanswered} request(s) left unanswered and ${transport.pending - unanswered} answer(s) the client did not read were abandoned.`,
      )
    }
  }).pipe(Effect.provide(Logger.add(clientLogger(clientLog))))
}
