/**
 * The idle collector: one full collection once nothing waits and it is worth it, never while
 * requests come in or are in flight, nor while the heap is still growing.
 */
import { describe, expect, it } from "@effect/vitest"
import {
  BURST_REQUESTS,
  CALM_BYTES,
  collectAtHandshake,
  GROWTH_BYTES,
  HANDSHAKE_BYTES,
  idleCollector,
} from "../src/IdleGc.js"

const MB = 1024 * 1024

/** A server's counters, set by the test, and a collector that counts its runs. */
const setup = () => {
  const state = { received: 0, pending: 0, heap: 10 * MB, startingUp: false }
  let runs = 0
  const look = idleCollector(
    {
      received: () => state.received,
      pending: () => state.pending,
      heapUsed: () => state.heap,
      startingUp: () => state.startingUp,
    },
    () => () => {
      runs++
      state.heap = 10 * MB // what a full collection leaves
    },
  )
  return { state, look, runs: () => runs }
}

describe("idleCollector", () => {
  it("collects once after the start-up work, when idle, and not again without cause", () => {
    const { state, look, runs } = setup()
    state.heap = 60 * MB
    expect(look()).toBe(false) // a first look has nothing to compare with
    state.heap += 4 * MB // background work still allocating
    expect(look()).toBe(false)
    expect(look()).toBe(true)
    expect(runs()).toBe(1)
    expect(look()).toBe(false)
    state.heap += GROWTH_BYTES - MB
    expect(look()).toBe(false)
    expect(look()).toBe(false)
    expect(runs()).toBe(1)
  })

  it("waits for the start-up work in the background, even while the heap stays still", () => {
    const { state, look, runs } = setup()
    state.heap = 60 * MB
    state.startingUp = true
    look()
    for (let step = 0; step < 5; step++) expect(look()).toBe(false)
    state.startingUp = false
    expect(look()).toBe(true)
    expect(runs()).toBe(1)
  })

  it("never collects while requests come in or are in flight", () => {
    const { state, look, runs } = setup()
    state.heap = 60 * MB
    for (let step = 0; step < 5; step++) {
      state.received++
      expect(look()).toBe(false)
    }
    state.pending = 1
    expect(look()).toBe(false)
    expect(look()).toBe(false)
    state.pending = 0
    expect(look()).toBe(true)
    expect(runs()).toBe(1)
  })

  it("waits for the heap to stop growing", () => {
    const { state, look, runs } = setup()
    state.heap = 60 * MB
    look()
    for (let step = 0; step < 5; step++) {
      state.heap += CALM_BYTES
      expect(look()).toBe(false)
    }
    state.heap += CALM_BYTES - 1
    expect(look()).toBe(true)
    expect(runs()).toBe(1)
  })

  it("collects after a burst of requests even when the heap did not grow", () => {
    const { state, look, runs } = setup()
    state.heap = 60 * MB
    look()
    expect(look()).toBe(true)
    state.received += BURST_REQUESTS - 1
    look()
    expect(look()).toBe(false)
    state.received += 1
    look()
    expect(look()).toBe(true)
    expect(runs()).toBe(2)
  })

  it("does nothing when the collector cannot be had", () => {
    const state = { received: 0, pending: 0, heap: 60 * MB }
    const look = idleCollector(
      {
        received: () => state.received,
        pending: () => state.pending,
        heapUsed: () => state.heap,
        startingUp: () => false,
      },
      () => null,
    )
    look()
    expect(look()).toBe(false)
    expect(look()).toBe(false)
  })
})

describe("collectAtHandshake", () => {
  /** A collector that counts its runs, and how often it was asked for. */
  const counting = () => {
    const counts = { asked: 0, runs: 0 }
    const collect = () => {
      counts.asked++
      return () => {
        counts.runs++
      }
    }
    return { counts, collect }
  }

  it("collects once when the heap in use has reached the bound", () => {
    const { counts, collect } = counting()
    expect(collectAtHandshake(() => HANDSHAKE_BYTES, collect)).toBe(true)
    expect(counts).toEqual({ asked: 1, runs: 1 })
  })

  it("leaves a smaller heap alone, without even asking for the collector", () => {
    const { counts, collect } = counting()
    expect(collectAtHandshake(() => HANDSHAKE_BYTES - 1, collect)).toBe(false)
    expect(counts).toEqual({ asked: 0, runs: 0 })
  })

  it("does nothing when the collector cannot be had", () => {
    expect(
      collectAtHandshake(
        () => 2 * HANDSHAKE_BYTES,
        () => null,
      ),
    ).toBe(false)
  })
})
