// The engine's event-loop lag over a bench run (src/platform/loop-lag.ts
// writes it when MUSTER_LOOP_LAG_FILE is set): the report read at the start
// and at the end of the run, the difference summed up, and each lag of 20 ms
// or more given a cause from what the engine noted about it.
import { existsSync, readFileSync } from 'node:fs'
import type { LagReport, Stall } from '../src/platform/loop-lag.ts'
import { up } from './agents.ts'

export function readLag(file: string): LagReport | null {
  if (!existsSync(file)) return null
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as LagReport
  } catch {
    return null
  }
}

/** Heartbeat work a lag's answers explain, at this many µs each (bench/heartbeat-wrk.sh's CPU a request, rounded up). */
const BEAT_US = 40

/** What held the loop, from what the engine noted: a section, the heartbeats answered, the collector, or the machine. */
export function causeOf(s: Stall): string {
  const span = s.spans[0]
  if (span && span[1] >= s.lagMs / 2) return span[0]
  if (s.mainCpuMs < s.lagMs / 2) return s.allCpuMs - s.mainCpuMs >= s.lagMs / 2 ? 'main thread waiting, other threads on the CPU (the collector)' : 'main thread off the CPU (the machine\'s other work)'
  if ((s.beats * BEAT_US) / 1000 >= s.lagMs / 2) return 'answering heartbeats back to back'
  return 'main thread on the CPU, no section marked (a collection\'s pause, or unmarked code)'
}

export interface LagSummary {
  samples: number
  p50: number
  p99: number
  p999: number
  max: number
  /** The longest lag its main thread spent on the CPU (what the machine's load does not explain). */
  maxOnCpu: number
  over: { 20: number; 50: number; 100: number }
  lines: string[]
}

const EDGES = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000]

/** The lag between two reports of the same engine (`before` null: since it started serving). */
export function summarize(before: LagReport | null, after: LagReport, from: number, to: number): LagSummary {
  const h = after.histogram.map((c, i) => c - (before?.histogram[i] ?? 0))
  const samples = h.reduce((a, b) => a + b, 0)
  const at = (q: number) => {
    let seen = 0
    for (let i = 0; i < h.length; i++) {
      seen += h[i]!
      if (seen > q * samples) return (i + 1) * after.bucketMs
    }
    return Number.NaN
  }
  const stalls = after.stalls.filter((s) => s.at >= from && s.at <= to)
  let top = h.length - 1
  while (top > 0 && h[top] === 0) top--
  const max = Math.max((top + 1) * after.bucketMs, ...stalls.map((s) => s.lagMs))
  const maxOnCpu = Math.max(0, ...stalls.map((s) => Math.min(s.lagMs, s.mainCpuMs)))
  const bucketCount = (lo: number, hi: number) => h.slice(Math.floor(lo / after.bucketMs), Math.floor(hi / after.bucketMs)).reduce((a, b) => a + b, 0)
  const hist = EDGES.map((e, i) => `${i === 0 ? 0 : EDGES[i - 1]}-${e} ms ${bucketCount(i === 0 ? 0 : EDGES[i - 1]!, e)}`)
  hist.push(`${EDGES.at(-1)}+ ms ${bucketCount(EDGES.at(-1)!, h.length * after.bucketMs)}`)
  const byCause = new Map<string, { n: number; ms: number; max: number }>()
  for (const s of stalls) {
    const c = causeOf(s)
    const e = byCause.get(c) ?? { n: 0, ms: 0, max: 0 }
    e.n++
    e.ms += s.lagMs
    e.max = Math.max(e.max, s.lagMs)
    byCause.set(c, e)
  }
  const lines = [
    `histogram ${hist.join(', ')}`,
    ...[...byCause].sort((a, b) => b[1].ms - a[1].ms).map(([c, e]) => `lags >= 20 ms from ${c}: ${e.n}, ${up(e.ms, 0)} ms in all, longest ${up(e.max, 1)} ms`),
    ...[...stalls]
      .sort((a, b) => b.lagMs - a.lagMs)
      .slice(0, 5)
      .map((s) => `longest: ${up(s.lagMs, 1)} ms at +${up((s.at - from) / 1000, 1)} s: main thread ${up(s.mainCpuMs, 1)} ms on the CPU, all threads ${up(s.allCpuMs, 1)} ms, ${s.beats} heartbeats answered, heap ${s.heapDeltaMB >= 0 ? '+' : ''}${s.heapDeltaMB} MB; ${s.spans.map(([n, ms, cpu]) => `${n} ${up(ms, 1)} ms (${up(cpu, 1)} ms CPU)`).join(', ') || 'no section marked'}`),
    ...sectionLines(before, after, from, to),
  ]
  return { samples, p50: at(0.5), p99: at(0.99), p999: at(0.999), max, maxOnCpu, over: { 20: stalls.filter((s) => s.lagMs >= 20).length, 50: stalls.filter((s) => s.lagMs >= 50).length, 100: stalls.filter((s) => s.lagMs >= 100).length }, lines }
}

/** One line: the figures; then the histogram, the causes and the longest lags, each on a line of its own after `prefix`. */
export function lagText(prefix: string, s: LagSummary): string {
  const head = `${prefix} event-loop lag (a timer every 10 ms, ${s.samples} samples): p50 ${up(s.p50, 2)} ms, p99 ${up(s.p99, 2)} ms, p99.9 ${up(s.p999, 2)} ms, max ${up(s.max, 1)} ms (of it on the main thread's CPU at most ${up(s.maxOnCpu, 1)} ms); lags >= 20 ms: ${s.over[20]}, >= 50 ms: ${s.over[50]}, >= 100 ms: ${s.over[100]}`
  return [head, ...s.lines.map((l) => `${prefix}   ${l}`)].join('\n')
}

/**
 * The collector's pauses, from what JavaScriptCore logs with BUN_JSC_logGC=1 (bench --gc-log): each
 * increment's `p=` is how long it stopped the program. `text`: the engine's stderr over the run.
 */
export function gcText(prefix: string, text: string, seconds: number): string {
  const pauses = [...text.matchAll(/ p=([\d.]+)ms/g)].map((m) => Number(m[1]))
  const full = (text.match(/=> FullCollection/g) ?? []).length
  const eden = (text.match(/=> EdenCollection/g) ?? []).length
  const sum = pauses.reduce((a, b) => a + b, 0)
  const max = Math.max(0, ...pauses)
  return `${prefix} collector (BUN_JSC_logGC): ${full} full and ${eden} eden collections in ${seconds} s, ${pauses.length} pauses, ${up(sum, 0)} ms paused in all (${up(sum / seconds / 10, 2)}% of the time), longest ${up(max, 1)} ms, ${pauses.filter((p) => p >= 20).length} pauses >= 20 ms, ${pauses.filter((p) => p >= 50).length} >= 50 ms`
}

/**
 * Each marked section over the run: how many ran, the CPU they took a second, and the longest by CPU
 * (what other work on the machine does not lengthen: the loop held for that long on a quiet machine too)
 * and by wall time.
 */
function sectionLines(before: LagReport | null, after: LagReport, from: number, to: number): string[] {
  const seconds = Math.max(1, (to - from) / 1000)
  return Object.entries(after.sections ?? {})
    .map(([name, s]) => {
      const b = before?.sections?.[name]
      const long = s.long.filter(([at]) => at >= from && at <= to)
      const cpu = Math.max(0, ...long.map((l) => l[1]))
      const wall = Math.max(0, ...long.map((l) => l[2]))
      return { name, n: s.n - (b?.n ?? 0), cpuMs: s.cpuMs - (b?.cpuMs ?? 0), cpu, wall }
    })
    .filter((s) => s.n > 0)
    .sort((a, b) => b.cpu - a.cpu)
    .map((s) => `section ${s.name}: ${s.n} runs, ${up(s.cpuMs / seconds, 1)} ms of CPU a second, longest ${up(s.cpu, 1)} ms of CPU (${up(s.wall, 1)} ms wall)`)
}
