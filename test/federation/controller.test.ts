import { tokenDigester } from '../../src/crypto/token-digest.ts'
import { describe, expect, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { ENGINES } from '../helpers/postgres.ts'
import { onEngine, startPlatform } from '../helpers/platform.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'
import { MusterError } from '../../src/errors.ts'
import { parseOfficeToken } from '../../src/wire/federation-formats.ts'
import { federationOf } from '../../src/federation/service.ts'
import { startOffice } from './_helpers.ts'

async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p
    return 'ok'
  } catch (e) {
    if (e instanceof MusterError) return e.code
    throw e
  }
}

describe.each(ENGINES)('on %s', (engine) => {
  onEngine(engine)

  describe('office tokens on the controller', () => {
    test('mint shows the token once, keeps only its keyed digest, and the cluster key only sealed in the store', async () => {
      await using c = await startPlatform()
      const { officeId, token } = await c.client.federation.mint({ officeId: 'office-a', label: 'Office A', note: 'rack 4' })
      expect(officeId).toBe('office-a')
      const t = parseOfficeToken(token)
      const key = await federationOf(c.platform).controller.key()
      expect(Buffer.from(t.controllerKey).equals(Buffer.from(key.publicKey))).toBe(true)
      expect(existsSync(`${c.dataDir}/platform/cluster-signing-key`)).toBe(false)
      const db = c.platform.store
      const dump = JSON.stringify(await db.all('SELECT * FROM federation_tokens')) + JSON.stringify(await db.all('SELECT * FROM federation_offices'))
      const sealed = (await db.get<{ sealed: Uint8Array }>("SELECT sealed FROM secrets WHERE name = 'cluster-signing-key'"))!
      expect(Buffer.from(sealed.sealed).includes(Buffer.from(key.privateKey))).toBe(false)
      expect(Buffer.from(sealed.sealed).toString('latin1')).not.toContain(Buffer.from(key.privateKey).toString('base64url'))
      expect(dump).not.toContain(t.secret)
      // Neither the secret's plain SHA-256 (a row anyone who writes the store could make) but its digest keyed under master.key.
      expect(dump).not.toContain(new Bun.CryptoHasher('sha256').update(t.secret).digest('hex'))
      expect(dump).toContain(tokenDigester(c.platform.masterKey)(t.secret))
      const listed = await c.client.federation.tokens()
      expect(listed.tokens).toEqual([{ officeId: 'office-a', label: 'Office A', status: 'active', createdAt: expect.any(String), lastSeenAt: null }])
      expect(JSON.stringify(listed)).not.toContain(t.secret)
    })

    test('minting again refuses unless rotate; rotate stops the old token at once', async () => {
      using d = tmpDir()
      await using c = await startPlatform()
      const first = await c.client.federation.mint({ officeId: 'office-a' })
      expect(await code(c.client.federation.mint({ officeId: 'office-a' }))).toBe('office-exists')
      await using o = await startOffice(c.url, first.token, { dataDir: d.path })
      await waitFor(() => federationOf(o.platform).link?.state === 'connected', { what: 'office connected' })
      const second = await c.client.federation.mint({ officeId: 'office-a', rotate: true })
      expect(second.token).not.toBe(first.token)
      await waitFor(() => federationOf(o.platform).link?.state === 'refused', { what: 'old token refused' })
    })

    test('revoke refuses that office with federation-token-revoked, keeps the record, leaves others alone', async () => {
      using da = tmpDir()
      using db = tmpDir()
      await using c = await startPlatform()
      const a = await c.client.federation.mint({ officeId: 'office-a' })
      const b = await c.client.federation.mint({ officeId: 'office-b' })
      await using oa = await startOffice(c.url, a.token, { dataDir: da.path })
      await using ob = await startOffice(c.url, b.token, { dataDir: db.path })
      await waitFor(async () => (await c.client.federation.offices()).offices.every((o) => o.fresh), { what: 'both fresh' })
      await c.client.federation.revoke('office-a')
      await waitFor(() => federationOf(oa.platform).link?.state === 'revoked', { what: 'office-a revoked' })
      const tokens = (await c.client.federation.tokens()).tokens
      expect(tokens.map((t) => [t.officeId, t.status])).toEqual([['office-a', 'revoked'], ['office-b', 'active']])
      const lastB = federationOf(ob.platform).link!.lastContactAt!
      await waitFor(() => federationOf(ob.platform).link!.lastContactAt! > lastB, { what: 'office-b keeps heartbeating' })
      expect(federationOf(ob.platform).link?.state).toBe('connected')
      const offices = (await c.client.federation.offices()).offices
      expect(offices.find((o) => o.officeId === 'office-a')).toMatchObject({ status: 'revoked', fresh: false })
      expect(await code(c.client.federation.vouch('office-a'))).toBe('federation-token-revoked')
    })

    test('a configured office id that differs from the token is refused with office-mismatch naming both', async () => {
      using d = tmpDir()
      await using c = await startPlatform()
      const a = await c.client.federation.mint({ officeId: 'office-a' })
      const res = await fetch(`${c.url}/api/v1/federation/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ token: a.token, officeId: 'office-z', advertiseUrl: 'http://127.0.0.1:1', nonce: 'n'.repeat(43) }),
      })
      expect(res.status).toBe(403)
      const body = (await res.json()) as { error: { code: string; message: string } }
      expect(body.error.code).toBe('office-mismatch')
      expect(body.error.message).toContain("'office-z'")
      expect(body.error.message).toContain("'office-a'")
      await using o = await startOffice(c.url, a.token, { dataDir: d.path, env: { MUSTER_OFFICE_ID: 'office-z' } })
      await waitFor(() => federationOf(o.platform).link?.state === 'refused', { what: 'registration refused' })
      expect((await c.client.federation.offices()).offices[0]).toMatchObject({ officeId: 'office-a', lastSeenAt: null, fresh: false })
    })

    test('a wrong secret and an unknown office get the same refusal', async () => {
      await using c = await startPlatform()
      const a = parseOfficeToken((await c.client.federation.mint({ officeId: 'office-a' })).token)
      const key = Buffer.from(a.controllerKey).toString('base64url')
      const register = (officeId: string, secret: string) =>
        fetch(`${c.url}/api/v1/federation/register`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ token: `mof1:${officeId}:${key}:${secret}`, officeId, advertiseUrl: 'http://127.0.0.1:1', nonce: 'n'.repeat(43) }),
        }).then(async (r) => [r.status, await r.text()])
      const wrong = await register('office-a', 'x'.repeat(43))
      const unknown = await register('office-q', a.secret)
      expect(wrong).toEqual([403, JSON.stringify({ error: { code: 'federation-refused', message: 'Registration refused.' } })])
      expect(unknown).toEqual(wrong)
    })

    test('operators without federation permissions are refused; vouch needs an account', async () => {
      await using c = await startPlatform()
      const viewer = c.clientWith((await c.platform.auth.mintApiToken({ name: 'v', role: 'viewer' })).token)
      expect(await code(viewer.federation.mint({ officeId: 'office-a' }))).toBe('forbidden')
      expect(await code(c.clientWith().federation.tokens())).toBe('unauthorized')
      expect(await code(c.client.federation.vouch('office-a'))).toBe('not-a-controller')
      await c.client.federation.mint({ officeId: 'office-a' })
      expect(await code(c.client.federation.vouch('office-a'))).toBe('vouch-identity-invalid')
      expect(await code(c.client.federation.vouch('office-q'))).toBe('not-found')
    })
  })
})
