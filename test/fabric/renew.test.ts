// docs/security.md: renew works only with the current generation; the previous one
// heartbeats through its grace hour but cannot renew itself back.
// Every renewal proves the agent key: a copy of
// the current credential cannot renew the real Agent out. Renewals are limited
// per node: a burst of 3, then one a minute.
import { describe, expect, test } from 'bun:test'
import { signRenewProof } from '../../src/crypto/enroll-proof.ts'
import { VERSION } from '../../src/version.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import { onEngine, startPlatform, type TestPlatform } from '../helpers/platform.ts'
import { ENGINES } from '../helpers/postgres.ts'

async function enrolled(p: TestPlatform, nodeId: string, replace?: boolean) {
  const e = await p.client.nodes.createEnrollment({ nodeId, replace })
  const cert = await newCert(nodeId)
  const r = await enrollRaw(p.url, { token: e.token, nodeId, certPem: cert.certPem, version: VERSION })
  expect(r.status).toBe(200)
  return { ...((await r.json()) as { credential: string }), cert }
}

const post = (p: TestPlatform, path: string, credential: string, body?: unknown) =>
  fetch(`${p.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${credential}`, ...(body ? { 'content-type': 'application/json' } : {}) }, body: body ? JSON.stringify(body) : undefined })
const renew = (p: TestPlatform, credential: string, body?: unknown) => post(p, '/api/v1/nodes/renew', credential, body)
/** A renewal signed with the node's key, for the generation `credential` carries. */
const renewSigned = (p: TestPlatform, node: { cert: { keyPem: string; certPem: string } }, nodeId: string, credential: string) =>
  renew(p, credential, signRenewProof({ keyPem: node.cert.keyPem, certPem: node.cert.certPem, nodeId, generation: Number(credential.split('.')[1]), nowMs: p.platform.now() }))
const generationOf = async (p: TestPlatform, name: string) => Number((await p.platform.store.get<{ generation: number }>('SELECT generation FROM nodes WHERE name = ?1', name))?.generation)

describe.each(ENGINES)('on %s', (engine) => {
  onEngine(engine)

  describe('renewing node credentials', () => {
    test('a rotated-away credential cannot renew itself back; it heartbeats through its grace hour, then dies', async () => {
      await using p = await startPlatform({ remoteDispatch: true })
      const w1 = await enrolled(p, 'w1')
      const stolen = w1.credential // a copy leaked; the operator rotates
      expect((await p.client.nodes.rotate('w1')).generation).toBe(2)
      const other = await newCert('other')
      for (const body of [undefined, {}, signRenewProof({ keyPem: other.keyPem, certPem: w1.cert.certPem, nodeId: 'w1', generation: 1, nowMs: p.platform.now() })]) {
        const r = await renew(p, stolen, body)
        const text = await r.text()
        expect(text).not.toContain('mnc_')
        expect(r.status).toBe(403)
        expect(JSON.parse(text).error.code).toBe('forbidden')
      }
      expect(await generationOf(p, 'w1')).toBe(2)
      expect((await post(p, '/api/v1/nodes/register', stolen, {})).status).toBe(200)
      p.advance(61 * 60_000)
      expect((await post(p, '/api/v1/nodes/register', stolen, {})).status).toBe(401)
      expect((await renew(p, stolen)).status).toBe(401)
      expect(await generationOf(p, 'w1')).toBe(2)
    })

    test('the holder of the agent key renews a rotated-away credential with a fresh proof; a stale or misdirected proof is refused', async () => {
      await using p = await startPlatform({ remoteDispatch: true })
      const w1 = await enrolled(p, 'w1')
      await p.client.nodes.rotate('w1')
      const proof = (generation: number, nowMs = p.platform.now()) => signRenewProof({ keyPem: w1.cert.keyPem, certPem: w1.cert.certPem, nodeId: 'w1', generation, nowMs })
      expect((await renew(p, w1.credential, proof(2))).status).toBe(403) // signed for another generation
      expect((await renew(p, w1.credential, proof(1, p.platform.now() - 301_000))).status).toBe(403) // stale
      const r = await renew(p, w1.credential, proof(1))
      expect(r.status).toBe(200)
      const next = (await r.json()) as { generation: number; credential: string }
      expect(next.generation).toBe(3)
      expect((await post(p, '/api/v1/nodes/register', next.credential, {})).status).toBe(200)
    })

    test('a copy of the current credential (no key) cannot renew: the real Agent is never locked out', async () => {
      await using p = await startPlatform({ remoteDispatch: true })
      const w1 = await enrolled(p, 'w1')
      const copy = w1.credential // copied off the node, without worker/agent.key
      const other = await newCert('other')
      const attempts = [undefined, {}, { proofTime: Math.floor(p.platform.now() / 1000), proof: 'A'.repeat(96) }, signRenewProof({ keyPem: other.keyPem, certPem: w1.cert.certPem, nodeId: 'w1', generation: 1, nowMs: p.platform.now() })]
      // Twice in a row (what locked the Agent out: its generation neither current nor previous), and more.
      for (const body of [...attempts, ...attempts]) {
        const r = await renew(p, copy, body)
        const text = await r.text()
        expect(text).not.toContain('mnc_')
        expect(r.status).toBe(403)
        expect(JSON.parse(text).error.message).toContain('proof of the node')
      }
      expect(await generationOf(p, 'w1')).toBe(1)
      // The real Agent, holding the key, renews as every day; the refusals spent none of its renewals.
      let credential = w1.credential
      for (let i = 0; i < 3; i++) {
        const r = await renewSigned(p, w1, 'w1', credential)
        expect(r.status).toBe(200)
        credential = ((await r.json()) as { credential: string }).credential
      }
      expect(credential).toMatch(/^mnc_w1\.4\./)
      expect((await post(p, '/api/v1/nodes/register', credential, {})).status).toBe(200)
    })

    test('the current generation renews with a proof; the one it replaced cannot renew back without one', async () => {
      await using p = await startPlatform({ remoteDispatch: true })
      const w1 = await enrolled(p, 'w1')
      const r = await renewSigned(p, w1, 'w1', w1.credential)
      expect(r.status).toBe(200)
      const g2 = (await r.json()) as { credential: string; generation: number }
      expect(g2.generation).toBe(2)
      expect((await renew(p, w1.credential)).status).toBe(403)
      expect((await renew(p, g2.credential)).status).toBe(403)
      expect((await renewSigned(p, w1, 'w1', g2.credential)).status).toBe(200)
    })

    test('after remove and a re-enroll with a new certificate, the old credential is refused (same name, same generation)', async () => {
      await using p = await startPlatform({ remoteDispatch: true })
      const old = await enrolled(p, 'w1')
      expect(old.credential).toMatch(/^mnc_w1\.1\./)
      await p.client.nodes.revoke('w1')
      await p.client.nodes.remove('w1')
      const fresh = await enrolled(p, 'w1', true)
      expect(fresh.credential).toMatch(/^mnc_w1\.1\./) // the generation number matches the old one
      expect(fresh.credential).not.toBe(old.credential)
      expect((await post(p, '/api/v1/nodes/register', old.credential, {})).status).toBe(401)
      // Even with the old key's proof: the binding is to the node's certificate now.
      expect((await renewSigned(p, old, 'w1', old.credential)).status).toBe(401)
      expect((await fetch(`${p.url}/api/v1/nodes/self/assignments`, { headers: { authorization: `Bearer ${old.credential}` } })).status).toBe(401)
      expect(await generationOf(p, 'w1')).toBe(1)
      expect((await post(p, '/api/v1/nodes/register', fresh.credential, {})).status).toBe(200)
      expect((await renewSigned(p, fresh, 'w1', fresh.credential)).status).toBe(200)
    })

    test('per node: a burst of 3, then one a minute, 429 with Retry-After; other nodes are not held up', async () => {
      await using p = await startPlatform({ remoteDispatch: true })
      const w1 = await enrolled(p, 'w1')
      let { credential } = w1
      const w2 = await enrolled(p, 'w2')
      for (let i = 0; i < 3; i++) {
        const r = await renewSigned(p, w1, 'w1', credential)
        expect(r.status).toBe(200)
        credential = ((await r.json()) as { credential: string }).credential
      }
      const limited = await renewSigned(p, w1, 'w1', credential)
      expect(limited.status).toBe(429)
      expect(((await limited.json()) as { error: { code: string } }).error.code).toBe('rate-limited')
      const after = Number(limited.headers.get('retry-after'))
      expect(after).toBeGreaterThan(0)
      expect(after).toBeLessThanOrEqual(60)
      expect((await renewSigned(p, w2, 'w2', w2.credential)).status).toBe(200)
      expect(await generationOf(p, 'w1')).toBe(4)
      p.advance(after * 1000)
      const again = await renewSigned(p, w1, 'w1', credential)
      expect(again.status).toBe(200)
      expect((await renewSigned(p, w1, 'w1', ((await again.json()) as { credential: string }).credential)).status).toBe(429) // one a minute
    })
  })
})
