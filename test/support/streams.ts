/**
 * In-memory streams for transport tests: an output that takes a line only when the test says
 * so, like a client that reads its input slowly or not at all.
 */
import { Writable } from "node:stream"

export const heldOutput = () => {
  /** Lines the output has taken (parsed), in order. */
  const taken: Array<Record<string, unknown>> = []
  const held: Array<{ line: string; done: () => void }> = []
  // highWaterMark 1: every write backs the output up until the line is taken.
  const output = new Writable({
    highWaterMark: 1,
    write(chunk: Buffer, _encoding, callback) {
      held.push({ line: chunk.toString("utf8"), done: () => callback() })
    },
  })
  return {
    output,
    taken,
    /** The output takes the line it holds (a Writable is handed one line at a time); false if none. */
    take: () => {
      const next = held.shift()
      if (next === undefined) return false
      taken.push(JSON.parse(next.line) as Record<string, unknown>)
      next.done()
      return true
    },
  }
}
