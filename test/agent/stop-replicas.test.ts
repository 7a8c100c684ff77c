// `muster agent --stop-replicas` with no Agent running
// (cleanups, observed): the replicas the last Agent recorded — and what they
// started in their process group — are gone afterwards, not merely asked to go.
import { expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { DataDir } from '../../src/datadir.ts'
import { Runner } from '../../src/replicas/runner.ts'
import { stopReplicas } from '../../src/agent/stop-replicas.ts'
import { LOG_DIR, REPLICAS_FILE } from '../../src/agent/workloads.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

const alive = (pid: number) => {
  try {
    return !/\) [ZX] /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))
  } catch {
    return false
  }
}

test('with no Agent running, the recorded replicas and their children are stopped: the processes are gone', { timeout: 30_000 }, async () => {
  using dir = tmpDir()
  const dataDir = new DataDir(dir.path)
  const agentRunner = new Runner({ logDir: dataDir.ensureDir(...LOG_DIR), stateFile: dataDir.path(REPLICAS_FILE) })
  agentRunner.apply([{ project: 'web', replica: 0, revision: 1, command: ['sh', '-c', 'sleep 300 & echo child $!; wait'], env: {}, cpu: 0, memory: 0 }])
  const child = Number((await waitFor(() => readFileSync(agentRunner.logFile('web', 0), 'utf8').match(/child (\d+)/)))[1])
  const [replica] = agentRunner.pids()
  // the Agent stops and leaves its replicas running, as SIGTERM does
  agentRunner.release()
  expect(alive(replica!.pid)).toBe(true)
  expect(alive(child)).toBe(true)
  const r = await stopReplicas(dir.path)
  expect(r.stopped).toEqual([{ project: 'web', replica: 0, pid: replica!.pid }])
  await waitFor(() => !alive(replica!.pid) && !alive(child), { timeoutMs: 10_000, what: 'the replica and its child gone' })
  // nothing is recorded any more: a later Agent adopts nothing
  expect(JSON.parse(readFileSync(dataDir.path(REPLICAS_FILE), 'utf8'))).toEqual({ replicas: [] })
})
