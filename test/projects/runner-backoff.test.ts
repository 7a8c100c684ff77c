// A replica's restart backoff forgets (docs/workloads.md, projects): it doubles
// while the replica keeps crashing at once, and starts again from the first
// delay once the replica ran longer than the stable time, so one crash after a
// day of running is restarted at once, not after the longest delay.
import { afterEach, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { Runner } from '../../src/replicas/runner.ts'
import type { AssignedReplica } from '../../src/wire/projects.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

const runners: Runner[] = []
afterEach(async () => {
  // Whatever happened in the test: no replica outlives it.
  await Promise.all(runners.splice(0).map((r) => r.stopAll()))
})

test('crashes at once double the delay; a crash after running past the stable time starts from the first delay again', async () => {
  using dir = tmpDir()
  const runner = new Runner({ logDir: dir.path, backoffStartMs: 100, backoffMaxMs: 400, stableAfterMs: 3_000 })
  runners.push(runner)
  // Crashes at once three times, then runs 4.5 s (well past the stable time) and crashes, then crashes at once.
  const script = `n=$(cat ${dir.path}/count 2>/dev/null || echo 0); n=$((n+1)); echo $n > ${dir.path}/count; echo "run $n"; [ $n -eq 4 ] && sleep 4.5; exit 3`
  const spec: AssignedReplica = { project: 'p', replica: 0, revision: 1, command: ['sh', '-c', script], env: {}, cpu: 10, memory: 10 }
  runner.apply([spec])
  const delays = () => [...readFileSync(runner.logFile('p', 0), 'utf8').matchAll(/--- restarting in (\d+) ms/g)].map((m) => Number(m[1]))
  await waitFor(() => delays().length >= 5, { what: 'five restarts', timeoutMs: 30_000 })
  expect(delays().slice(0, 5)).toEqual([100, 200, 400, 100, 200])
})
