import { describe, expect, test } from 'bun:test'
import { ENGINES } from '../helpers/postgres.ts'
import { onEngine, startPlatform, type TestPlatform } from '../helpers/platform.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import { VERSION } from '../../src/version.ts'

const REFUSAL = '{"error":{"code":"enrollment-refused","message":"Enrollment refused."}}'
const NEWER = VERSION.replace(/\d+$/, (patch) => String(Number(patch) + 1))
const UNKNOWN = 'mjt_aaaaaaaaaaaaaaaa.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'

interface RefusalCase {
  /** The reason the audit log must record. */
  reason: string
  body: { token: string; nodeId: string; certPem: string; proof?: undefined }
}

/** One enroll request per refusal reason on a Platform prepared for it (the clock moves 2 minutes). */
async function refusalCases(p: TestPlatform): Promise<RefusalCase[]> {
  const certPem = (await newCert()).certPem
  const ok = async (token: string, nodeId: string, pem: string) => expect((await enrollRaw(p.url, { token, nodeId, certPem: pem, version: VERSION })).status).toBe(200)
  const once = await p.client.nodes.createJoinToken({ maxUses: 1 })
  await ok(once.token, 'first', (await newCert()).certPem)
  const revoked = await p.client.nodes.createJoinToken({ maxUses: 5 })
  await p.client.nodes.revokeJoinToken(revoked.id)
  const pattern = await p.client.nodes.createJoinToken({ maxUses: 5, namePattern: 'rack1-*' })
  const bound = await p.client.nodes.createEnrollment({ nodeId: 'bound' })
  const expiring = await p.client.nodes.createEnrollment({ nodeId: 'late', ttlMinutes: 1 })
  const fleet = await p.client.nodes.createJoinToken({ maxUses: 10 })
  await ok(fleet.token, 'gone', (await newCert()).certPem)
  await p.client.nodes.remove('gone')
  // A revoked node repeating its own finished enrollment (same token, name and certificate).
  const dead = await p.client.nodes.createEnrollment({ nodeId: 'dead' })
  const deadPem = (await newCert()).certPem
  await ok(dead.token, 'dead', deadPem)
  await p.client.nodes.revoke('dead')
  p.advance(2 * 60_000)
  // A good token without a proof of the key (docs/security.md): `proof: undefined` makes enrollRaw send none.
  const unproven = await p.client.nodes.createEnrollment({ nodeId: 'unproven' })
  const cases: [string, string, string, string?][] = [
    ['unknown token', UNKNOWN, 'w9'],
    ['malformed token', 'not-a-token', 'w9'],
    ['wrong secret', `${bound.token.split('.')[0]}.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA`, 'bound'],
    ['token used up', once.token, 'second'],
    ['token revoked', revoked.token, 'w9'],
    ['token expired', expiring.token, 'late'],
    ['name not allowed by the token pattern', pattern.token, 'rack2-1'],
    ['token bound to another name', bound.token, 'other'],
    ['name was removed (tombstoned)', fleet.token, 'gone'],
    ['reserved name', fleet.token, 'local'],
    ['node revoked', dead.token, 'dead', deadPem],
  ]
  return [
    ...cases.map(([reason, token, nodeId, pem]) => ({ reason, body: { token, nodeId, certPem: pem ?? certPem } })),
    { reason: 'no proof of key', body: { token: unproven.token, nodeId: 'unproven', certPem, proof: undefined } },
  ]
}

describe.each(ENGINES)('on %s', (engine) => {
  onEngine(engine)

  describe('enrollment authority', () => {
    test('nodes are disabled until remote dispatch is on', async () => {
      await using p = await startPlatform()
      const r = await fetch(`${p.url}/api/v1/nodes/enrollments`, { method: 'POST', headers: { authorization: `Bearer ${p.token}`, 'content-type': 'application/json' }, body: '{"nodeId":"w1"}' })
      expect(r.status).toBe(409)
      expect(((await r.json()) as { error: { code: string } }).error.code).toBe('nodes-disabled')
      const enroll = await enrollRaw(p.url, { token: 'mjt_x', nodeId: 'w1', certPem: (await newCert()).certPem, version: VERSION })
      expect(enroll.status).toBe(409)
      expect((await fetch(`${p.url}/api/v1/nodes/trust`, { method: 'POST' })).status).toBe(409)
    })

    test('a single-use enrollment works exactly once and answers credential and trust keys', async () => {
      await using p = await startPlatform({ remoteDispatch: true })
      const { token, expiresAt } = await p.client.nodes.createEnrollment({ nodeId: 'w1' })
      expect(token).toMatch(/^mjt_[a-z2-7]{16}\.[A-Za-z0-9_-]{43}$/)
      expect(Date.parse(expiresAt) - Date.now()).toBeGreaterThan(59 * 60_000)
      const cert = await newCert()
      const first = await enrollRaw(p.url, { token, nodeId: 'w1', certPem: cert.certPem, version: VERSION })
      expect(first.status).toBe(200)
      const body = (await first.json()) as { nodeId: string; agentId: string; credential: string; trustKeys: unknown[] }
      expect(body.nodeId).toBe('w1')
      expect(body.agentId).toBe('agent-w1')
      expect(body.credential).toMatch(/^mnc_w1\.1\.[A-Za-z0-9_-]{43}$/)
      expect(body.trustKeys).toHaveLength(1)
      const again = await enrollRaw(p.url, { token, nodeId: 'w1', certPem: (await newCert()).certPem, version: VERSION })
      expect(again.status).toBe(403)
      expect(await again.text()).toBe(REFUSAL)
      const list = await p.client.nodes.list()
      expect(list.nodes.find((n) => n.name === 'w1')?.certificateSha256).toBe(cert.fingerprint.slice(7))
      expect(list.pendingEnrollments).toEqual([])
    })

    test('a repeat with the same token, name and certificate returns the same answer and costs no use', async () => {
      await using p = await startPlatform({ remoteDispatch: true })
      const t = await p.client.nodes.createJoinToken({ maxUses: 2 })
      const cert = await newCert()
      const a = (await (await enrollRaw(p.url, { token: t.token, nodeId: 'w1', certPem: cert.certPem, version: VERSION })).json()) as { credential: string }
      const b = await enrollRaw(p.url, { token: t.token, nodeId: 'w1', certPem: cert.certPem, version: VERSION })
      expect(b.status).toBe(200)
      expect(((await b.json()) as { credential: string }).credential).toBe(a.credential)
      const listed = (await p.client.nodes.listJoinTokens()).tokens[0]!
      expect(listed.uses).toBe(1)
      // the second use is still there for another machine
      expect((await enrollRaw(p.url, { token: t.token, nodeId: 'w2', certPem: (await newCert()).certPem, version: VERSION })).status).toBe(200)
      // the same name and certificate with another token is no repeat: no credential, and that token is not spent
      const other = await p.client.nodes.createJoinToken({ maxUses: 1 })
      const c = await enrollRaw(p.url, { token: other.token, nodeId: 'w1', certPem: cert.certPem, version: VERSION })
      expect(c.status).toBe(409)
      expect(await c.text()).not.toContain('mnc_')
      expect((await p.client.nodes.listJoinTokens()).tokens.find((x) => x.id === other.id)?.uses).toBe(0)
    })

    test('every refusal is byte-identical (status, type, body); each reason reaches the audit log', async () => {
      await using p = await startPlatform({ remoteDispatch: true })
      const cases = await refusalCases(p)
      const secrets: string[] = []
      for (const c of cases) {
        const before = (await p.client.nodes.audit()).entries.length
        const r = await enrollRaw(p.url, { version: VERSION, ...c.body })
        expect(`${c.reason}: ${r.status} ${r.headers.get('content-type')} ${await r.text()}`).toBe(`${c.reason}: 403 application/json ${REFUSAL}`)
        const audit = (await p.client.nodes.audit()).entries
        expect(audit).toHaveLength(before + 1)
        expect(audit[0]).toMatchObject({ outcome: 'refused', reason: c.reason, nodeId: c.body.nodeId, version: VERSION })
        if (c.body.token.includes('.')) secrets.push(c.body.token.split('.')[1]!)
      }
      const dump = JSON.stringify(await p.client.nodes.audit())
      for (const secret of secrets) expect(dump).not.toContain(secret)
      expect(dump).not.toContain('BEGIN CERTIFICATE')
    })

    test('worker-newer never shows through a bad token: every refusal reason with a newer version is the same 403', async () => {
      await using p = await startPlatform({ remoteDispatch: true })
      for (const c of await refusalCases(p)) {
        const r = await enrollRaw(p.url, { ...c.body, version: NEWER })
        expect(`${c.reason}: ${r.status} ${await r.text()}`).toBe(`${c.reason}: 403 ${REFUSAL}`)
        expect((await p.client.nodes.audit()).entries[0]).toMatchObject({ outcome: 'refused', reason: c.reason })
      }
    })

    test('150 concurrent enrolls on a 100-use token give exactly 100 credentials', async () => {
      await using p = await startPlatform({ remoteDispatch: true })
      const t = await p.client.nodes.createJoinToken({ maxUses: 100, namePattern: 'race-*' })
      const certs = await Promise.all(Array.from({ length: 150 }, () => newCert()))
      const results = await Promise.all(certs.map((c, i) => enrollRaw(p.url, { token: t.token, nodeId: `race-${i}`, certPem: c.certPem, version: VERSION })))
      const statuses = results.map((r) => r.status)
      expect(statuses.filter((s) => s === 200)).toHaveLength(100)
      expect(statuses.filter((s) => s === 403)).toHaveLength(50)
      expect((await p.client.nodes.list()).nodes.filter((n) => n.name.startsWith('race-'))).toHaveLength(100)
      expect((await p.client.nodes.listJoinTokens()).tokens[0]!.uses).toBe(100)
    })

    test('a node newer than the Platform is told so after the token verified, without spending it', async () => {
      await using p = await startPlatform({ remoteDispatch: true })
      const e = await p.client.nodes.createEnrollment({ nodeId: 'w1' })
      const cert = await newCert()
      const newer = NEWER
      const r = await enrollRaw(p.url, { token: e.token, nodeId: 'w1', certPem: cert.certPem, version: newer })
      expect(r.status).toBe(409)
      const body = (await r.json()) as { error: { code: string; message: string } }
      expect(body.error.code).toBe('worker-newer')
      expect(body.error.message).toContain(newer)
      expect(body.error.message).toContain(VERSION)
      // a bad token with a newer version is still just refused
      const bad = await enrollRaw(p.url, { token: UNKNOWN, nodeId: 'w1', certPem: cert.certPem, version: newer })
      expect(await bad.text()).toBe(REFUSAL)
      // not spent: the same token works at the Platform's version
      expect((await enrollRaw(p.url, { token: e.token, nodeId: 'w1', certPem: cert.certPem, version: VERSION })).status).toBe(200)
    })

    test('compatibility: older is behind, equal current, newer newer, absent unknown', async () => {
      await using p = await startPlatform({ remoteDispatch: true })
      const t = await p.client.nodes.createJoinToken({ maxUses: 4 })
      await enrollRaw(p.url, { token: t.token, nodeId: 'old', certPem: (await newCert()).certPem, version: '0.0.1' })
      await enrollRaw(p.url, { token: t.token, nodeId: 'same', certPem: (await newCert()).certPem, version: VERSION })
      await enrollRaw(p.url, { token: t.token, nodeId: 'none', certPem: (await newCert()).certPem })
      // A node updated after it enrolled reports a version newer than the Platform in its heartbeats.
      const ahead = (await (await enrollRaw(p.url, { token: t.token, nodeId: 'ahead', certPem: (await newCert()).certPem, version: VERSION })).json()) as { credential: string }
      const newer = VERSION.replace(/^(\d+)\./, (_, major: string) => `${Number(major) + 1}.`)
      const hb = await fetch(`${p.url}/api/v1/nodes/register`, { method: 'POST', headers: { authorization: `Bearer ${ahead.credential}`, 'content-type': 'application/json' }, body: JSON.stringify({ version: newer }) })
      expect(hb.status).toBe(200)
      const byName = Object.fromEntries((await p.client.nodes.list()).nodes.map((n) => [n.name, n.compatibility]))
      expect(byName).toEqual({ old: 'behind', same: 'current', none: 'unknown', ahead: 'newer' })
    })

    test('another certificate for an enrolled name is 409 node-exists and leaves the original intact', async () => {
      await using p = await startPlatform({ remoteDispatch: true })
      const t = await p.client.nodes.createJoinToken({ maxUses: 5 })
      const cert = await newCert()
      const first = (await (await enrollRaw(p.url, { token: t.token, nodeId: 'w1', certPem: cert.certPem, version: VERSION })).json()) as { credential: string }
      const other = await enrollRaw(p.url, { token: t.token, nodeId: 'w1', certPem: (await newCert()).certPem, version: VERSION })
      expect(other.status).toBe(409)
      expect(((await other.json()) as { error: { code: string } }).error.code).toBe('node-exists')
      expect((await p.client.nodes.list()).nodes.find((n) => n.name === 'w1')?.certificateSha256).toBe(cert.fingerprint.slice(7))
      const hb = await fetch(`${p.url}/api/v1/nodes/register`, { method: 'POST', headers: { authorization: `Bearer ${first.credential}`, 'content-type': 'application/json' }, body: '{}' })
      expect(hb.status).toBe(200)
      expect((await p.client.nodes.listJoinTokens()).tokens[0]!.uses).toBe(1)
    })

    test('one certificate under two names is refused; a garbage certificate is 400', async () => {
      await using p = await startPlatform({ remoteDispatch: true })
      const t = await p.client.nodes.createJoinToken({ maxUses: 3 })
      const cert = await newCert()
      expect((await enrollRaw(p.url, { token: t.token, nodeId: 'a', certPem: cert.certPem, version: VERSION })).status).toBe(200)
      expect((await enrollRaw(p.url, { token: t.token, nodeId: 'b', certPem: cert.certPem, version: VERSION })).status).toBe(409)
      const garbage = await enrollRaw(p.url, { token: t.token, nodeId: 'c', certPem: '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----', version: VERSION })
      expect(garbage.status).toBe(400)
      expect(((await garbage.json()) as { error: { code: string; message: string } }).error).toMatchObject({ code: 'invalid-request' })
      expect((await p.client.nodes.listJoinTokens()).tokens[0]!.uses).toBe(1)
    })

    test('issuing refuses registered, local, and pending names unless replace', async () => {
      await using p = await startPlatform({ remoteDispatch: true })
      const code = async (body: { nodeId: string; replace?: boolean; ttlMinutes?: number }) =>
        (await fetch(`${p.url}/api/v1/nodes/enrollments`, { method: 'POST', headers: { authorization: `Bearer ${p.token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })).status
      expect(await code({ nodeId: 'local' })).toBe(409)
      expect(await code({ nodeId: 'w1' })).toBe(200)
      expect(await code({ nodeId: 'w1' })).toBe(409)
      expect(await code({ nodeId: 'w1', replace: true })).toBe(200)
      expect(await code({ nodeId: 'w1', ttlMinutes: 1441 })).toBe(400)
      expect(await code({ nodeId: 'Bad_Name' })).toBe(400)
      expect((await p.client.nodes.list()).pendingEnrollments.map((e) => e.nodeId)).toEqual(['w1'])
    })
  })
})
