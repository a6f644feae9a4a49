import { describe, expect, it } from "@effect/vitest"
import { bodyParts, forEachTerm, queryWords } from "../src/catalog/Words.js"

const terms = (text: string) => {
  const found: Array<string> = []
  forEachTerm(text, (term) => found.push(term))
  return found
}

describe("search words", () => {
  it("split on anything but letters and digits, lowercase, without stop words", () => {
    expect(terms("Fill the PDF-forms of a Web_app!")).toEqual(["fill", "pdf", "form", "web", "app"])
    expect(terms("the and of what should I do")).toEqual([])
  })

  it("split hyphenated ids, camelCase, acronyms and numbers, keeping the whole word", () => {
    expect(terms("test-driven-development")).toEqual(["test", "driven", "develop"])
    // (The Porter stemmer makes "use" "us", on both sides of a search alike.)
    expect(terms("useEffect")).toEqual(["useeffect", "us", "effect"])
    expect(terms("PDFParser")).toEqual(["pdfparser", "pdf", "parser"])
    expect(terms("pdf2docx")).toEqual(["pdf2docx", "pdf", "2", "docx"])
    expect(terms("TDD")).toEqual(["tdd"])
  })

  it("stem English words, so other forms of a word meet", () => {
    expect(terms("failing failed fails")).toEqual(["fail", "fail", "fail"])
    expect(terms("tests testing tested")).toEqual(["test", "test", "test"])
    expect(terms("spreadsheets")).toEqual(["spreadsheet"])
    // Words that are not plain English letters are kept as they are.
    expect(terms("Größe café")).toEqual(["größe", "café"])
  })

  it("leave out contractions' pieces and runs too long to be words", () => {
    expect(terms("I'm sure it doesn't")).toEqual(["sure"])
    expect(terms(`${"a1".repeat(40)} real`)).toEqual(["real"])
  })

  it("keep a query word as typed beside its term, each term once", () => {
    expect(queryWords("Forms forms FORM")).toEqual([{ term: "form", word: "forms" }])
  })
})

describe("body parts", () => {
  it("set headings apart from the text, but not # lines inside code fences", () => {
    const body = "# Debugging\n\nFind the root cause.\n\n## Steps\n```bash\n# a comment\nrun\n```\n#hashtag\n"
    const { headings, text } = bodyParts(body)
    expect(headings.split("\n")).toEqual(["# Debugging", "## Steps"])
    expect(text).toContain("# a comment")
    expect(text).toContain("#hashtag")
    expect(text).toContain("Find the root cause.")
  })
})
