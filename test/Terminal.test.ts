/** What a terminal is given: no control character of a skill's name or folder reaches it raw. */
import { describe, expect, it } from "@effect/vitest"
import { forTerminal, linesForTerminal } from "../src/Terminal.js"

describe("forTerminal", () => {
  it.each([
    ["plain text, ünïcödé and emoji 📄", "plain text, ünïcödé and emoji 📄"],
    ["clear\u001b[2Jscreen", "clear\\x1b[2Jscreen"],
    ["title\u001b]0;pwned\u0007", "title\\x1b]0;pwned\\x07"],
    ["\u001b]8;;https://evil.example\u001b\\link", "\\x1b]8;;https://evil.example\\x1b\\link"],
    ["hidden\u001b[8m", "hidden\\x1b[8m"],
    ["row\nforged\r\ttab", "row\\nforged\\r\\ttab"],
    ["nul\u0000 del\u007f csi\u009b", "nul\\x00 del\\x7f csi\\x9b"],
    ["abc\u202edcba\u2066x\u2069", "abc\\u202edcba\\u2066x\\u2069"],
    ["line\u2028sep", "line\\u2028sep"],
  ])("shows %j as %j", (raw, shown) => {
    expect(forTerminal(raw)).toBe(shown)
  })

  it("keeps the line breaks of text made of lines, escaping the rest", () => {
    expect(linesForTerminal("Error: x\u001b[2J\n    at y")).toBe("Error: x\\x1b[2J\n    at y")
  })
})
