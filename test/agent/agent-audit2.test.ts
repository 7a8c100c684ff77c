// The Agent, on what bugs planted by the second self-audit
// (test/mutants/audit2.ts) broke without a test failing: a node that was never
// assigned anything (revision 0) stops what an earlier Agent left running in
// its data directory; a daily trust refresh that failed is tried again a
// minute later, not a day later.
import { afterEach, describe, expect, test } from 'bun:test'
import { Agent } from '../../src/agent/agent.ts'
import { joinPlatform } from '../../src/agent/join.ts'
import { procStat } from '../../src/replicas/procs.ts'
import { Runner } from '../../src/replicas/runner.ts'
import { LOG_DIR, REPLICAS_FILE } from '../../src/agent/workloads.ts'
import { clearPinCache } from '../../src/crypto/pin.ts'
import { DataDir } from '../../src/datadir.ts'
import { freePort, startListenerPlatform, type ListenerPlatform } from '../helpers/node-side.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

afterEach(() => clearPinCache())
const DAY = 86_400_000

async function joined(p: ListenerPlatform, dir: string): Promise<string> {
  const { token } = await p.client.nodes.createEnrollment({ nodeId: 'w1' })
  const dataDir = `${dir}/w1`
  await joinPlatform({ dataDir, platformUrl: p.enrollUrl, nodeId: 'w1', fingerprint: p.fingerprint, addresses: ['127.0.0.1'], port: await freePort(), readToken: async () => token, now: p.platform.now })
  return dataDir
}

const running = (pid: number) => {
  const s = procStat(pid)
  return s !== null && s.state !== 'Z'
}

describe('the Agent (second self-audit)', () => {
  test('revision 0: what an earlier Agent left running in this data directory is stopped', async () => {
    await using p = await startListenerPlatform()
    using dir = tmpDir()
    const dataDir = await joined(p, dir.path)
    // An earlier Agent of this directory ran a replica and stopped, leaving it running (recorded for adoption).
    const d = new DataDir(dataDir)
    const earlier = new Runner({ logDir: d.ensureDir(...LOG_DIR), stateFile: d.path(REPLICAS_FILE) })
    earlier.apply([{ project: 'old', replica: 0, revision: 1, command: ['sleep', '300'], env: {}, cpu: 10, memory: 10 }])
    const pid = (await waitFor(() => earlier.pids()[0]?.pid, { what: 'the earlier replica' }))!
    earlier.release()
    expect(running(pid)).toBe(true)

    const agent = new Agent({ dataDir, host: '127.0.0.1', heartbeatMs: 100, now: p.platform.now })
    await agent.start()
    try {
      // Adopted at start (the same process), then stopped: nothing is assigned to w1.
      await waitFor(() => !running(pid), { what: 'the leftover replica stopped' })
      await waitFor(() => agent.workloads?.runner.status().length === 0, { what: 'the runner to forget it' })
      expect(agent.workloads?.revision()).toBe(0)
    } finally {
      await agent.stop({ stopReplicas: true })
      try {
        process.kill(-pid, 'SIGKILL')
      } catch {}
    }
  })

  test('a daily trust refresh that failed is tried again a minute later, not a day later', async () => {
    await using p = await startListenerPlatform()
    using dir = tmpDir()
    const dataDir = await joined(p, dir.path)
    // Trust refreshes that reach the Platform, and a switch that makes them fail (503).
    let asked = 0
    let failing = false
    const app = p.platform.app
    const handle = app.handle.bind(app)
    app.handle = (req: Request) => {
      if (new URL(req.url).pathname === '/api/v1/nodes/trust') {
        asked++
        if (failing) return Promise.resolve(Response.json({ error: { code: 'store-unavailable', message: 'down for the test' } }, { status: 503 }))
      }
      return handle(req)
    }
    const agent = new Agent({ dataDir, host: '127.0.0.1', heartbeatMs: 3_600_000, tickMs: 50, now: p.platform.now, workloads: false })
    await agent.start()
    try {
      await waitFor(() => asked === 1, { what: 'the refresh at start' })
      failing = true
      p.advance(DAY + 1000)
      await waitFor(() => asked === 2, { what: 'the daily refresh (failing)' })
      // Not again before its minute: a few ticks pass without a refresh.
      const ticks = agent.ticks
      await waitFor(() => agent.ticks >= ticks + 3, { what: 'three ticks' })
      expect(asked).toBe(2)
      // A minute after the failure it is due again, and this time it works.
      failing = false
      p.advance(61_000)
      await waitFor(() => asked === 3, { what: 'the refresh a minute after the failure' })
    } finally {
      await agent.stop()
    }
  })
})
