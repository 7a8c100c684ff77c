// The Agent against a real Platform: readiness end to end in-process, the
// signed-request gate on its HTTPS port, credential renewal (docs/nodes.md).
import { afterEach, describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { Agent, capacity } from '../../src/agent/agent.ts'
import { joinPlatform } from '../../src/agent/join.ts'
import { signAgentRequest } from '../../src/signed/requests.ts'
import { generateSigningKey, signDomain } from '../../src/crypto/ed25519.ts'
import { clearPinCache } from '../../src/crypto/pin.ts'
import { b64url } from '../../src/crypto/tokens.ts'
import { generateKeyAndCert } from '../../src/crypto/x509.ts'
import { VERSION } from '../../src/version.ts'
import { freePort, startListenerPlatform, type ListenerPlatform } from '../helpers/node-side.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

afterEach(() => clearPinCache())

async function joinedAgent(p: ListenerPlatform, dir: string, name = 'w1') {
  const { token } = await p.client.nodes.createEnrollment({ nodeId: name })
  const port = await freePort()
  const dataDir = `${dir}/${name}`
  await joinPlatform({ dataDir, platformUrl: p.enrollUrl, nodeId: name, fingerprint: p.fingerprint, addresses: ['127.0.0.1'], port, readToken: async () => token })
  const agent = new Agent({ dataDir, host: '127.0.0.1', heartbeatMs: 100, now: p.platform.now })
  return { agent, port, dataDir, certPem: readFileSync(`${dataDir}/worker/agent.crt`, 'utf8') }
}

const nodeOf = async (p: ListenerPlatform, name = 'w1') => (await p.client.nodes.list()).nodes.find((n) => n.name === name)

describe('agent', () => {
  test('heartbeats with version and capacity, passes the pinned health probe, and is ready', async () => {
    await using p = await startListenerPlatform({ probeIntervalMs: 150 })
    using dir = tmpDir()
    const { agent, port } = await joinedAgent(p, dir.path)
    await agent.start()
    try {
      const ready = await waitFor(async () => ((await nodeOf(p))?.state === 'ready' ? nodeOf(p) : null), { what: 'w1 ready' })
      expect(ready).toMatchObject({ version: VERSION, compatibility: 'current', capacity: capacity() })
    } finally {
      await agent.stop()
    }
    // Something else on the node's port with another certificate: the probe refuses it.
    const impostor = await generateKeyAndCert({ commonName: 'w1', dnsNames: [], ipAddresses: ['127.0.0.1'], days: 2 })
    const fake = Bun.serve({ hostname: '127.0.0.1', port, tls: { cert: impostor.certPem, key: impostor.keyPem }, fetch: () => Response.json({ ok: true, node: 'w1' }) })
    try {
      // probe() joins a probe already under way, which may have started before the impostor listened:
      // once that one is over, the next probe starts after it.
      await p.platform.prober.probe('w1')
      await p.platform.prober.probe('w1')
      const n = await nodeOf(p)
      expect(n?.state).toBe('unreachable')
      // One generic reason for every probe failure (docs/security.md); the detail is in the Platform log.
      expect(n?.reason).toBe('health probe failed')
    } finally {
      fake.stop(true)
    }
  })

  test('GET /health answers the node name; anything else needs a current trust-key signature', async () => {
    await using p = await startListenerPlatform()
    using dir = tmpDir()
    const { agent, port, certPem } = await joinedAgent(p, dir.path)
    const handled: string[] = []
    agent.handleSigned = (r) => (handled.push(`${r.method} ${r.path}`), Response.json({ done: true }))
    await agent.start()
    try {
      const call = (path: string, init: RequestInit = {}) => fetch(`https://127.0.0.1:${port}${path}`, { ...init, tls: { ca: certPem } })
      const health = await call('/health')
      expect(await health.json()).toMatchObject({ ok: true, node: 'w1' })
      const body = '{"replicas":2}'
      const path = '/v1/assignments'
      const now = p.platform.now()
      const sign = (over: { node?: string; body?: string; at?: number; path?: string } = {}) =>
        signAgentRequest((d, m) => p.platform.fabric.trust.sign(d, m), { method: 'POST', path: over.path ?? path, body: over.body ?? body, node: over.node ?? 'w1' }, over.at ?? now)
      const post = (headers: Record<string, string>) => call(path, { method: 'POST', body, headers })
      const stranger = generateSigningKey()
      const good = sign()
      const forged = { ...good, 'x-muster-signature': b64url(signDomain('muster agent request v1', stranger.privateKey, 'anything')) }
      const refusals: [string, Record<string, string>][] = [
        ['unsigned', {}],
        ['signed by a key the node does not trust', forged],
        ['signed for another node', sign({ node: 'w2' })],
        ['signed over another body', sign({ body: '{"replicas":200}' })],
        ['signed for another path', sign({ path: '/v1/other' })],
        ['signed six minutes ago', sign({ at: now - 6 * 60_000 })],
        ['signed six minutes from now', sign({ at: now + 6 * 60_000 })],
        ['signed an hour from now', sign({ at: now + 3_600_000 })],
        ['signed with a key id it does not know', { ...good, 'x-muster-key': 'nope' }],
      ]
      for (const [what, headers] of refusals) {
        const r = await post(headers)
        expect(`${what}: ${r.status}`).toBe(`${what}: 401`)
      }
      expect(handled).toEqual([])
      const ok = await post(good)
      expect(ok.status).toBe(200)
      expect(handled).toEqual([`POST ${path}`])
      // both edges of the ±5 minute window are inside it
      for (const at of [now - 4 * 60_000, now + 4 * 60_000]) expect((await post(sign({ at }))).status).toBe(200)
    } finally {
      await agent.stop()
    }
  })

  test('a request signed by a trust key whose window has ended (in the node\'s view) is refused, a minute before its end it is not', async () => {
    await using p = await startListenerPlatform()
    using dir = tmpDir()
    const { port, dataDir, certPem } = await joinedAgent(p, dir.path)
    const [key] = JSON.parse(readFileSync(`${dataDir}/worker/trust.json`, 'utf8')).keys as { notAfter: string }[]
    const end = Date.parse(key!.notAfter)
    const body = '{}'
    const path = '/v1/assignments'
    // The Agent's clock at `at`; the Platform signs with the same (current) key, stamped at that moment.
    const attempt = async (at: number) => {
      const agent = new Agent({ dataDir, host: '127.0.0.1', heartbeatMs: 60_000, now: () => at })
      agent.handleSigned = () => Response.json({ done: true })
      await agent.start()
      try {
        const headers = signAgentRequest((d, m) => p.platform.fabric.trust.sign(d, m), { method: 'POST', path, body, node: 'w1' }, at)
        return (await fetch(`https://127.0.0.1:${port}${path}`, { method: 'POST', body, headers, tls: { ca: certPem } })).status
      } finally {
        await agent.stop()
      }
    }
    expect(await attempt(end - 60_000)).toBe(200)
    expect(await attempt(end)).toBe(401)
    expect(await attempt(end + 3_600_000)).toBe(401)
  })

  test('a renewal answered 429 waits out Retry-After, then renews (docs/security.md)', async () => {
    await using p = await startListenerPlatform()
    using dir = tmpDir()
    const { agent, dataDir } = await joinedAgent(p, dir.path)
    const renewals: number[] = []
    const app = p.platform.app
    const inner = app.handle
    app.handle = async (req: Request) => {
      const res = await inner(req)
      if (new URL(req.url).pathname === '/api/v1/nodes/renew') renewals.push(res.status)
      return res
    }
    await agent.start()
    try {
      await waitFor(() => agent.state === 'enrolled' || agent.state === 'ready', { what: 'first heartbeat' })
      // w1's renewals are spent, and the next is due in a second
      for (let i = 0; i < 3; i++) expect(p.platform.fabric.renewLimit.take('w1')).toBe(0)
      p.advance(59_000)
      await p.client.nodes.rotate('w1')
      await waitFor(() => /^mnc_w1\.3\./.test(readFileSync(`${dataDir}/worker/node-credential`, 'utf8')), { timeoutMs: 5000, what: 'renewed after Retry-After' })
      // heartbeats every 100 ms kept seeing the new generation, but the Agent asked once, then once more after the wait
      expect(renewals).toEqual([429, 200])
    } finally {
      await agent.stop()
    }
  })

  test('renews when an operator rotates the credential; a dead credential gets one renewal attempt, then the Agent stops for good', async () => {
    await using p = await startListenerPlatform()
    using dir = tmpDir()
    const { agent, dataDir } = await joinedAgent(p, dir.path)
    const seen: { path: string; at: number }[] = []
    const app = p.platform.app
    const inner = app.handle
    app.handle = (req: Request) => {
      const path = new URL(req.url).pathname
      if (path !== '/api/v1/nodes/register') seen.push({ path, at: Date.now() })
      return inner(req)
    }
    // Heartbeats have their own route ahead of the application (src/http/heartbeat.ts); both pass the heartbeat limiter.
    const limiter = p.platform.fabric.limits.heartbeat
    const enter = limiter.enter.bind(limiter)
    limiter.enter = () => (seen.push({ path: '/api/v1/nodes/register', at: Date.now() }), enter())
    const count = (path: string) => seen.filter((s) => s.path === path).length
    await agent.start()
    try {
      await waitFor(() => agent.state === 'enrolled' || agent.state === 'ready', { what: 'first heartbeat' })
      await p.client.nodes.rotate('w1')
      await waitFor(() => /^mnc_w1\.3\./.test(readFileSync(`${dataDir}/worker/node-credential`, 'utf8')), { what: 'renewed credential' })
      await p.client.nodes.rebind('w1') // the credential dies at once
      const renewsBefore = count('/api/v1/nodes/renew')
      // One renewal attempt, then the Agent asks what the Platform holds (docs/operations.md) and stops: no retry loop.
      const line = await Promise.race([agent.refusedForGood, Bun.sleep(45_000).then(() => 'still retrying')])
      expect(line).toContain('an operator rebound this name')
      expect(line).toContain(`\`muster nodes rebind w1\` prints a token`)
      expect(line).toContain(`--node-id w1 --platform-fingerprint ${p.fingerprint} --data-dir ${dataDir}`)
      expect(count('/api/v1/nodes/renew')).toBe(renewsBefore + 1)
      expect(count('/api/v1/nodes/self')).toBe(1)
      expect((agent as unknown as { timers: Set<unknown> }).timers.size).toBe(0) // nothing is scheduled: no more heartbeats
    } finally {
      await agent.stop()
    }
  })
})
