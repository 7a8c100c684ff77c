// Guarantees of the enrollment authority that bugs planted in the second
// self-audit (test/mutants/audit2.ts) broke without a test failing: a listing
// sees nodes enrolled after it was first asked; a second rebind retires the
// first one's token; an idle node still renews at most 3 at once; the
// readiness probe wants the node's own name back, not any agent's.
import { afterEach, describe, expect, test } from 'bun:test'
import { joinPlatform } from '../../src/agent/join.ts'
import { signRenewProof } from '../../src/crypto/enroll-proof.ts'
import { clearPinCache } from '../../src/crypto/pin.ts'
import { PROBE_FAILED } from '../../src/fabric/probe.ts'
import { VERSION } from '../../src/version.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import { freePort, startListenerPlatform } from '../helpers/node-side.ts'
import { startPlatform, type TestPlatform } from '../helpers/platform.ts'
import { tmpDir } from '../helpers/tmp.ts'
import { readFileSync } from 'node:fs'

afterEach(() => clearPinCache())

async function enrolled(p: TestPlatform, nodeId: string) {
  const e = await p.client.nodes.createEnrollment({ nodeId })
  const cert = await newCert(nodeId)
  const r = await enrollRaw(p.url, { token: e.token, nodeId, certPem: cert.certPem, version: VERSION })
  expect(r.status).toBe(200)
  return { ...((await r.json()) as { credential: string }), cert }
}

const renewSigned = (p: TestPlatform, cert: { keyPem: string; certPem: string }, nodeId: string, credential: string) =>
  fetch(`${p.url}/api/v1/nodes/renew`, {
    method: 'POST',
    headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' },
    body: JSON.stringify(signRenewProof({ keyPem: cert.keyPem, certPem: cert.certPem, nodeId, generation: Number(credential.split('.')[1]), nowMs: p.platform.now() })),
  })

describe('enrollment authority (second self-audit)', () => {
  test('a node enrolled after the listing was first asked for is listed, on every page', async () => {
    await using p = await startPlatform({ remoteDispatch: true })
    await enrolled(p, 'm1')
    expect((await p.client.nodes.list()).nodes.map((n) => n.name)).toEqual(['m1'])
    // Enrolled after that listing: one sorting before and one after the first name.
    await enrolled(p, 'a1')
    await enrolled(p, 'z1')
    expect((await p.client.nodes.list()).nodes.map((n) => n.name)).toEqual(['a1', 'm1', 'z1'])
    expect((await p.client.nodes.listAll({ limit: 1 })).nodes.map((n) => n.name)).toEqual(['a1', 'm1', 'z1'])
    // Removed: gone from the listing again.
    await p.client.nodes.remove('m1', { force: true })
    expect((await p.client.nodes.list()).nodes.map((n) => n.name)).toEqual(['a1', 'z1'])
  })

  test('a second rebind retires the first one’s token: only the newest enrolls the name', async () => {
    await using p = await startPlatform({ remoteDispatch: true })
    await enrolled(p, 'w1')
    const first = await p.client.nodes.rebind('w1')
    const second = await p.client.nodes.rebind('w1')
    const stale = await enrollRaw(p.url, { token: first.token, nodeId: 'w1', certPem: (await newCert('w1')).certPem, version: VERSION })
    expect(stale.status).toBe(403)
    expect((await p.client.nodes.audit()).entries[0]).toMatchObject({ outcome: 'refused', reason: 'token revoked', nodeId: 'w1' })
    expect((await p.client.nodes.list()).pendingEnrollments.map((e) => e.nodeId)).toEqual(['w1'])
    const fresh = await enrollRaw(p.url, { token: second.token, nodeId: 'w1', certPem: (await newCert('w1')).certPem, version: VERSION })
    expect(fresh.status).toBe(200)
  })

  test('a fleet token is listed active while it has uses left, used once they are spent', async () => {
    await using p = await startPlatform({ remoteDispatch: true })
    const fleet = await p.client.nodes.createJoinToken({ maxUses: 2, namePattern: 'f*' })
    const shown = async () => (await p.client.nodes.listJoinTokens()).tokens.find((t) => t.id === fleet.id)!
    expect(await shown()).toMatchObject({ uses: 0, maxUses: 2, status: 'active' })
    expect((await enrollRaw(p.url, { token: fleet.token, nodeId: 'f1', certPem: (await newCert('f1')).certPem, version: VERSION })).status).toBe(200)
    expect(await shown()).toMatchObject({ uses: 1, status: 'active' }) // one use left, and it works:
    expect((await enrollRaw(p.url, { token: fleet.token, nodeId: 'f2', certPem: (await newCert('f2')).certPem, version: VERSION })).status).toBe(200)
    expect(await shown()).toMatchObject({ uses: 2, status: 'used' })
    expect((await enrollRaw(p.url, { token: fleet.token, nodeId: 'f3', certPem: (await newCert('f3')).certPem, version: VERSION })).status).toBe(403)
  })

  test('a node idle for an hour still renews at most 3 times at once', async () => {
    await using p = await startPlatform({ remoteDispatch: true })
    const w1 = await enrolled(p, 'w1')
    let credential = w1.credential
    const renewOnce = async () => {
      const r = await renewSigned(p, w1.cert, 'w1', credential)
      if (r.status === 200) credential = ((await r.json()) as { credential: string }).credential
      return r.status
    }
    expect(await renewOnce()).toBe(200) // the bucket exists from here, 2 left
    p.advance(3600_000) // an hour idle refills it to 3, never to 62
    expect([await renewOnce(), await renewOnce(), await renewOnce(), await renewOnce()]).toEqual([200, 200, 200, 429])
  })

  test('the readiness probe fails an agent that answers /health with another node’s name', async () => {
    await using p = await startListenerPlatform({ probeIntervalMs: 3_600_000 })
    using dir = tmpDir()
    const port = await freePort()
    const { token } = await p.client.nodes.createEnrollment({ nodeId: 'n1' })
    await joinPlatform({ dataDir: `${dir.path}/n1`, platformUrl: p.enrollUrl, nodeId: 'n1', fingerprint: p.fingerprint, addresses: ['127.0.0.1'], port, readToken: async () => token })
    // An HTTPS server with n1's own certificate and key, at the address n1 gave: only the name it answers differs.
    let answer = 'n2'
    const server = Bun.serve({
      hostname: '127.0.0.1',
      port,
      tls: { cert: readFileSync(`${dir.path}/n1/worker/agent.crt`, 'utf8'), key: readFileSync(`${dir.path}/n1/worker/agent.key`, 'utf8') },
      fetch: () => Response.json({ ok: true, node: answer, version: VERSION }),
    })
    try {
      const shown = async () => {
        p.platform.fabric.registry.heartbeat(p.platform.fabric.registry.get('n1')!, {})
        await p.platform.prober.probe('n1')
        const n = (await p.client.nodes.list()).nodes.find((x) => x.name === 'n1')!
        return { state: n.state, reason: n.reason ?? null }
      }
      expect(await shown()).toEqual({ state: 'unreachable', reason: PROBE_FAILED })
      answer = 'n1'
      expect(await shown()).toEqual({ state: 'ready', reason: null })
    } finally {
      server.stop(true)
    }
  })
})
