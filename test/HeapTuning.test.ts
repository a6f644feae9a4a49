/**
 * V8's budget for optimizing (src/HeapTuning.ts), with V8's flags recorded instead of set: ten
 * times V8 11.3's once the handshake is done, in the executable only, and V8's own while a code
 * cache is made.
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
const budgets = () => flagsSet.filter((flag) => flag.startsWith("--interrupt-budget"))

/** A fresh copy of the module, as a new process would have, and no budget set by another. */
const heapTuning = async () => {
  vi.resetModules()
  Reflect.deleteProperty(globalThis, Symbol.for("skills-mcp/interruptBudget"))
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
    expect(budgets()).toEqual(budgetChanges ? ["--interrupt-budget=675840"] : [])
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
    const rest = "--interrupt-budget=675840"
    expect(whileMade).toEqual(budgetChanges ? [rest, "--interrupt-budget=67584"] : [])
    expect(budgets()).toEqual(budgetChanges ? [rest, "--interrupt-budget=67584", rest] : [])
  })

  it("is V8's own while a code cache is made before the handshake", async () => {
    const { manageHeap, underStartFlags } = await heapTuning()
    manageHeap()
    underStartFlags(() => "cache")
    expect(budgets()).toEqual([])
  })
})
