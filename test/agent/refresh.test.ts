// When the Agent refreshes trust (docs/security.md): at start, when the wall clock
// says a day has passed (checked on a short tick, so a jumped clock counts),
// and at once when a signature names a kid it does not hold (at most once a
// minute), verifying again before it refuses anything.
import { afterEach, describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { Agent } from '../../src/agent/agent.ts'
import { credentialGeneration } from '../../src/agent/files.ts'
import { joinPlatform } from '../../src/agent/join.ts'
import { signAgentRequest } from '../../src/signed/requests.ts'
import { clearPinCache, pinnedFetch } from '../../src/crypto/pin.ts'
import { createClient } from '../../src/client/index.ts'
import { freePort, startListenerPlatform, type ListenerPlatform } from '../helpers/node-side.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

afterEach(() => clearPinCache())
const DAY = 86_400_000

async function joinedAgent(p: ListenerPlatform, dir: string, opts: { tickMs?: number; workloads?: boolean; heartbeatMs?: number } = {}) {
  const { token } = await p.client.nodes.createEnrollment({ nodeId: 'w1' })
  const port = await freePort()
  const dataDir = `${dir}/w1`
  await joinPlatform({ dataDir, platformUrl: p.enrollUrl, nodeId: 'w1', fingerprint: p.fingerprint, addresses: ['127.0.0.1'], port, readToken: async () => token, now: p.platform.now })
  p.appSeen.length = 0 // the join asked the listener once (where the API is); count only the Agent's requests
  const agent = new Agent({ dataDir, host: '127.0.0.1', heartbeatMs: opts.heartbeatMs ?? 100, now: p.platform.now, tickMs: opts.tickMs ?? 3_600_000, workloads: opts.workloads ?? false })
  return { agent, port, dataDir, certPem: readFileSync(`${dataDir}/worker/agent.crt`, 'utf8') }
}

/** Trust refreshes that reached the Platform (through the listener). */
const refreshes = (p: ListenerPlatform) => p.appSeen.filter((s) => s === 'POST /api/v1/nodes/trust').length

/** Moves the Platform to a key the node has never fetched: the next one is published, then signs. */
async function rollKeys(p: ListenerPlatform): Promise<string> {
  const before = p.platform.fabric.trust.currentKid()
  p.advance(280 * DAY)
  await p.platform.fabric.trust.sync()
  p.advance(90 * DAY)
  const now = p.platform.fabric.trust.currentKid()
  expect(now).not.toBe(before)
  return now
}

describe('agent trust refresh', () => {
  test('a request signed by a kid the node lacks: one refresh, then it verifies; another within the minute gets none', async () => {
    await using p = await startListenerPlatform()
    using dir = tmpDir()
    const { agent, port, certPem } = await joinedAgent(p, dir.path)
    const handled: string[] = []
    agent.handleSigned = (r) => (handled.push(r.kid), Response.json({ done: true }))
    await agent.start()
    try {
      await waitFor(() => refreshes(p) === 1, { what: 'the refresh at start' })
      const kid = await rollKeys(p)
      expect(agent.trustKeys.map((k) => k.kid)).not.toContain(kid)
      const body = '{}'
      const path = '/v1/assignments'
      const headers = () => signAgentRequest((d, m) => p.platform.fabric.trust.sign(d, m), { method: 'POST', path, body, node: 'w1' }, p.platform.now())
      const call = (h: Record<string, string>) => fetch(`https://127.0.0.1:${port}${path}`, { method: 'POST', body, headers: h, tls: { ca: certPem } })
      const first = await call(headers())
      expect(first.status).toBe(200)
      expect(handled).toEqual([kid])
      expect(refreshes(p)).toBe(2)
      // a kid nobody has: refused, and no second refresh inside the minute
      const bogus = await call({ ...headers(), 'x-muster-key': 'deadbeefdeadbeef' })
      expect(bogus.status).toBe(401)
      expect(refreshes(p)).toBe(2)
      expect(handled).toEqual([kid])
    } finally {
      await agent.stop()
    }
  })

  test('assignments signed by a kid the node lacks: it refreshes, verifies again and runs the replica', async () => {
    await using p = await startListenerPlatform({ probeIntervalMs: 100 })
    using dir = tmpDir()
    const { agent } = await joinedAgent(p, dir.path, { workloads: true })
    await agent.start()
    try {
      await waitFor(async () => (await p.client.nodes.list()).nodes.find((n) => n.name === 'w1')?.state === 'ready', { what: 'w1 ready' })
      // the start's refresh must be done before the keys roll, or it would fetch the new key itself
      await waitFor(() => refreshes(p) === 1, { what: 'the refresh at start' })
      const kid = await rollKeys(p)
      await waitFor(async () => (await p.client.nodes.list()).nodes.find((n) => n.name === 'w1')?.state === 'ready', { what: 'w1 ready after the clock moved' })
      await p.client.projects.deploy({ name: 'web', command: ['sh', '-c', 'sleep 30'], replicas: 1, cpu: 10, memory: 8 })
      await waitFor(async () => (await p.client.projects.show('web')).placements[0]?.state === 'running', { what: 'the replica to run', timeoutMs: 20_000 })
      // the start, and one for the unknown kid (whichever document met it first); the daily tick is an hour away
      expect(refreshes(p)).toBe(2)
      expect(agent.trustKeys.map((k) => k.kid)).toContain(kid)
    } finally {
      await agent.stop()
    }
  })

  test('a refresh that reached no Platform does not use the minute: the next unknown kid refreshes at once', async () => {
    using dir = tmpDir()
    const dataDir = `${dir.path}/platform`
    const [apiPort, enrollmentPort] = [await freePort(), await freePort()]
    const first = await startListenerPlatform({ dataDir, port: apiPort, enrollmentPort })
    // One heartbeat at start, the next in an hour: no failing heartbeat asks for a refresh of its own here.
    const { agent } = await joinedAgent(first, dir.path, { heartbeatMs: 3_600_000 })
    try {
      await agent.start()
      await waitFor(() => refreshes(first) === 1, { what: 'the refresh at start' })
      await first.close()
      expect(await agent.refreshForUnknownKid()).toBe(false) // nothing answers: the Platform restarts
      await using second = await startListenerPlatform({ dataDir, port: apiPort, enrollmentPort })
      expect(await agent.refreshForUnknownKid()).toBe(true) // still inside the minute, and it asks
      expect(refreshes(second)).toBe(1)
      expect(await agent.refreshForUnknownKid()).toBe(false) // that one reached the Platform: the minute holds
      expect(refreshes(second)).toBe(1)
    } finally {
      await agent.stop()
      await first.close()
    }
  })

  test('daily by the wall clock: a clock that jumps a day makes the refresh and the renewal due at the next tick', async () => {
    await using p = await startListenerPlatform()
    using dir = tmpDir()
    const { agent } = await joinedAgent(p, dir.path, { tickMs: 50 })
    await agent.start()
    try {
      await waitFor(() => refreshes(p) === 1, { what: 'the refresh at start' })
      const generation = credentialGeneration(agent.nodeCredential)!
      p.advance(DAY / 2)
      const ticks = agent.ticks
      await waitFor(() => agent.ticks >= ticks + 3, { what: 'three ticks' }) // nothing is due yet
      expect(refreshes(p)).toBe(1)
      expect(credentialGeneration(agent.nodeCredential)).toBe(generation)
      p.advance(DAY / 2 + 60_000)
      await waitFor(() => refreshes(p) === 2, { what: 'the daily refresh' })
      await waitFor(() => credentialGeneration(agent.nodeCredential) === generation + 1, { what: 'the daily renewal' })
    } finally {
      await agent.stop()
    }
  })

  test('the API moved to https on restart: failing heartbeats bring a trust refresh, whose answer names the new URL', async () => {
    using dir = tmpDir()
    const dataDir = `${dir.path}/platform`
    const [apiPort, enrollmentPort] = [await freePort(), await freePort()]
    const first = await startListenerPlatform({ dataDir, port: apiPort, enrollmentPort, probeIntervalMs: 150 })
    const { agent, dataDir: work } = await joinedAgent(first, dir.path)
    const pinned = (p: ListenerPlatform) => createClient({ url: `https://127.0.0.1:${apiPort}`, token: p.token, fetch: (u, i) => pinnedFetch(u, i, { fingerprint: p.platform.pki.ca.pin }) })
    try {
      await agent.start()
      expect(agent.config.platformUrl).toBe(`http://127.0.0.1:${apiPort}`)
      await waitFor(async () => (await first.client.nodes.list()).nodes.find((n) => n.name === 'w1')?.state === 'ready', { what: 'w1 ready over http' })
      await first.close()
      // the same Platform, now bound off loopback: its API serves HTTPS from the Platform CA
      await using second = await startListenerPlatform({ dataDir, port: apiPort, enrollmentPort, host: '0.0.0.0', publicUrl: `https://127.0.0.1:${apiPort}`, probeIntervalMs: 150 })
      await waitFor(() => agent.config.platformUrl === `https://127.0.0.1:${apiPort}`, { what: 'the Agent on the new API URL' })
      expect(JSON.parse(readFileSync(`${work}/worker/agent.json`, 'utf8')).platformUrl).toBe(`https://127.0.0.1:${apiPort}`)
      const since = Date.now()
      await waitFor(async () => {
        const n = (await pinned(second).nodes.list()).nodes.find((x) => x.name === 'w1')
        return n?.state === 'ready' && Date.parse(n.lastSeenAt ?? '') >= since
      }, { what: 'w1 ready over https' })
    } finally {
      await agent.stop()
      await first.close()
    }
  })
})
