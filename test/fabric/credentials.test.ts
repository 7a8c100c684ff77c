import { describe, expect, test } from 'bun:test'
import { ENGINES } from '../helpers/postgres.ts'
import { onEngine, startPlatform, type TestPlatform } from '../helpers/platform.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import { VERSION } from '../../src/version.ts'
import { waitFor } from '../helpers/tmp.ts'
import { signRenewProof } from '../../src/crypto/enroll-proof.ts'

async function enrolled(p: TestPlatform, nodeId: string) {
  const e = await p.client.nodes.createEnrollment({ nodeId })
  const cert = await newCert(nodeId)
  const r = await enrollRaw(p.url, { token: e.token, nodeId, certPem: cert.certPem, version: VERSION })
  expect(r.status).toBe(200)
  return { ...((await r.json()) as { credential: string }), cert }
}

const post = (url: string, path: string, credential: string, body: unknown = {}) =>
  fetch(`${url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })

describe.each(ENGINES)('on %s', (engine) => {
  onEngine(engine)

  describe('node credentials', () => {
    test('a credential registers its own node only, and is refused on operator routes', async () => {
      await using p = await startPlatform({ remoteDispatch: true })
      const w1 = await enrolled(p, 'w1')
      await enrolled(p, 'w2')
      const hb = await post(p.url, '/api/v1/nodes/register', w1.credential, { version: VERSION, capacity: { cpuMillis: 2000, memoryMB: 4096 } })
      expect(hb.status).toBe(200)
      expect(await hb.json()).toMatchObject({ nodeId: 'w1' })
      expect((await post(p.url, '/api/v1/nodes/register', w1.credential, { nodeId: 'w2' })).status).toBe(403)
      for (const [method, path] of [
        ['GET', '/api/v1/nodes'],
        ['POST', '/api/v1/nodes/enrollments'],
        ['GET', '/api/v1/join-tokens'],
        ['POST', '/api/v1/nodes/w2/revoke'],
        ['DELETE', '/api/v1/nodes/w1'],
      ] as const) {
        const r = await fetch(`${p.url}${path}`, { method, headers: { authorization: `Bearer ${w1.credential}`, 'content-type': 'application/json' }, body: method === 'POST' ? '{"nodeId":"x"}' : undefined })
        expect(`${method} ${path} ${r.status}`).toBe(`${method} ${path} 403`)
      }
      // a forged mac is not a credential
      const mac = w1.credential.split('.')[2]!
      const forged = w1.credential.replace(mac, `${mac[0] === 'A' ? 'B' : 'A'}${mac.slice(1)}`)
      expect((await post(p.url, '/api/v1/nodes/register', forged)).status).toBe(401)
      // the credential is not stored anywhere
      const dump = JSON.stringify(await p.platform.store.all('SELECT * FROM nodes'))
      expect(dump).not.toContain(w1.credential.split('.')[2]!)
    })

    test('renew issues the next generation; the previous works one more hour', async () => {
      await using p = await startPlatform({ remoteDispatch: true })
      const w1 = await enrolled(p, 'w1')
      const proof = signRenewProof({ keyPem: w1.cert.keyPem, certPem: w1.cert.certPem, nodeId: 'w1', generation: 1, nowMs: p.platform.now() })
      const renewed = (await (await post(p.url, '/api/v1/nodes/renew', w1.credential, proof)).json()) as { credential: string; generation: number }
      expect(renewed.generation).toBe(2)
      expect(renewed.credential).toMatch(/^mnc_w1\.2\./)
      expect((await post(p.url, '/api/v1/nodes/register', w1.credential)).status).toBe(200)
      p.advance(59 * 60_000)
      expect((await post(p.url, '/api/v1/nodes/register', w1.credential)).status).toBe(200)
      p.advance(2 * 60_000)
      expect((await post(p.url, '/api/v1/nodes/register', w1.credential)).status).toBe(401)
      expect((await post(p.url, '/api/v1/nodes/register', renewed.credential)).status).toBe(200)
    })

    test('operator rotate moves the generation; the heartbeat answer tells the node', async () => {
      await using p = await startPlatform({ remoteDispatch: true })
      const w1 = await enrolled(p, 'w1')
      const r = await p.client.nodes.rotate('w1')
      expect(r.generation).toBe(2)
      const hb = (await (await post(p.url, '/api/v1/nodes/register', w1.credential)).json()) as { generation: number }
      expect(hb.generation).toBe(2)
    })

    test('revoke stops a node even while it heartbeats', async () => {
      await using p = await startPlatform({ remoteDispatch: true })
      const w1 = await enrolled(p, 'w1')
      let stop = false
      const statuses: number[] = []
      const beating = (async () => {
        while (!stop) statuses.push((await post(p.url, '/api/v1/nodes/register', w1.credential)).status)
      })()
      try {
        await waitFor(() => statuses.length >= 3, { what: 'heartbeats under way' })
        await p.client.nodes.revoke('w1')
        // Every heartbeat sent after the revoke returned is refused (the one in flight may still pass).
        const sentAfter = statuses.length + 1
        await waitFor(() => statuses.length >= sentAfter + 3, { what: 'three heartbeats after the revoke' })
      } finally {
        stop = true
        await beating
      }
      expect(statuses[0]).toBe(200)
      const firstRefused = statuses.indexOf(403)
      expect(firstRefused).toBeGreaterThan(0)
      expect(statuses.slice(firstRefused)).toEqual(statuses.slice(firstRefused).map(() => 403))
      expect(statuses.slice(0, firstRefused)).toEqual(statuses.slice(0, firstRefused).map(() => 200))
      expect((await p.client.nodes.list()).nodes.find((n) => n.name === 'w1')?.state).toBe('revoked')
      expect((await post(p.url, '/api/v1/nodes/renew', w1.credential)).status).toBe(403)
    })

    test('rebind kills the old credential and lets the name enroll with a new certificate', async () => {
      await using p = await startPlatform({ remoteDispatch: true })
      const w1 = await enrolled(p, 'w1')
      const rb = await p.client.nodes.rebind('w1')
      expect((await post(p.url, '/api/v1/nodes/register', w1.credential)).status).toBe(401)
      // A fleet token cannot claim the name being rebound: only the enrollment rebind issued can.
      const fleet = await p.client.nodes.createJoinToken({ maxUses: 5, namePattern: 'w*' })
      const claimed = await enrollRaw(p.url, { token: fleet.token, nodeId: 'w1', certPem: (await newCert()).certPem, version: VERSION })
      expect(claimed.status).not.toBe(200)
      const cert = await newCert()
      const r = await enrollRaw(p.url, { token: rb.token, nodeId: 'w1', certPem: cert.certPem, version: VERSION })
      expect(r.status).toBe(200)
      const fresh = (await r.json()) as { credential: string }
      expect((await post(p.url, '/api/v1/nodes/register', fresh.credential)).status).toBe(200)
      // Once the name holds a new certificate, the old credential stays dead on every route it had.
      for (const path of ['/api/v1/nodes/register', '/api/v1/nodes/renew']) expect((await post(p.url, path, w1.credential)).status).toBeOneOf([401, 403])
      expect((await p.client.nodes.list()).nodes.find((n) => n.name === 'w1')?.certificateSha256).toBe(cert.fingerprint.slice(7))
    })

    test('remove drops the node and its credential and leaves a tombstone', async () => {
      await using p = await startPlatform({ remoteDispatch: true })
      const w1 = await enrolled(p, 'w1')
      await p.client.nodes.remove('w1')
      expect((await post(p.url, '/api/v1/nodes/register', w1.credential)).status).toBe(401)
      expect((await p.client.nodes.list()).nodes.map((n) => n.name)).toEqual([])
      const again = await fetch(`${p.url}/api/v1/nodes/enrollments`, { method: 'POST', headers: { authorization: `Bearer ${p.token}`, 'content-type': 'application/json' }, body: '{"nodeId":"w1"}' })
      expect(again.status).toBe(409)
      // a fleet token cannot silently reuse the name either
      const fleet = await p.client.nodes.createJoinToken({ maxUses: 2 })
      const r = await enrollRaw(p.url, { token: fleet.token, nodeId: 'w1', certPem: (await newCert()).certPem, version: VERSION })
      expect(r.status).toBe(403)
      // reusing it on purpose works
      expect((await p.client.nodes.createEnrollment({ nodeId: 'w1', replace: true })).nodeId).toBe('w1')
    })

    test('remove is refused while something keeps the node in use; local can never be removed', async () => {
      await using p = await startPlatform({ remoteDispatch: true })
      await enrolled(p, 'w1')
      p.platform.fabric.inUseChecks.push((n) => (n === 'w1' ? 'project web is placed there' : null))
      const r = await fetch(`${p.url}/api/v1/nodes/w1`, { method: 'DELETE', headers: { authorization: `Bearer ${p.token}` } })
      expect(r.status).toBe(409)
      expect(((await r.json()) as { error: { code: string } }).error.code).toBe('node-in-use')
      expect((await fetch(`${p.url}/api/v1/nodes/local`, { method: 'DELETE', headers: { authorization: `Bearer ${p.token}` } })).status).toBe(409)
    })

    test('states: enrolled, ready after a heartbeat, unreachable when heartbeats stop', async () => {
      await using p = await startPlatform({ remoteDispatch: true, nodeStaleAfterMs: 30_000 })
      const w1 = await enrolled(p, 'w1')
      const state = async () => (await p.client.nodes.list()).nodes.find((n) => n.name === 'w1')!
      expect((await state()).state).toBe('enrolled')
      await post(p.url, '/api/v1/nodes/register', w1.credential, { version: VERSION })
      expect((await state()).state).toBe('ready')
      p.advance(31_000)
      const s = await state()
      expect(s.state).toBe('unreachable')
      expect(s.reason).toContain('no heartbeat')
    })
  })
})
