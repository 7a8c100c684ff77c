// The Agent's assignments across a restart, with a man in the middle on the
// Platform API: the revision it runs is kept on disk, so a genuinely signed
// but older document replayed after a restart is refused (docs/workloads.md).
import { afterEach, describe, expect, test } from 'bun:test'
import { Agent } from '../../src/agent/agent.ts'
import { joinPlatform } from '../../src/agent/join.ts'
import { clearPinCache } from '../../src/crypto/pin.ts'
import { log } from '../../src/log.ts'
import type { SignedAssignments } from '../../src/wire/projects.ts'
import { freePort, startListenerPlatform } from '../helpers/node-side.ts'
import { ASSIGNMENTS_PATH, platformProxy } from '../helpers/proxy.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

afterEach(() => clearPinCache())

/** Warnings the in-process Agent logs, while the test runs. */
function captureWarnings(): { lines: string[]; [Symbol.dispose](): void } {
  const lines: string[] = []
  const reporter = { log: (o: { type: string; args: unknown[] }) => void (o.type === 'warn' && lines.push(o.args.map(String).join(' '))) }
  log.addReporter(reporter)
  return { lines, [Symbol.dispose]: () => log.removeReporter(reporter) }
}

describe('agent assignments', () => {
  test('the running revision survives a restart: an older signed document replayed after it is refused', async () => {
    using proxy = platformProxy()
    await using p = await startListenerPlatform({ publicUrl: proxy.url })
    proxy.target = p.url
    using dir = tmpDir()
    const { token } = await p.client.nodes.createEnrollment({ nodeId: 'w1' })
    const dataDir = `${dir.path}/w1`
    await joinPlatform({ dataDir, platformUrl: p.enrollUrl, nodeId: 'w1', fingerprint: p.fingerprint, addresses: ['127.0.0.1'], port: await freePort(), readToken: async () => token })
    const newAgent = () => new Agent({ dataDir, host: '127.0.0.1', heartbeatMs: 100, now: p.platform.now })
    const running = (a: Agent) => a.workloads!.runner.status().filter((s) => s.state === 'running')

    let agent = newAgent()
    await agent.start()
    let old: SignedAssignments
    let current: number
    try {
      await waitFor(async () => (await p.client.nodes.list()).nodes.find((n) => n.name === 'w1')?.state === 'ready', { what: 'w1 ready' })
      await p.client.projects.deploy({ name: 'app', replicas: 1, command: ['sleep', '300'], cpu: 10, memory: 10 })
      await waitFor(() => running(agent).length === 1, { what: 'the first revision running' })
      // What the Agent was sent through the proxy: genuine, signed for w1, with the replica.
      old = proxy.passed.filter((x) => x.path === ASSIGNMENTS_PATH).map((x) => x.answer as SignedAssignments).findLast((d) => d?.payload?.replicas?.length === 1)!
      expect(old.payload.node).toBe('w1')
      await p.client.projects.deploy({ name: 'app', replicas: 1, command: ['sleep', '301'], cpu: 10, memory: 10 })
      await waitFor(() => agent.workloads!.runner.status().map((s) => s.revision).join() === '2' && running(agent).length === 1, { what: 'only the second revision running' })
      current = agent.workloads!.revision()
      expect(current).toBeGreaterThan(old.payload.revision)
    } finally {
      await agent.stop({ stopReplicas: true })
    }

    // After the restart every assignments request gets the older document back.
    proxy.intercept = (_req, url) => (url.pathname === ASSIGNMENTS_PATH ? Response.json(old) : undefined)
    using warnings = captureWarnings()
    agent = newAgent()
    await agent.start()
    try {
      expect(agent.workloads!.revision()).toBe(current)
      await waitFor(() => warnings.lines.some((l) => l.includes('refused assignments')) || agent.workloads!.runner.status().length > 0, { what: 'the replayed document handled' })
      expect(proxy.passed.some((x) => x.intercepted)).toBe(true)
      expect(warnings.lines.join('\n')).toContain(`revision ${old.payload.revision} is older than the running ${current}`)
      expect(agent.workloads!.runner.status()).toEqual([])
      expect(agent.workloads!.revision()).toBe(current)
    } finally {
      await agent.stop({ stopReplicas: true })
    }
  })
})
