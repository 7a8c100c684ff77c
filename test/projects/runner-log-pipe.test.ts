// A replica's output goes through a writer of its own (src/replicas/log-pipe.ts,
// docs/workloads.md, reading a replica's output): the log stays capped after
// the runner let go of the replica (no Agent), what a replica prints just
// before it exits is in the log before the runner's exit line, a replica that
// prints one line and exits at once loses nothing, and its writer ends with it.
import { afterEach, describe, expect, test } from 'bun:test'
import { existsSync, readFileSync, statSync } from 'node:fs'
import { Runner, type RunnerOptions } from '../../src/replicas/runner.ts'
import type { AssignedReplica } from '../../src/wire/projects.ts'
import { markedProcesses } from '../helpers/leftovers.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

const made: Runner[] = []
const released = new Set<Runner>()
const pids: number[] = []
function makeRunner(opts: RunnerOptions): Runner {
  const r = new Runner(opts)
  made.push(r)
  return r
}
afterEach(async () => {
  await Promise.all(made.splice(0).filter((r) => !released.has(r)).map((r) => r.stopAll()))
  released.clear()
  // A released runner's replicas: their whole group.
  for (const pid of pids.splice(0)) {
    try {
      process.kill(-pid, 'SIGKILL')
    } catch {}
  }
})

const replica = (command: string[]): AssignedReplica => ({ project: 'p', replica: 0, revision: 1, command, env: {}, cpu: 10, memory: 10 })
const writers = (file: string) => markedProcesses(process.env.MUSTER_TEST_RUN!).filter((p) => p.command.startsWith('split ') && p.command.includes(file))

describe('the log writer', () => {
  test('keeps the log under its cap with no runner watching: rotated to .1, the replica writing on', async () => {
    using dir = tmpDir()
    const cap = 50_000
    const runner = makeRunner({ logDir: dir.path, maxLogBytes: cap, watchMs: 60_000 })
    runner.apply([replica(['sh', '-c', 'i=0; while :; do i=$((i+1)); echo "line $i ................................................................................................"; done'])])
    const pid = await waitFor(() => runner.pids()[0]?.pid)
    pids.push(pid)
    // No runner from here on (released: nothing of it watches or rotates).
    released.add(runner)
    runner.release()
    const file = runner.logFile('p', 0)
    let largest = 0
    let rotations = 0
    let lastOld = 0
    await waitFor(
      () => {
        largest = Math.max(largest, statSync(file).size, existsSync(`${file}.1`) ? statSync(`${file}.1`).size : 0)
        const old = existsSync(`${file}.1`) ? statSync(`${file}.1`).ino : 0
        if (old !== lastOld) rotations++
        lastOld = old
        // Done after five rotations, or as soon as a file passed the cap.
        return rotations >= 5 || largest > cap + cap / 16 + 4096
      },
      { what: 'five rotations', timeoutMs: 60_000, intervalMs: 2 },
    )
    expect(largest).toBeLessThanOrEqual(cap + cap / 16 + 4096)
    // The replica writes on into the new file (just after a rotation it may hold nothing yet).
    await waitFor(() => /^line \d+ \.+$/m.test(readFileSync(file, 'utf8')), { what: 'a line in the log after the rotations', timeoutMs: 10_000 })
    expect(readFileSync(file, 'utf8')).toMatch(/^line \d+ \.+$/m)
  })

  test('what a replica prints as it exits comes before the exit line; a one-line replica loses nothing; the writer ends with it', async () => {
    using dir = tmpDir()
    const runner = makeRunner({ logDir: dir.path, backoffStartMs: 60_000 })
    runner.apply([replica(['sh', '-c', 'echo first; echo last; exit 3'])])
    const file = runner.logFile('p', 0)
    await waitFor(() => existsSync(file) && readFileSync(file, 'utf8').includes('--- exited with 3'), { what: 'the exit line' })
    const lines = readFileSync(file, 'utf8').split('\n')
    const at = (l: string) => lines.findIndex((x) => x === l || x.startsWith(l))
    expect([at('first'), at('last'), at('--- exited with 3')].every((i, k, all) => i >= 0 && (k === 0 || i > all[k - 1]!))).toBe(true)
    await waitFor(() => writers(file).length === 0, { what: 'the writer ended', timeoutMs: 10_000 })
    // Printed and gone at once, many times: every line arrives.
    for (let i = 0; i < 20; i++) {
      const r = makeRunner({ logDir: dir.path, backoffStartMs: 60_000 })
      r.apply([{ ...replica(['echo', `only-${i}`]), replica: i + 1 }])
      const f = r.logFile('p', i + 1)
      await waitFor(() => existsSync(f) && readFileSync(f, 'utf8').includes('--- exited with 0'), { what: `replica ${i + 1} exiting` })
      expect(readFileSync(f, 'utf8')).toContain(`only-${i}\n`)
    }
    await waitFor(() => markedProcesses(process.env.MUSTER_TEST_RUN!).filter((p) => p.command.startsWith('split ') && p.command.includes(dir.path)).length === 0, { what: 'every writer ended', timeoutMs: 10_000 })
  })
})
