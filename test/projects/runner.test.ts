import { describe, expect, test } from 'bun:test'
import { existsSync, readFileSync } from 'node:fs'
import { Runner } from '../../src/agent/runner.ts'
import type { AssignedReplica } from '../../src/projects/assignments.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

const replica = (command: string[], more: Partial<AssignedReplica> = {}): AssignedReplica => ({ project: 'p', replica: 0, revision: 1, command, env: {}, cpu: 10, memory: 10, ...more })

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
    const runner = new Runner({ logDir: dir.path })
    runner.apply([replica(['sh', '-c', 'echo "hello $GREETING $MUSTER_PROJECT $MUSTER_REPLICA"; sleep 30'], { env: { GREETING: 'world' }, replica: 3 })])
    await waitFor(() => existsSync(runner.logFile('p', 3)) && readFileSync(runner.logFile('p', 3), 'utf8').includes('hello world p 3'))
    expect(runner.status()).toEqual([{ project: 'p', replica: 3, revision: 1, state: 'running', exitCode: null }])
    await runner.stopAll()
    expect(runner.status()).toEqual([])
  })

  test('a crashing replica is restarted with growing backoff and reported failed with its exit code', async () => {
    using dir = tmpDir()
    const runner = new Runner({ logDir: dir.path, backoffStartMs: 100, backoffMaxMs: 400 })
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
    const runner = new Runner({ logDir: dir.path, stopGraceMs: 300 })
    // the shell ignores TERM and has a child: both must be gone after the stop
    runner.apply([replica(['sh', '-c', 'trap "" TERM; sleep 60 & echo child $!; wait'])])
    const child = Number((await waitFor(() => readFileSync(runner.logFile('p', 0), 'utf8').match(/child (\d+)/)))[1])
    expect(alive(child)).toBe(true)
    const t0 = Date.now()
    runner.apply([])
    await waitFor(() => runner.status().length === 0)
    expect(Date.now() - t0).toBeGreaterThanOrEqual(250)
    await waitFor(() => !alive(child), { what: 'the child gone' })
  })

  test('apply starts new revisions before the old one is dropped by the caller', async () => {
    using dir = tmpDir()
    const runner = new Runner({ logDir: dir.path })
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
})
