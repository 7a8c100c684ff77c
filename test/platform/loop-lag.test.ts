// The benchmarks' event-loop lag (src/platform/loop-lag.ts): a section that
// holds the loop shows as a lag of its length in the histogram and the
// maximum, and the stall names the section that ran (src/loop-spans.ts),
// with the CPU the thread spent in it; a quiet loop shows no stall.
import { expect, test } from 'bun:test'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { spanned } from '../../src/loop-spans.ts'
import { sampleLoopLag, type LagReport } from '../../src/platform/loop-lag.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

/** Holds the loop until the thread has spent `ms` of CPU (however busy the machine, the lag is at least that). */
const hold = (ms: number) => {
  const cpu = () => {
    const u = process.threadCpuUsage()
    return (u.user + u.system) / 1000
  }
  const until = cpu() + ms
  while (cpu() < until) {}
}

test('a section that holds the event loop shows as a lag, named, with its CPU', async () => {
  using dir = tmpDir()
  const file = join(dir.path, 'lag.json')
  const stop = sampleLoopLag(file, () => 0)
  try {
    await Bun.sleep(100)
    spanned('a held loop', () => hold(100))
    await waitFor(() => existsSync(file) && (JSON.parse(readFileSync(file, 'utf8')) as LagReport).stalls.length > 0, { timeoutMs: 10_000 })
    const report = JSON.parse(readFileSync(file, 'utf8')) as LagReport
    const stall = report.stalls.find((s) => s.spans.some(([name]) => name === 'a held loop'))!
    expect(stall.lagMs).toBeGreaterThanOrEqual(100)
    expect(report.maxMs).toBeGreaterThanOrEqual(100)
    const [, covered, cpu] = stall.spans.find(([name]) => name === 'a held loop')!
    expect(covered).toBeGreaterThanOrEqual(100)
    expect(cpu).toBeGreaterThanOrEqual(100) // it ran on the CPU (a busy loop), not off it
    expect(stall.mainCpuMs).toBeGreaterThanOrEqual(100)
    // the histogram holds the lag in its bucket, and the section's own record is kept
    const bucket = Math.floor(stall.lagMs / report.bucketMs)
    expect(report.histogram[Math.min(bucket, report.histogram.length - 1)]).toBeGreaterThanOrEqual(1)
    expect(report.sections['a held loop']!.n).toBe(1)
    expect(report.sections['a held loop']!.long[0]![2]).toBeGreaterThanOrEqual(100)
  } finally {
    stop()
  }
})
