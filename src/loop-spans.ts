// What held the event loop: the sections that may run long at fleet size (a
// heartbeat flush's chunk, a sweep over every node, a listing) say when they
// ran and how much CPU the thread spent in them, so that the lag sampler
// (src/platform/loop-lag.ts) can name the code that ran during each long lag
// and the benchmarks can print the longest section by its CPU, which other
// work on the machine does not lengthen (docs/benchmarks.md). Off unless the
// sampler runs: then a section costs two clock reads.

export interface Span {
  name: string
  start: number
  end: number
  /** CPU the thread spent in it (ms). */
  cpu: number
}

/** A section's start (null while spans are off). */
export type Mark = { wall: number; cpu: number } | null

/** A section is kept in the ring (for lags) from this long on, and in its history from this much CPU or wall on. */
const RING_FROM_MS = 1
const HISTORY_CPU_MS = 1
const HISTORY_WALL_MS = 5
const RING = 512
const HISTORY = 5000

let on = false
const ring: (Span | undefined)[] = new Array(RING)
let next = 0
/** Per section name: [epoch ms at its end, CPU ms, wall ms] of the long ones. */
const history = new Map<string, [number, number, number][]>()
/** Per section name: how many ran and their CPU in all (ms). */
const totals = new Map<string, { n: number; cpu: number }>()

const threadCpuMs = () => {
  const u = process.threadCpuUsage()
  return (u.user + u.system) / 1000
}

/** Starts keeping spans (the lag sampler calls this). */
export function keepSpans(): void {
  on = true
}

export function spanStart(): Mark {
  return on ? { wall: performance.now(), cpu: threadCpuMs() } : null
}

/** Marks a section that started at `mark` and ends now. */
export function spanEnd(name: string, mark: Mark): void {
  if (mark === null) return
  const end = performance.now()
  const cpu = threadCpuMs() - mark.cpu
  const wall = end - mark.wall
  const t = totals.get(name) ?? { n: 0, cpu: 0 }
  t.n++
  t.cpu += cpu
  totals.set(name, t)
  if (cpu >= HISTORY_CPU_MS || wall >= HISTORY_WALL_MS) {
    const h = history.get(name) ?? []
    if (h.length < HISTORY) h.push([Date.now(), round(cpu), round(wall)])
    history.set(name, h)
  }
  if (wall < RING_FROM_MS) return
  ring[next] = { name, start: mark.wall, end, cpu }
  next = (next + 1) % RING
}

/** Runs `fn` as a section named `name` (synchronous code: the span is the time it held the loop). */
export function spanned<T>(name: string, fn: () => T): T {
  const mark = spanStart()
  try {
    return fn()
  } finally {
    spanEnd(name, mark)
  }
}

/** The kept spans that overlap [from, to] (performance.now() times). */
export function spansBetween(from: number, to: number): Span[] {
  const out: Span[] = []
  for (const s of ring) if (s !== undefined && s.end >= from && s.start <= to) out.push(s)
  return out.sort((a, b) => a.start - b.start)
}

/** Every section so far: counts, CPU in all, and the long ones with their times. */
export function sectionReport(): Record<string, { n: number; cpuMs: number; long: [number, number, number][] }> {
  const out: Record<string, { n: number; cpuMs: number; long: [number, number, number][] }> = {}
  for (const [name, t] of totals) out[name] = { n: t.n, cpuMs: round(t.cpu), long: history.get(name) ?? [] }
  return out
}

const round = (x: number) => Math.round(x * 100) / 100
