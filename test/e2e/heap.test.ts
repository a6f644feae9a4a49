/**
 * The executable's heap (src/HeapTuning.ts): V8's young generation grows as V8 grows it while
 * the bundle loads and the first scan runs, and keeps its size after; the old one grows by V8's
 * factor while the bundle loads, by 100% from the first scan until the start-up work is over,
 * and by 30% after; flags the user gives Node about the heap are left to V8. Once the handshake
 * is done, V8 (Node 20's) optimizes a function only after ten times its budget.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually, initializeLine, jsonRpcLines, PROJECT, runRaw, startServer } from "../support/server.js"
import { skillMd, writeTree } from "../support/tree.js"

const MB = 1024 * 1024
/** Enough skills for the scan's survivors (about 2 KB each) to double the young generation twice. */
const SKILLS = 2_000

let home: string
let skills: string
/** Loaded into the server with --require: prints the young generation's size at exit. */
let probe: string
/** V8's new space at its initial semi-space size, both semi-spaces in use (2 MB on Node 20). */
let initial: number

beforeAll(async () => {
  home = await fs.mkdtemp(path.join(os.tmpdir(), "skills-mcp-heap-"))
  skills = path.join(home, "skills")
  const tree: Record<string, string> = {}
  for (let index = 0; index < SKILLS; index++) {
    const name = `skill-${index}`
    tree[`${name}/SKILL.md`] = skillMd(name, `Skill number ${index}, for the heap test.`)
  }
  await writeTree(skills, tree)
  initial = Number(
    execFileSync(process.execPath, [
      "--semi-space-growth-factor=1",
      "-e",
      `for (let i = 0; i < 200000; i++) globalThis.x = { i }
      const space = require("node:v8").getHeapSpaceStatistics().find((s) => s.space_name === "new_space")
      process.stdout.write(String(space.space_size))`,
    ]).toString(),
  )
  probe = path.join(home, "probe.cjs")
  // At exit: the new space's size, then its size after 40 MB more of objects that survive
  // (a young generation allowed to grow would double several times meanwhile).
  await fs.writeFile(
    probe,
    `const size = () => require("node:v8").getHeapSpaceStatistics().find((s) => s.space_name === "new_space").space_size
    process.on("exit", () => {
      const atExit = size()
      const kept = []
      for (let i = 0; i < 1_000_000; i++) kept.push({ i })
      process.stderr.write("new-space-bytes " + atExit + " " + size() + " " + kept.length + "\\n")
    })\n`,
  )
})

afterAll(async () => {
  await fs.rm(home, { recursive: true, force: true })
})

/**
 * The size of the server's new space (both semi-spaces) once it has answered `initialize`, and
 * after 40 MB more survivors.
 */
const newSpace = async (nodeOptions = "", skillsDir = skills) => {
  const run = await runRaw(["--skills-dir", skillsDir, "--no-watch"], [initializeLine(1)], {
    HOME: home,
    SKILLS_MCP_COMPILE_CACHE: "0",
    NODE_OPTIONS: `${nodeOptions} --require ${probe}`,
  })
  expect(run.code).toBe(0)
  expect(jsonRpcLines(run.stdout)).toMatchObject([{ id: 1, result: { serverInfo: { name: "skills-mcp" } } }])
  const sizes = /new-space-bytes (\d+) (\d+)/.exec(run.stderr)
  expect(sizes).not.toBeNull()
  return { afterStart: Number(sizes?.[1]), afterMore: Number(sizes?.[2]) }
}

describe("the executable's heap", () => {
  it("lets the young generation grow while it starts, then grow no more", async () => {
    // Loading the bundle alone doubles it at least once; 40 MB more survivors after that would
    // double it again and again, up to 2 x 16 MB. V8 may also shrink it again when it measures a
    // low allocation rate (a loaded machine): no growth.
    const { afterStart, afterMore } = await newSpace()
    expect(afterStart).toBeGreaterThanOrEqual(2 * initial)
    expect(afterStart).toBeLessThan(2 * 16 * MB)
    expect(afterMore).toBeLessThanOrEqual(afterStart)
  })

  it("stops the growth when the first scan ends, even a scan of a few skills", async () => {
    const { afterStart, afterMore } = await newSpace("", path.join(PROJECT, "fixtures", "valid"))
    // Grown while the bundle loaded: more than such a scan alone would (it doubled at most once).
    expect(afterStart).toBeGreaterThan(2 * initial)
    expect(afterMore).toBeLessThanOrEqual(afterStart)
  })

  /** Writes a script to load into the server with --require; answers its path. */
  const preload = async (name: string, source: string) => {
    const file = path.join(home, name)
    await fs.writeFile(file, `${source}\n`)
    return file
  }
  /**
   * Preload source for both recorders below: `before(target, name, see)` has `see` called with
   * the arguments of each call of `target[name]`, before it runs; `watches` counts the folders
   * the server has watched so far.
   */
  const preamble = `const before = (target, name, see) => {
        const original = target[name]
        target[name] = function (...args) {
          see(...args)
          return original.apply(this, args)
        }
      }
      let watches = 0
      before(require("node:fs"), "watch", () => watches++)`

  /**
   * Loaded with --require: reports every flag the process sets about the old generation's
   * growth and about V8's budget for optimizing, whether it had answered anything by then and
   * how many folders it watched, and every flag about the young generation's growth, whether it
   * had answered anything by then.
   */
  const growthRecorder = () =>
    preload(
      "growth-flags.cjs",
      `${preamble}
      let answered = false
      before(process.stdout, "write", () => {
        answered = true
      })
      before(require("node:v8"), "setFlagsFromString", (flag) => {
        if (flag.startsWith("--heap-growing-percent")) {
          process.stderr.write("growth " + flag + " " + answered + " " + watches + "\\n")
        }
        if (flag.startsWith("--semi-space-growth-factor")) {
          process.stderr.write("young " + flag + " " + answered + "\\n")
        }
        if (/--interrupt-budget|--max-inlined-bytecode-size-cumulative/.test(flag)) {
          process.stderr.write("budget " + flag.replaceAll(" ", ",") + " " + answered + " " + watches + "\\n")
        }
      })`,
    )
  const growthFlags = (stderr: string) => stderr.match(/^growth .*$/gm) ?? []
  const budgetFlags = (stderr: string) => stderr.match(/^budget .*$/gm) ?? []
  const youngFlags = (stderr: string) =>
    (stderr.match(/^young .*$/gm) ?? []).filter((flag, at, all) => flag !== all[at - 1])

  it("lets the old generation grow by V8's factor while loading, by 100% until the start-up work is over, then by 30%", async () => {
    // No code cache: the launcher, writing one, sets the start's flags a moment (src/launch.ts).
    const server = await startServer(["--skills-dir", skills], {
      env: { HOME: home, SKILLS_MCP_COMPILE_CACHE: "0", NODE_OPTIONS: `--require ${await growthRecorder()}` },
    })
    try {
      const flags = () => growthFlags(server.stderr())
      await eventually(() => expect(flags().at(-1)).toMatch(/^growth --heap-growing-percent=30 true/))
      // The launcher and the server each set the start's flags (V8's own growth) at start.
      const [start, startUp, after, ...more] = flags().filter((flag, at, all) => flag !== all[at - 1])
      expect([start, startUp, more]).toEqual([
        "growth --heap-growing-percent=0 false 0",
        "growth --heap-growing-percent=100 false 0",
        [],
      ])
      // Back to 30% once the start-up work is over: every skill folder and the root watched.
      expect(Number(after?.split(" ").at(-1))).toBeGreaterThanOrEqual(SKILLS + 1)
      // The young generation grew until the first scan began (loading took it past the scan's
      // bound), and never again.
      const young = youngFlags(server.stderr()).map((flag) => flag.split(" ")[1])
      expect(young.filter((flag, at) => flag !== young[at - 1])).toEqual([
        "--semi-space-growth-factor=2",
        "--semi-space-growth-factor=1",
      ])
    } finally {
      await server.close()
    }
  })

  /**
   * A copy of the bin without the build's code cache: the launcher makes the user's from V8,
   * under the flags a start has. Answers the copy's bin.cjs.
   */
  const binWithoutCache = async (name: string) => {
    const dist = path.join(home, name)
    await fs.mkdir(dist, { recursive: true })
    for (const file of ["bin.cjs", "skills-mcp.cjs"]) {
      await fs.copyFile(path.join(PROJECT, "dist", file), path.join(dist, file))
    }
    return path.join(dist, "bin.cjs")
  }

  it("keeps the start-up's growth when the launcher makes a code cache meanwhile", async () => {
    // The launcher makes the cache here at exit, before the start-up work is over.
    const cacheDir = path.join(home, "growth-cache")
    const run = await runRaw(
      ["--skills-dir", skills, "--no-watch"],
      [initializeLine(1)],
      { HOME: home, SKILLS_MCP_CACHE_DIR: cacheDir, NODE_OPTIONS: `--require ${await growthRecorder()}` },
      { bin: await binWithoutCache("dist-without-cache") },
    )
    expect(run.code).toBe(0)
    expect((await fs.readdir(cacheDir)).filter((name) => name.endsWith(".v8cache"))).toHaveLength(1)
    expect(growthFlags(run.stderr).filter((flag, at, all) => flag !== all[at - 1])).toEqual([
      "growth --heap-growing-percent=0 false 0",
      "growth --heap-growing-percent=100 false 0",
      "growth --heap-growing-percent=0 true 0",
      "growth --heap-growing-percent=100 true 0",
    ])
    // The young generation's growth, too, is the start's while the cache is made, and stopped
    // again after.
    expect(youngFlags(run.stderr)).toEqual([
      "young --semi-space-growth-factor=2 false",
      "young --semi-space-growth-factor=1 false",
      "young --semi-space-growth-factor=2 true",
      "young --semi-space-growth-factor=1 true",
    ])
  })

  /** Node 20's V8, the one whose budget the server changes once the handshake is done. */
  const budgetChanges = process.versions.v8.startsWith("11.3.")
  /** The budget flags set, without the number of folders watched; consecutive repeats once. */
  const budgetsSet = (stderr: string) =>
    budgetFlags(stderr)
      .map((flag) => flag.split(" ").slice(1, 3).join(" "))
      .filter((flag, at, all) => flag !== all[at - 1])

  /** The optimizer's flags the server sets at the handshake, and a start's (Node 20's V8). */
  const REST = "--interrupt-budget=675840,--max-inlined-bytecode-size-cumulative=200"
  const START = "--interrupt-budget=67584,--max-inlined-bytecode-size-cumulative=920"

  it("has V8 optimize a function only after ten times its budget, inlining less, once the handshake is done (Node 20)", async () => {
    const server = await startServer(["--skills-dir", skills], {
      env: { HOME: home, SKILLS_MCP_COMPILE_CACHE: "0", NODE_OPTIONS: `--require ${await growthRecorder()}` },
    })
    try {
      // Waits for the start-up work to be over: nothing changes the budget after the handshake.
      await eventually(() =>
        expect(growthFlags(server.stderr()).at(-1)).toMatch(/^growth --heap-growing-percent=30 true/),
      )
      // Once `initialize` was answered (the first scan over), before the start-up work began.
      expect(budgetFlags(server.stderr())).toEqual(budgetChanges ? [`budget ${REST} true 0`] : [])
    } finally {
      await server.close()
    }
  })

  it("makes a code cache after the handshake under the start's budget, and the next start takes it", async () => {
    const bin = await binWithoutCache("dist-budget")
    const cacheDir = path.join(home, "budget-cache")
    const cacheFiles = async () =>
      (await fs.readdir(cacheDir).catch(() => [])).filter((name) => name.endsWith(".v8cache"))
    // A few skills: the handshake is done well before the launcher makes the cache, 1.5 s after
    // the launch (src/launch.ts).
    const server = await startServer(["--skills-dir", path.join(PROJECT, "fixtures", "valid")], {
      bin,
      env: {
        HOME: home,
        SKILLS_MCP_CACHE_DIR: cacheDir,
        NODE_OPTIONS: `--require ${await growthRecorder()}`,
      },
    })
    try {
      await eventually(async () => expect(await cacheFiles()).toHaveLength(1))
      // Made under the start's budget (V8's own) after the handshake, then the server's is put
      // back; on a very slow machine the cache might come first (test/HeapTuning.test.ts checks
      // the flags around it either way).
      const rest = `${REST} true`
      const orders = budgetChanges ? [[rest, `${START} true`, rest], [rest]] : [[]]
      await eventually(() => expect(orders).toContainEqual(budgetsSet(server.stderr())))
    } finally {
      await server.close()
    }
    const [file] = await cacheFiles()
    const made = await fs.stat(path.join(cacheDir, file ?? ""))
    // V8 rejects a cache made under other flags than a start has, and the launcher then writes
    // another (here at exit): the same file means the next start took it.
    const run = await runRaw(
      ["--skills-dir", skills, "--no-watch"],
      [initializeLine(1)],
      { HOME: home, SKILLS_MCP_CACHE_DIR: cacheDir },
      { bin },
    )
    expect(run.code).toBe(0)
    expect(await cacheFiles()).toEqual([file])
    const after = await fs.stat(path.join(cacheDir, file ?? ""))
    expect([after.ino, after.mtimeMs]).toEqual([made.ino, made.mtimeMs])
  })

  it.each([
    ["a budget", "--interrupt-budget=100000", "--max-inlined-bytecode-size-cumulative=200"],
    ["an inlining limit", "--max-inlined-bytecode-size-cumulative=500", "--interrupt-budget=675840"],
  ])("leaves the optimizer's flag alone when the user gives Node %s", async (_, given, ours) => {
    const server = await startServer(["--skills-dir", path.join(PROJECT, "fixtures", "valid")], {
      nodeFlags: [given],
      env: { HOME: home, SKILLS_MCP_COMPILE_CACHE: "0", NODE_OPTIONS: `--require ${await growthRecorder()}` },
    })
    try {
      await eventually(() =>
        expect(growthFlags(server.stderr()).at(-1)).toMatch(/^growth --heap-growing-percent=30 true/),
      )
      expect(budgetFlags(server.stderr()).map((flag) => flag.split(" ")[1])).toEqual(
        budgetChanges ? [ours] : [],
      )
    } finally {
      await server.close()
    }
  })

  it("sets no growth of its own for the old generation when the user gives Node flags about it", async () => {
    const run = await runRaw(["--skills-dir", skills, "--no-watch"], [initializeLine(1)], {
      HOME: home,
      SKILLS_MCP_COMPILE_CACHE: "0",
      NODE_OPTIONS: `--max-semi-space-size=16 --require ${await growthRecorder()}`,
    })
    expect(run.code).toBe(0)
    expect(jsonRpcLines(run.stdout)).toMatchObject([
      { id: 1, result: { serverInfo: { name: "skills-mcp" } } },
    ])
    expect(growthFlags(run.stderr)).toEqual([])
  })

  it("leaves the heap to V8 when the user gives Node flags about it", async () => {
    // V8's own growth goes on after the scan, up to the user's bound.
    expect((await newSpace("--max-semi-space-size=16")).afterMore).toBe(2 * 16 * MB)
  })

  /**
   * Loaded with --require: reports each call of the isolate's `gc()` the server obtains (through
   * `vm.runInNewContext`, src/IdleGc.ts), whether the client's `notifications/initialized` had
   * come by then and how many folders were watched; with HEAP_BALLAST_MB, keeps that many
   * megabytes alive from the start, as a large catalog would.
   */
  const gcRecorder = () =>
    preload(
      "gc-calls.cjs",
      `${preamble}
      const vm = require("node:vm")
      const run = vm.runInNewContext
      let initialized = false
      before(process.stdin, "emit", (event, chunk) => {
        if (event === "data" && String(chunk).includes("notifications/initialized")) initialized = true
      })
      vm.runInNewContext = function (code, ...rest) {
        const value = run.call(this, code, ...rest)
        if (code !== "gc" || typeof value !== "function") return value
        return (...args) => {
          process.stderr.write("gc " + initialized + " " + watches + "\\n")
          return value(...args)
        }
      }
      const ballast = Number(process.env.HEAP_BALLAST_MB ?? 0)
      globalThis.heapBallast = Array.from({ length: ballast }, () => new Array(131072).fill(0.5))`,
    )
  const gcCalls = (stderr: string) => stderr.match(/^gc .*$/gm) ?? []

  it("collects once as the handshake completes when the heap is large, before the start-up work", async () => {
    const server = await startServer(["--skills-dir", skills], {
      env: { HOME: home, HEAP_BALLAST_MB: "40", NODE_OPTIONS: `--require ${await gcRecorder()}` },
    })
    try {
      await eventually(() => expect(gcCalls(server.stderr()).length).toBeGreaterThan(0))
      // After the client's notifications/initialized, before any folder is watched.
      expect(gcCalls(server.stderr())[0]).toBe("gc true 0")
    } finally {
      await server.close()
    }
  })

  it("leaves a smaller heap to the collection made once the start-up work is over", async () => {
    const server = await startServer(["--skills-dir", skills], {
      env: { HOME: home, NODE_OPTIONS: `--require ${await gcRecorder()}` },
    })
    try {
      // The idle collection (src/IdleGc.ts) is the first: every folder was watched by then.
      await eventually(() => expect(gcCalls(server.stderr()).length).toBeGreaterThan(0))
      expect(gcCalls(server.stderr())[0]).toBe(`gc true ${SKILLS + 1}`)
    } finally {
      await server.close()
    }
  })
})
