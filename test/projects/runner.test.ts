import { afterEach, describe, expect, test } from 'bun:test'
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { bootId, procStat } from '../../src/replicas/procs.ts'
import { Runner, type RunnerOptions } from '../../src/replicas/runner.ts'
import type { AssignedReplica } from '../../src/wire/projects.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

/**
 * Every runner a test makes is stopped after it, whatever happened, so no replica outlives its test. A released
 * one is left alone: the runner that adopted its replicas stops them (and its records may name PIDs that are gone).
 */
const made: Runner[] = []
const released = new Set<Runner>()
function makeRunner(opts: RunnerOptions): Runner {
  const r = new Runner(opts)
  const release = r.release.bind(r)
  r.release = () => (released.add(r), release())
  made.push(r)
  return r
}
afterEach(async () => {
  await Promise.all(made.splice(0).filter((r) => !released.has(r)).map((r) => r.stopAll()))
  released.clear()
})

const replica = (command: string[], more: Partial<AssignedReplica> = {}): AssignedReplica => ({ project: 'p', replica: 0, revision: 1, command, env: {}, cpu: 10, memory: 10, ...more })

/** The child's pid once it has printed that its TERM trap is set (the log's header holds the command, not that line). */
function childOnceTrapped(runner: Runner): number | undefined {
  const log = readFileSync(runner.logFile('p', 0), 'utf8')
  const child = /^child (\d+)$/m.exec(log)
  return child && /^trap set$/m.test(log) ? Number(child[1]) : undefined
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

describe('runner', () => {
  test('runs a replica with its env and MUSTER_PROJECT/MUSTER_REPLICA, output in its log', async () => {
    using dir = tmpDir()
    const runner = makeRunner({ logDir: dir.path })
    runner.apply([replica(['sh', '-c', 'echo "hello $GREETING $MUSTER_PROJECT $MUSTER_REPLICA"; sleep 30'], { env: { GREETING: 'world' }, replica: 3 })])
    await waitFor(() => existsSync(runner.logFile('p', 3)) && readFileSync(runner.logFile('p', 3), 'utf8').includes('hello world p 3'))
    expect(runner.status()).toEqual([{ project: 'p', replica: 3, revision: 1, state: 'running', exitCode: null }])
    await runner.stopAll()
    expect(runner.status()).toEqual([])
  })

  test('a crashing replica is restarted with growing backoff and reported failed with its exit code', async () => {
    using dir = tmpDir()
    const runner = makeRunner({ logDir: dir.path, backoffStartMs: 100, backoffMaxMs: 400 })
    runner.apply([replica(['sh', '-c', 'echo run; exit 3'])])
    await waitFor(() => runner.status()[0]?.state === 'failed')
    expect(runner.status()[0]!.exitCode).toBe(3)
    await waitFor(() => (readFileSync(runner.logFile('p', 0), 'utf8').match(/^run$/gm) ?? []).length >= 5, { timeoutMs: 45_000 })
    const log = readFileSync(runner.logFile('p', 0), 'utf8')
    // The backoff doubles from 100 ms up to the 400 ms cap …
    const delays = [...log.matchAll(/--- restarting in (\d+) ms/g)].map((m) => Number(m[1]))
    expect(delays.slice(0, 4)).toEqual([100, 200, 400, 400])
    // … and each restart waited at least that long (a busy machine only makes the gaps longer).
    const starts = [...log.matchAll(/--- (\S+) starting/g)].map((m) => Date.parse(m[1]!))
    const gaps = starts.slice(1, 5).map((t, i) => t - starts[i]!)
    gaps.forEach((gap, i) => expect(gap).toBeGreaterThanOrEqual(delays[i]! - 5))
    await runner.stopAll()
  })

  test('removing a replica stops its whole process group: SIGTERM, then SIGKILL after the grace', async () => {
    using dir = tmpDir()
    const runner = makeRunner({ logDir: dir.path, stopGraceMs: 300 })
    // the shell and its child both ignore TERM: only the SIGKILL after the grace ends them
    runner.apply([replica(['sh', '-c', 'trap "" TERM; sh -c \'trap "" TERM; echo tra""p set; exec sleep 60\' & echo child $!; wait'])])
    // Stop only once the child has set its trap (a TERM before it would end it by itself).
    const child = await waitFor(() => childOnceTrapped(runner))
    expect(alive(child)).toBe(true)
    const t0 = Date.now()
    runner.apply([])
    await waitFor(() => runner.status().length === 0)
    expect(Date.now() - t0).toBeGreaterThanOrEqual(250)
    await waitFor(() => !alive(child), { what: 'the child gone' })
  })

  test('a stop ends what the replica left behind in its group once the replica itself has exited', async () => {
    using dir = tmpDir()
    const runner = makeRunner({ logDir: dir.path, stopGraceMs: 60_000 })
    // the replica exits on TERM at once; its child ignores TERM and would live on
    runner.apply([replica(['sh', '-c', 'sh -c \'trap "" TERM; echo tra""p set; exec sleep 60\' & echo child $!; wait'])])
    // Stop only once the child has set its trap (a TERM before it would end it by itself, and the test would prove nothing).
    const child = await waitFor(() => childOnceTrapped(runner))
    expect(alive(child)).toBe(true)
    runner.apply([])
    await waitFor(() => runner.status().length === 0, { timeoutMs: 10_000, what: 'the replica stopped well before the grace' })
    await waitFor(() => !alive(child), { timeoutMs: 10_000, what: 'the child killed with the group' })
  })

  test('apply starts new revisions before the old one is dropped by the caller', async () => {
    using dir = tmpDir()
    const runner = makeRunner({ logDir: dir.path })
    const v1 = replica(['sleep', '30'])
    const v2 = replica(['sleep', '31'], { revision: 2 })
    runner.apply([v1])
    runner.apply([v1, v2])
    await waitFor(() => runner.status().filter((s) => s.state === 'running').length === 2)
    runner.apply([v2])
    await waitFor(() => runner.status().length === 1)
    expect(runner.status()[0]!.revision).toBe(2)
    await runner.stopAll()
  })

  test('released replicas keep running; the next runner adopts the same PIDs and stops only what is no longer assigned', async () => {
    using dir = tmpDir()
    const stateFile = `${dir.path}/replicas.json`
    const a = makeRunner({ logDir: dir.path, stateFile })
    const keep = replica(['sleep', '60'], { replica: 0 })
    const drop = replica(['sleep', '61'], { replica: 1 })
    a.apply([keep, drop])
    await waitFor(() => a.pids().length === 2)
    const before = Object.fromEntries(a.pids().map((p) => [p.replica, p.pid]))
    a.release()
    expect(alive(before[0]!) && alive(before[1]!)).toBe(true)
    const b = makeRunner({ logDir: dir.path, stateFile })
    // Adopted before any assignment arrives: reported running with the same PIDs.
    expect(Object.fromEntries(b.pids().map((p) => [p.replica, p.pid]))).toEqual(before)
    expect(b.status().every((s) => s.state === 'running')).toBe(true)
    b.apply([keep])
    await waitFor(() => !alive(before[1]!) || procStat(before[1]!)?.state === 'Z', { what: 'the unassigned replica stopped' })
    await waitFor(() => b.status().length === 1)
    expect(b.pids()).toEqual([{ project: 'p', replica: 0, revision: 1, pid: before[0]! }])
    expect(alive(before[0]!)).toBe(true)
    await b.stopAll()
    expect(readFileSync(stateFile, 'utf8')).not.toContain(String(before[0]))
  })

  test('a recorded PID that is now another process (recycled, or another boot) is never adopted nor signalled', async () => {
    using dir = tmpDir()
    const stateFile = `${dir.path}/replicas.json`
    const other = Bun.spawn(['sleep', '60'], { stdout: 'ignore', stderr: 'ignore' })
    try {
      const real = procStat(other.pid)!.startTime
      const records = [
        { project: 'p', replica: 0, revision: 1, pid: other.pid, startTime: String(Number(real) + 1), boot: bootId(), startedAt: Date.now() },
        { project: 'p', replica: 1, revision: 1, pid: other.pid, startTime: real, boot: 'another-boot', startedAt: Date.now() },
      ]
      writeFileSync(stateFile, JSON.stringify({ replicas: records }))
      const b = makeRunner({ logDir: dir.path, stateFile })
      expect(b.pids()).toEqual([])
      expect(b.status().map((s) => [s.replica, s.state, s.exitCode])).toEqual([[0, 'failed', null], [1, 'failed', null]])
      b.apply([])
      await waitFor(() => b.status().length === 0)
      expect(alive(other.pid)).toBe(true)
      expect(other.exitCode).toBeNull()
      await b.stopAll()
    } finally {
      other.kill('SIGKILL')
    }
  })

  test('a replica that exited while no runner ran is reported (status unknown) and restarted when still assigned', async () => {
    using dir = tmpDir()
    const stateFile = `${dir.path}/replicas.json`
    const spec = replica(['sleep', '60'])
    const a = makeRunner({ logDir: dir.path, stateFile })
    a.apply([spec])
    const pid = await waitFor(() => a.pids()[0]?.pid)
    a.release()
    process.kill(pid, 'SIGKILL')
    await waitFor(() => !alive(pid) || procStat(pid)?.state === 'Z')
    const b = makeRunner({ logDir: dir.path, stateFile, backoffStartMs: 50 })
    expect(b.status()).toEqual([{ project: 'p', replica: 0, revision: 1, state: 'failed', exitCode: null }])
    expect(readFileSync(b.logFile('p', 0), 'utf8')).toContain(`exited while no Agent ran (pid ${pid}); its exit status is unknown`)
    b.apply([spec])
    const again = await waitFor(() => b.pids()[0]?.pid)
    expect(again).not.toBe(pid)
    // An adopted replica that exits later is noticed too.
    b.release()
    const c = makeRunner({ logDir: dir.path, stateFile, backoffStartMs: 50, watchMs: 50 })
    c.apply([spec])
    expect(c.pids()[0]?.pid).toBe(again)
    process.kill(again, 'SIGKILL')
    await waitFor(() => readFileSync(c.logFile('p', 0), 'utf8').includes(`exited after this Agent adopted it (pid ${again})`))
    const third = await waitFor(() => { const p = c.pids()[0]?.pid; return p !== undefined && p !== again ? p : undefined })
    expect(alive(third)).toBe(true)
    await c.stopAll()
  })

  test('a replica\'s log is capped: rotated to .1 past the cap while the replica keeps writing to it', async () => {
    using dir = tmpDir()
    const cap = 20_000
    const runner = makeRunner({ logDir: dir.path, maxLogBytes: cap, watchMs: 50 })
    // about 100 KB/s of numbered lines
    runner.apply([replica(['sh', '-c', 'i=0; while true; do i=$((i+1)); echo "line $i ................................................................................................"; [ $((i % 10)) -eq 0 ] && sleep 0.01; done'])])
    const file = runner.logFile('p', 0)
    await waitFor(() => existsSync(`${file}.1`), { what: 'a rotation' })
    let largest = 0
    for (let i = 0; i < 40; i++) {
      largest = Math.max(largest, statSync(file).size, statSync(`${file}.1`).size)
      await Bun.sleep(25)
    }
    // the cap plus what ~a tick of writing adds (a busy machine: a few ticks)
    expect(largest).toBeLessThan(cap + 60_000)
    const lastLine = () => Number(readFileSync(file, 'utf8').trim().split('\n').pop()?.match(/line (\d+)/)?.[1] ?? 0)
    const n = lastLine()
    await waitFor(() => lastLine() > n, { what: 'the replica writing on after a rotation' })
    await runner.stopAll()
  })
})
