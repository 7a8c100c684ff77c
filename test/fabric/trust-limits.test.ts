import { describe, expect, test } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { ENGINES } from '../helpers/postgres.ts'
import { onEngine, startPlatform } from '../helpers/platform.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import { VERSION } from '../../src/version.ts'
import { verifyDomain } from '../../src/crypto/ed25519.ts'
import { fromB64url } from '../../src/crypto/tokens.ts'
import { tmpDir } from '../helpers/tmp.ts'
import { createClient } from '../../src/client/index.ts'

const DAY = 86400_000
type Keys = { trustKeys: { kid: string; publicKey: string; notBefore: string; notAfter: string }[] }
const trust = async (url: string) => (await (await fetch(`${url}/api/v1/nodes/trust`, { method: 'POST' })).json()) as Keys

describe.each(ENGINES)('on %s', (engine) => {
  onEngine(engine)

  describe('trust keys', () => {
    test('a full rotation over the trust route: the next key is published 90 days before it signs; the old one stays until it expires', async () => {
      await using p = await startPlatform({ remoteDispatch: true })
      const tick = () => p.platform.fabric.trust.sync()
      const first = await trust(p.url)
      expect(first.trustKeys).toHaveLength(1)
      const k1 = first.trustKeys[0]!
      expect(Date.parse(k1.notAfter) - Date.parse(k1.notBefore)).toBe(2 * 365 * DAY)
      p.advance(274 * DAY) // 91 days before k1's year ends: still one key
      await tick()
      expect((await trust(p.url)).trustKeys.map((k) => k.kid)).toEqual([k1.kid])
      p.advance(2 * DAY) // 89 days before: the next key is published, k1 still signs
      await tick()
      const both = (await trust(p.url)).trustKeys
      expect(both.map((k) => k.kid)).toHaveLength(2)
      expect(both[0]!.kid).toBe(k1.kid)
      const k2 = both[1]!
      expect(Date.parse(k2.notBefore)).toBe(Date.parse(k1.notBefore) + 365 * DAY)
      expect(p.platform.fabric.trust.sign('muster test v1', 'hello').kid).toBe(k1.kid)
      p.advance(90 * DAY) // k1's year is over
      const signed = p.platform.fabric.trust.sign('muster test v1', 'hello')
      expect(signed.kid).toBe(k2.kid)
      expect(verifyDomain('muster test v1', fromB64url(k2.publicKey), 'hello', fromB64url(signed.signature))).toBe(true)
      expect((await trust(p.url)).trustKeys.map((k) => k.kid)).toContain(k1.kid) // still verifies
      p.advance(366 * DAY) // k1 expired
      await tick()
      const later = (await trust(p.url)).trustKeys.map((k) => k.kid)
      expect(later).not.toContain(k1.kid)
      expect(later).toContain(k2.kid)
    })

    test('a node whose assignments do not change still gets them signed by the key that signs now', async () => {
      await using p = await startPlatform({ remoteDispatch: true })
      const e = await p.client.nodes.createEnrollment({ nodeId: 'a' })
      const enrolled = (await (await enrollRaw(p.url, { token: e.token, nodeId: 'a', certPem: (await newCert('a')).certPem, version: VERSION })).json()) as { credential: string }
      const node = createClient({ url: p.url, token: enrolled.credential })
      const first = await node.projects.assignments()
      expect(first.kid).toBe(p.platform.fabric.trust.currentKid())
      p.advance(280 * DAY)
      await p.platform.fabric.trust.sync()
      p.advance(90 * DAY) // the next key signs now
      const second = await node.projects.assignments()
      expect(second.payload.revision).toBe(first.payload.revision)
      expect(second.kid).not.toBe(first.kid)
      expect(second.kid).toBe(p.platform.fabric.trust.currentKid())
    })

    test('trust keys survive a restart and are kept only sealed in the store', async () => {
      using dir = tmpDir()
      const a = await startPlatform({ remoteDispatch: true, dataDir: dir.path })
      const before = await trust(a.url)
      expect(await a.platform.vault.list('trust/')).toHaveLength(1)
      await a.close()
      const b = await startPlatform({ remoteDispatch: true, dataDir: dir.path })
      expect((await trust(b.url)).trustKeys).toEqual(before.trustKeys)
      const sealed = await b.platform.store.all<{ name: string; sealed: Uint8Array }>("SELECT name, sealed FROM secrets WHERE name LIKE 'trust/%'")
      expect(sealed.length).toBeGreaterThan(0)
      for (const row of sealed) expect(Buffer.from(row.sealed).toString('latin1')).not.toContain('privateKey')
      await b.close()
      const { existsSync } = await import('node:fs')
      expect(existsSync(`${dir.path}/platform/trust`)).toBe(false)
    })
  })

  describe('audit and rate limits', () => {
    test('the audit log keeps at most 500 entries and 30 days', async () => {
      await using p = await startPlatform({ remoteDispatch: true })
      for (let i = 0; i < 520; i++) await p.platform.fabric.audit('refused', 'unknown token', `n${i}`, VERSION)
      let entries = (await p.client.nodes.audit()).entries
      expect(entries).toHaveLength(500)
      expect(entries[0]!.nodeId).toBe('n519')
      await p.platform.fabric.audit('refused', 'x', 'Not A Name!', '1.2.3')
      entries = (await p.client.nodes.audit()).entries
      expect(entries[0]!.nodeId).toBeNull()
      p.advance(31 * DAY)
      expect((await p.client.nodes.audit()).entries).toHaveLength(0)
    })

    test('enroll over its limit is 429 with Retry-After and is not audited; the bucket refills with the clock; heartbeats are not starved', async () => {
      // A clock that moves only when the test says: the limiter must use the Platform's clock.
      let now = Date.now()
      await using p = await startPlatform({ remoteDispatch: true, clock: () => now, enrollLimit: { perSecond: 1, burst: 3, maxInFlight: 256 } })
      const e = await p.client.nodes.createEnrollment({ nodeId: 'w1' })
      const cert = await newCert()
      const ok = await enrollRaw(p.url, { token: e.token, nodeId: 'w1', certPem: cert.certPem, version: VERSION })
      expect(ok.status).toBe(200)
      const { credential } = (await ok.json()) as { credential: string }
      const attempt = () => enrollRaw(p.url, { token: 'mjt_aaaaaaaaaaaaaaaa.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', nodeId: 'w2', certPem: cert.certPem })
      const statuses: number[] = []
      for (let i = 0; i < 6; i++) {
        const r = await attempt()
        statuses.push(r.status)
        if (r.status === 429) {
          expect(r.headers.get('retry-after')).toBe('1')
          expect(((await r.json()) as { error: { code: string } }).error.code).toBe('rate-limited')
        }
      }
      // burst 3: the enroll above and two refusals, then the bucket is empty while the clock stands still
      expect(statuses).toEqual([403, 403, 429, 429, 429, 429])
      expect((await p.client.nodes.audit()).entries).toHaveLength(3)
      now += 1000 // one second refills one request
      expect((await attempt()).status).toBe(403)
      expect((await attempt()).status).toBe(429)
      expect((await p.client.nodes.audit()).entries).toHaveLength(4)
    const hb = await fetch(`${p.url}/api/v1/nodes/register`, { method: 'POST', headers: { authorization: `Bearer ${credential}` } })
      expect(hb.status).toBe(200)
    })
  })

  describe('--node-auth', () => {
    const fleet = 'shared-fleet-token-0123456789'
    async function withMode(mode: 'legacy' | 'both' | 'enrolled') {
      const dir = tmpDir()
      writeFileSync(`${dir.path}/fleet`, `${fleet}\n`, { mode: 0o600 })
      const p = await startPlatform({ remoteDispatch: true, nodeAuth: mode, fleetTokenFile: `${dir.path}/fleet` })
      return { p, dir }
    }
    const legacyRegister = (url: string, nodeId: string, token = fleet) =>
      fetch(`${url}/api/v1/nodes/register`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ nodeId }) })

    test('legacy: the shared token registers nodes by name; enroll is 404', async () => {
      const { p, dir } = await withMode('legacy')
      try {
        expect((await legacyRegister(p.url, 'old-1')).status).toBe(200)
        expect((await legacyRegister(p.url, 'old-1', 'wrong-token-wrong-token')).status).toBe(401)
        expect((await enrollRaw(p.url, { token: 'x', nodeId: 'a', certPem: 'x' })).status).toBe(404)
        const n = (await p.client.nodes.list()).nodes.find((x) => x.name === 'old-1')
        expect(n?.auth).toBe('legacy')
      } finally {
        await p.close()
        dir[Symbol.dispose]()
      }
    })

    test('both: shared token and enrolled credentials both work, and the listing tells them apart', async () => {
      const { p, dir } = await withMode('both')
      try {
        expect((await legacyRegister(p.url, 'old-1')).status).toBe(200)
        const e = await p.client.nodes.createEnrollment({ nodeId: 'new-1' })
        const r = await enrollRaw(p.url, { token: e.token, nodeId: 'new-1', certPem: (await newCert()).certPem, version: VERSION })
        const { credential } = (await r.json()) as { credential: string }
        expect((await fetch(`${p.url}/api/v1/nodes/register`, { method: 'POST', headers: { authorization: `Bearer ${credential}` } })).status).toBe(200)
        // an enrolled name cannot be taken over with the shared token
        expect((await legacyRegister(p.url, 'new-1')).status).toBe(403)
        const auth = Object.fromEntries((await p.client.nodes.list()).nodes.map((n) => [n.name, n.auth]))
        expect(auth).toMatchObject({ 'old-1': 'legacy', 'new-1': 'enrolled' })
      } finally {
        await p.close()
        dir[Symbol.dispose]()
      }
    })

    test('enrolled: the shared token is 403 on register', async () => {
      const { p, dir } = await withMode('enrolled')
      try {
        expect((await legacyRegister(p.url, 'old-1')).status).toBe(403)
      } finally {
        await p.close()
        dir[Symbol.dispose]()
      }
    })
  })

  describe('a refused start', () => {
    test('a bad fleet token file refuses the start before any account exists, and frees the lock', async () => {
      using dir = tmpDir()
      writeFileSync(`${dir.path}/fleet`, 'short\n', { mode: 0o600 })
      const { Platform } = await import('../../src/platform/platform.ts')
      const { existsSync } = await import('node:fs')
      await expect(Platform.open({ dataDir: `${dir.path}/data`, remoteDispatch: true, fleetTokenFile: `${dir.path}/fleet` })).rejects.toThrow(/at least 16 characters/)
      expect(existsSync(`${dir.path}/data/platform/initial-superadmin-password`)).toBe(false)
      expect(existsSync(`${dir.path}/data/platform/serve.lock`)).toBe(false)
    })
  })
})
