import { describe, expect, it } from "vitest"
import { idFilter } from "../src/Access.js"

describe("idFilter", () => {
  it("matches an id and a pattern whatever Unicode form each is written in", () => {
    const composed = "caf\u00e9"
    const decomposed = "cafe\u0301"
    for (const pattern of [`${composed}-*`, `${decomposed}-*`]) {
      const permits = idFilter([], [pattern])
      expect(permits?.(`${composed}-secret`)).toBe(false)
      expect(permits?.(`${decomposed}-secret`)).toBe(false)
      expect(permits?.("pdf")).toBe(true)
    }
    expect(idFilter([`${decomposed}*`], [])?.(`${composed}-notes`)).toBe(true)
  })
})
