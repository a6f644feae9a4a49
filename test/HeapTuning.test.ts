/**
 * V8's budget for optimizing and its inlining limit (src/HeapTuning.ts), with V8's flags
 * recorded instead of set: ten times V8 11.3's budget and under a quarter of its inlining once
 * the handshake is done, in the executable only, and V8's own while a code cache is made.
 */
import { beforeEach, describe, expect, it, vi } from "vitest"

const flagsSet = vi.hoisted(() => [] as Array<string>)
vi.mock("node:v8", async (importOriginal) => ({
  ...(await importOriginal<typeof import("node:v8")>()),
  setFlagsFromString: (flag: string) => {
    flagsSet.push(flag)
  },
}))

/** Node 20's V8, whose default budget the server knows. */
const budgetChanges = process.versions.v8.startsWith("11.3.")
const budgets = () =>
  flagsSet.filter((flag) => /--interrupt-budget|--max-inlined-bytecode-size-cumulative/.test(flag))
/** The optimizer's flags set at the handshake, and a start's. */
const REST = "--interrupt-budget=675840 --max-inlined-bytecode-size-cumulative=200"
const START = "--interrupt-budget=67584 --max-inlined-bytecode-size-cumulative=920"

/** A fresh copy of the module, as a new process would have, and no budget set by another. */
const heapTuning = async () => {
  vi.resetModules()
  Reflect.deleteProperty(globalThis, Symbol.for("skills-mcp/optimizerFlags"))
  Reflect.deleteProperty(globalThis, Symbol.for("skills-mcp/heapFlags"))
  return import("../src/HeapTuning.js")
}

beforeEach(() => {
  flagsSet.length = 0
})

describe("V8's budget for optimizing", () => {
  it("is ten times V8's once the handshake is done, set once", async () => {
    const { manageHeap, optimizeLater } = await heapTuning()
    manageHeap()
    expect(budgets()).toEqual([])
    optimizeLater()
    optimizeLater()
    expect(budgets()).toEqual(budgetChanges ? [REST] : [])
  })

  it("is left to V8 outside the executable (the library)", async () => {
    const { optimizeLater } = await heapTuning()
    optimizeLater()
    expect(budgets()).toEqual([])
  })

  it("is V8's own while a code cache is made after the handshake, then the server's again", async () => {
    const { manageHeap, optimizeLater, underStartFlags } = await heapTuning()
    manageHeap()
    optimizeLater()
    let whileMade: Array<string> = []
    const made = underStartFlags(() => {
      whileMade = budgets()
      return "cache"
    })
    expect(made).toBe("cache")
    expect(whileMade).toEqual(budgetChanges ? [REST, START] : [])
    expect(budgets()).toEqual(budgetChanges ? [REST, START, REST] : [])
  })

  it("leaves alone a flag the user gave Node, and puts back only its own for a code cache", async () => {
    const { manageHeap, optimizeLater, underStartFlags } = await heapTuning()
    const options = process.env.NODE_OPTIONS
    process.env.NODE_OPTIONS = `${options ?? ""} --max-inlined-bytecode-size-cumulative=500`
    try {
      manageHeap()
      optimizeLater()
      underStartFlags(() => "cache")
    } finally {
      if (options === undefined) delete process.env.NODE_OPTIONS
      else process.env.NODE_OPTIONS = options
    }
    const rest = "--interrupt-budget=675840"
    expect(budgets()).toEqual(budgetChanges ? [rest, "--interrupt-budget=67584", rest] : [])
  })

  it("is V8's own while a code cache is made before the handshake", async () => {
    const { manageHeap, underStartFlags } = await heapTuning()
    manageHeap()
    underStartFlags(() => "cache")
    expect(budgets()).toEqual([])
  })
})
