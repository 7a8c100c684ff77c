// The assignment channel without a held request: the heartbeat
// answer carries the node's assignment revision, and the Agent fetches its
// assignments only when that revision moves; it never holds a long poll.
import { afterEach, expect, test } from 'bun:test'
import { Agent } from '../../src/agent/agent.ts'
import { joinPlatform } from '../../src/agent/join.ts'
import { clearPinCache } from '../../src/crypto/pin.ts'
import { freePort, startListenerPlatform } from '../helpers/node-side.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

afterEach(() => clearPinCache())

test('the Agent fetches assignments only when the heartbeat answer says their revision moved', async () => {
  await using p = await startListenerPlatform()
  using dir = tmpDir()
  const { token } = await p.client.nodes.createEnrollment({ nodeId: 'w1' })
  const dataDir = `${dir.path}/w1`
  await joinPlatform({ dataDir, platformUrl: p.enrollUrl, nodeId: 'w1', fingerprint: p.fingerprint, addresses: ['127.0.0.1'], port: await freePort(), readToken: async () => token })

  // What the node asks for: assignment requests (with their query) and heartbeats.
  const fetches: string[] = []
  const app = p.platform.app
  const handle = app.handle.bind(app)
  app.handle = (req: Request) => {
    const u = new URL(req.url)
    if (u.pathname === '/api/v1/nodes/self/assignments') fetches.push(u.search)
    return handle(req)
  }
  let beats = 0
  const registry = p.platform.fabric.registry
  const heartbeat = registry.heartbeat.bind(registry)
  registry.heartbeat = (n, beat) => (beats++, heartbeat(n, beat))
  const answers: (number | undefined)[] = []

  const agent = new Agent({ dataDir, host: '127.0.0.1', heartbeatMs: 100, now: p.platform.now })
  await agent.start()
  const after = agent.afterHeartbeat
  agent.afterHeartbeat = (a) => (answers.push(a.assignmentRevision), after(a))
  try {
    // Nothing was ever assigned (revision 0): heartbeats, and no assignment request at all.
    await waitFor(() => beats >= 6, { what: 'six heartbeats' })
    expect(answers.filter((r) => r !== undefined).every((r) => r === 0)).toBe(true)
    expect(fetches).toEqual([])

    // A deploy moves the revision: one fetch, the replica runs, then heartbeats alone again.
    await p.client.projects.deploy({ name: 'web', command: ['sleep', '60'], replicas: 1, cpu: 100, memory: 64 })
    await waitFor(() => agent.workloads?.runner.status().some((r) => r.project === 'web' && r.state === 'running'), { what: 'web running on w1' })
    const running = beats
    await waitFor(() => beats >= running + 6, { what: 'six more heartbeats' })
    expect(fetches).toEqual([''])
    expect(agent.workloads?.revision()).toBe(answers.at(-1)!)

    // Removing the project moves it again: one more fetch, and the replica stops.
    await p.client.projects.remove('web')
    await waitFor(() => agent.workloads?.runner.status().length === 0, { what: 'web stopped on w1' })
    const stopped = beats
    await waitFor(() => beats >= stopped + 6, { what: 'six more heartbeats' })
    expect(fetches).toEqual(['', ''])
    // never a long poll
    expect(fetches.some((q) => q.includes('wait='))).toBe(false)
  } finally {
    await agent.stop({ stopReplicas: true })
  }
})
