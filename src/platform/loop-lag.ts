// The event loop's lag, for the benchmarks (docs/benchmarks.md): a timer
// due every 10 ms notes how late it fired, into a histogram, and for each lag
// of 20 ms or more what the engine did meanwhile: the CPU its main thread
// and all its threads used (a lag the main thread spent off the CPU was the
// machine's, not the engine's; one where the other threads ran is the
// collector's), the heartbeats answered, and the sections that ran
// (src/loop-spans.ts). Written as JSON to a file every second; only when
// MUSTER_LOOP_LAG_FILE names one.
import { renameSync, writeFileSync } from 'node:fs'
import { heapSize } from 'bun:jsc'
import { keepSpans, sectionReport, spansBetween } from '../loop-spans.ts'
import { tunable } from '../tunables.ts'

const TICK_MS = 10
/** Lags from this long on are kept one by one, with what ran. */
const STALL_MS = 20
const MAX_STALLS = 2000
/** The histogram: 0.25 ms buckets up to 2 s, then one for the rest. */
const BUCKET_MS = 0.25
const BUCKETS = 8000

export interface Stall {
  /** When the late timer fired (epoch ms). */
  at: number
  lagMs: number
  /** CPU the engine's main thread used in the interval (ms); far below the lag: the machine took the core. */
  mainCpuMs: number
  /** CPU of all the engine's threads (the collector's helpers among them). */
  allCpuMs: number
  /** Heartbeats answered in the interval. */
  beats: number
  /** Heap after the interval minus before (MB): a fall is a collection's sweep. */
  heapDeltaMB: number
  /** The sections that ran in it, longest first: name, ms of the lag it covered, and its CPU ms. */
  spans: [string, number, number][]
}

export interface LagReport {
  tickMs: number
  bucketMs: number
  /** Lags counted in each bucket (index × bucketMs); the last bucket holds every longer one. */
  histogram: number[]
  samples: number
  maxMs: number
  stalls: Stall[]
  /** The marked sections (src/loop-spans.ts): how many ran, their CPU, and the long ones ([epoch ms, CPU ms, wall ms]). */
  sections: ReturnType<typeof sectionReport>
  /** When the report was written (epoch ms). */
  writtenAt: number
}

const cpuMs = (u: { user: number; system: number }) => (u.user + u.system) / 1000

/** sampleLoopLag into the file MUSTER_LOOP_LAG_FILE names; nothing when it names none. */
export function sampleLoopLagIfAsked(beats: () => number): () => void {
  const file = tunable('MUSTER_LOOP_LAG_FILE')
  return file ? sampleLoopLag(file, beats) : () => {}
}

/** Samples until the returned stop is called, writing the report to `file` every second. */
export function sampleLoopLag(file: string, beats: () => number): () => void {
  keepSpans()
  const histogram = new Array<number>(BUCKETS + 1).fill(0)
  const stalls: Stall[] = []
  let samples = 0
  let maxMs = 0
  let last = performance.now()
  let lastMain = cpuMs(process.threadCpuUsage())
  let lastAll = cpuMs(process.cpuUsage())
  let lastBeats = beats()
  let lastHeap = heapSize()
  const tick = setInterval(() => {
    const now = performance.now()
    const lag = Math.max(0, now - last - TICK_MS)
    samples++
    histogram[Math.min(BUCKETS, Math.floor(lag / BUCKET_MS))]!++
    if (lag > maxMs) maxMs = lag
    const main = cpuMs(process.threadCpuUsage())
    const all = cpuMs(process.cpuUsage())
    const heap = heapSize()
    const beaten = beats()
    if (lag >= STALL_MS && stalls.length < MAX_STALLS) {
      const held = new Map<string, [number, number]>()
      for (const s of spansBetween(last, now)) {
        const h = held.get(s.name) ?? [0, 0]
        h[0] += Math.min(s.end, now) - Math.max(s.start, last)
        h[1] += s.cpu
        held.set(s.name, h)
      }
      stalls.push({
        at: Date.now(),
        lagMs: round(lag),
        mainCpuMs: round(main - lastMain),
        allCpuMs: round(all - lastAll),
        beats: beaten - lastBeats,
        heapDeltaMB: round((heap - lastHeap) / 1048576),
        spans: [...held].sort((a, b) => b[1][0] - a[1][0]).slice(0, 4).map(([n, [ms, cpu]]) => [n, round(ms), round(cpu)]),
      })
    }
    lastMain = main
    lastAll = all
    lastHeap = heap
    lastBeats = beaten
    last = performance.now()
  }, TICK_MS)
  const write = () => {
    const report: LagReport = { tickMs: TICK_MS, bucketMs: BUCKET_MS, histogram, samples, maxMs: round(maxMs), stalls, sections: sectionReport(), writtenAt: Date.now() }
    writeFileSync(`${file}.tmp`, JSON.stringify(report))
    renameSync(`${file}.tmp`, file)
  }
  const writer = setInterval(write, 1000)
  return () => {
    clearInterval(tick)
    clearInterval(writer)
    write()
  }
}

const round = (x: number) => Math.round(x * 100) / 100
