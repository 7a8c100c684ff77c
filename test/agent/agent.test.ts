// The Agent against a real Platform: readiness end to end in-process, the
// signed-request gate on its HTTPS port, credential renewal (SPEC §7).
import { afterEach, describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { Agent, capacity } from '../../src/agent/agent.ts'
import { joinPlatform } from '../../src/agent/join.ts'
import { signAgentRequest } from '../../src/agent/signing.ts'
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
      await p.platform.prober.probe('w1')
      const n = await nodeOf(p)
      expect(n?.state).toBe('unreachable')
      // One generic reason for every probe failure (SPEC §16.7); the detail is in the Platform log.
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
    } finally {
      await agent.stop()
    }
  })

  test('renews when an operator rotates the credential; a dead credential gets one renewal attempt, then backoff', async () => {
    await using p = await startListenerPlatform()
    using dir = tmpDir()
    const { agent, dataDir } = await joinedAgent(p, dir.path)
    const seen: string[] = []
    const app = p.platform.app
    const inner = app.handle
    app.handle = (req: Request) => (seen.push(new URL(req.url).pathname), inner(req))
    await agent.start()
    try {
      await waitFor(() => agent.state === 'enrolled' || agent.state === 'ready', { what: 'first heartbeat' })
      await p.client.nodes.rotate('w1')
      await waitFor(() => /^mnc_w1\.3\./.test(readFileSync(`${dataDir}/worker/node-credential`, 'utf8')), { what: 'renewed credential' })
      await p.client.nodes.rebind('w1') // the credential dies at once
      const renewsBefore = seen.filter((s) => s === '/api/v1/nodes/renew').length
      await waitFor(() => seen.filter((s) => s === '/api/v1/nodes/renew').length > renewsBefore, { what: 'a renewal after the 401' })
      const beatsAt = seen.filter((s) => s === '/api/v1/nodes/register').length
      await Bun.sleep(1000)
      expect(seen.filter((s) => s === '/api/v1/nodes/renew').length).toBe(renewsBefore + 1)
      // backoff doubles from 100 ms: a handful of attempts in a second, not ten
      expect(seen.filter((s) => s === '/api/v1/nodes/register').length - beatsAt).toBeLessThan(6)
    } finally {
      await agent.stop()
    }
  })
})
