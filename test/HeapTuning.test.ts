/**
 * The executable's V8 settings over a server's life (src/HeapTuning.ts), the flags recorded
 * instead of set: the optimizing compiler is turned off once start-up is over, and a code
 * cache made after that is made under the compiler's flag as at a start (V8 rejects a cache
 * made under other flags, and every start would then rewrite it).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest"

const flags: Array<string> = []

vi.mock("node:v8", async (importOriginal) => ({
  ...(await importOriginal<typeof import("node:v8")>()),
  setFlagsFromString: (flag: string) => {
    flags.push(flag)
  },
}))

const COMPILER = /turbofan/

/** A fresh copy of the module (its state is per process), with no flag of the user's. */
const load = async () => {
  vi.resetModules()
  return import("../src/HeapTuning.js")
}

beforeEach(() => {
  flags.length = 0
  vi.stubEnv("NODE_OPTIONS", "")
})

afterEach(() => {
  vi.unstubAllEnvs()
  Reflect.deleteProperty(globalThis, Symbol.for("skills-mcp/optimizerOff"))
  Reflect.deleteProperty(globalThis, Symbol.for("skills-mcp/oldGenerationGrowth"))
})

describe("the optimizing compiler", () => {
  it("is turned off once start-up is over, once, and not before", async () => {
    const tuning = await load()
    tuning.manageHeap()
    tuning.beginFirstScan()
    expect(flags.filter((flag) => COMPILER.test(flag))).toEqual([])
    tuning.endStartUp()
    tuning.endStartUp()
    expect(flags.filter((flag) => COMPILER.test(flag))).toEqual(["--no-turbofan"])
  })

  it("is on while a code cache is made after start-up, and off again after", async () => {
    const tuning = await load()
    tuning.manageHeap()
    tuning.beginFirstScan()
    tuning.endStartUp()
    flags.length = 0
    const during = tuning.underStartFlags(() => [...flags])
    // The heap's flags as at a start too (after start-up, also the old generation's growth).
    expect(during).toEqual(["--turbofan", "--semi-space-growth-factor=1", "--heap-growing-percent=30"])
    expect(flags).toEqual([...during, "--no-turbofan"])
  })

  it("is left as it is for a code cache made during start-up", async () => {
    const tuning = await load()
    tuning.manageHeap()
    tuning.beginFirstScan()
    tuning.underStartFlags(() => undefined)
    expect(flags.filter((flag) => COMPILER.test(flag))).toEqual([])
  })

  it("is left to V8 when the user gives Node flags about it", async () => {
    for (const option of ["--jitless", "--max-opt=2", "--no-opt"]) {
      vi.stubEnv("NODE_OPTIONS", option)
      const tuning = await load()
      tuning.manageHeap()
      tuning.beginFirstScan()
      tuning.endStartUp()
      tuning.underStartFlags(() => undefined)
      expect(flags.filter((flag) => COMPILER.test(flag))).toEqual([])
    }
  })

  it("is left as it is by the library (only the executable manages V8's flags)", async () => {
    const tuning = await load()
    tuning.beginFirstScan()
    tuning.endStartUp()
    expect(flags).toEqual([])
  })
})
