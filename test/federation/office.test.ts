import { describe, expect, test } from 'bun:test'
import { existsSync, statSync } from 'node:fs'
import { ENGINES } from '../helpers/postgres.ts'
import { onEngine, startPlatform } from '../helpers/platform.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'
import { MusterError } from '../../src/errors.ts'
import { breakGlass, detach } from '../../src/federation/host.ts'
import { federationOf } from '../../src/federation/service.ts'
import { insertAccount } from '../../src/store/accounts.ts'
import { accountClient, initialPassword, login, startOffice, vouchedClient, openVouchLink } from './_helpers.ts'

async function refusal(p: Promise<unknown>): Promise<MusterError | 'ok'> {
  try {
    await p
    return 'ok'
  } catch (e) {
    if (e instanceof MusterError) return e
    throw e
  }
}

describe.each(ENGINES)('on %s', (engine) => {
  onEngine(engine)

  describe('joining', () => {
    test('the token is written 0600 on first start and read from there on the next, without the variable', async () => {
      using d = tmpDir()
      await using c = await startPlatform()
      const { token } = await c.client.federation.mint({ officeId: 'office-a' })
      const o = await startOffice(c.url, token, { dataDir: d.path })
      await waitFor(() => federationOf(o.platform).link?.state === 'connected', { what: 'connected' })
      const file = `${d.path}/platform/office-join-token`
      expect(statSync(file).mode & 0o777).toBe(0o600)
      expect((await Bun.file(file).text()).trim()).toBe(token)
      await o.close()
      await using again = await startOffice(undefined, undefined, { dataDir: d.path })
      expect(federationOf(again.platform).link?.config.controllerUrl).toBe(c.url)
      await waitFor(() => federationOf(again.platform).link?.state === 'connected', { what: 'reconnected from the stored token' })
    })

    test('refuses to start when the variable and the stored token disagree, naming both offices', async () => {
      using d = tmpDir()
      await using c = await startPlatform()
      const a = await c.client.federation.mint({ officeId: 'office-a' })
      const b = await c.client.federation.mint({ officeId: 'office-b' })
      await (await startOffice(c.url, a.token, { dataDir: d.path })).close()
      const err = await refusal(startOffice(c.url, b.token, { dataDir: d.path }))
      expect(err).toBeInstanceOf(MusterError)
      expect((err as MusterError).code).toBe('office-mismatch')
      expect((err as MusterError).message).toContain("'office-a'")
      expect((err as MusterError).message).toContain("'office-b'")
      expect((await Bun.file(`${d.path}/platform/office-join-token`).text()).trim()).toBe(a.token)
    })

    test('refuses to start on a malformed token, naming the expected format', async () => {
      using d = tmpDir()
      const err = await refusal(startOffice('http://127.0.0.1:1', 'mof1:office-a:nope', { dataDir: d.path }))
      expect((err as MusterError).message).toContain('mof1:<office_id>:<controller_verify_key>:<secret>')
      expect(existsSync(`${d.path}/platform/office-join-token`)).toBe(false)
    })
  })

  describe('the local door', () => {
    test('while joined, every password login gets the same 403, even started as a plain Platform; break-glass re-opens it', async () => {
      using d = tmpDir()
      await using c = await startPlatform()
      const { token } = await c.client.federation.mint({ officeId: 'office-a' })
      const o = await startOffice(c.url, token, { dataDir: d.path })
      const pw = initialPassword(d.path)
      const answers = await Promise.all(
        [['superadmin', pw], ['superadmin', 'wrong-password'], ['nobody-here', 'x']].map(async ([id, p]) => {
          const r = await login(o.url, id!, p!)
          return [r.status, await r.text()]
        }),
      )
      // an empty or unparseable body gets the very same answer: the door is checked before the credential is read
      for (const raw of ['{}', '{"identifier":', 'identifier=&password=']) {
        const r = await fetch(`${o.url}/login`, { method: 'POST', headers: { 'content-type': raw.startsWith('{') ? 'application/json' : 'application/x-www-form-urlencoded' }, body: raw })
        answers.push([r.status, await r.text()])
      }
      expect(answers[0]![0]).toBe(403)
      expect(new Set(answers.map((a) => JSON.stringify(a))).size).toBe(1)
      const body = JSON.parse(answers[0]![1] as string) as { error: { code: string; message: string } }
      expect(body.error.code).toBe('local-login-disabled')
      expect(body.error.message).toContain("office 'office-a'")
      expect(body.error.message).toContain('muster admin break-glass')
      expect(body.error.message).toContain('muster admin detach')
      // a local token is suspended while the door is closed (item 5): the same words, as 401
      const suspended = (await refusal(o.client.federation.localAuthority())) as MusterError
      expect([suspended.code, suspended.detail?.status, suspended.message]).toEqual(['unauthorized', 401, body.error.message])
      expect(await (await vouchedClient(c, o)).federation.localAuthority()).toMatchObject({ joined: true, officeId: 'office-a', localLoginAllowed: false, breakGlass: null })
      const busy = await refusal(breakGlass(d.path))
      expect((busy as MusterError).code).toBe('already-running')
      await o.close()
      // Started with no federation variables at all: the file still says joined.
      await using plain = await startPlatform({ dataDir: d.path, keepDir: true })
      expect((await login(plain.url, 'superadmin', pw)).status).toBe(403)
      await plain.close()
      const r = await breakGlass(d.path, 'superadmin')
      const password = r.password!
      expect(password).toMatch(/^[A-Za-z0-9_-]{43}$/)
      expect(r).toMatchObject({ localLoginAllowed: true, recorded: true, account: 'superadmin' })
      await using back = await startOffice(undefined, undefined, { dataDir: d.path })
      expect((await login(back.url, 'superadmin', pw)).status).toBe(401)
      expect((await login(back.url, 'superadmin', password)).status).toBe(200)
      const la = await back.client.federation.localAuthority()
      expect(la).toMatchObject({ joined: true, localLoginAllowed: true, breakGlass: { account: 'superadmin' } })
    })

    test('break-glass is scoped to the token: detach and re-join with a rotated token closes the door again', async () => {
      using d = tmpDir()
      await using c = await startPlatform()
      const first = await c.client.federation.mint({ officeId: 'office-a' })
      await (await startOffice(c.url, first.token, { dataDir: d.path })).close()
      await breakGlass(d.path)
      const second = await c.client.federation.mint({ officeId: 'office-a', rotate: true })
      const left = await detach(d.path)
      expect(left).toEqual({ detached: true, officeId: 'office-a', localLoginAllowed: true })
      expect(existsSync(`${d.path}/platform/office-join-token`)).toBe(false)
      await using o = await startOffice(c.url, second.token, { dataDir: d.path })
      expect((await login(o.url, 'superadmin', initialPassword(d.path))).status).toBe(403)
      expect(await (await vouchedClient(c, o)).federation.localAuthority()).toMatchObject({ joined: true, localLoginAllowed: false, breakGlass: null, detachedAt: expect.any(String) })
    })

    test('detach keeps accounts and placed projects, opens the door, and refuses when not joined or while serving', async () => {
      using d = tmpDir()
      await using c = await startPlatform()
      const { token } = await c.client.federation.mint({ officeId: 'office-a' })
      const o = await startOffice(c.url, token, { dataDir: d.path })
      await waitFor(() => federationOf(o.platform).link?.state === 'connected', { what: 'connected' })
      await c.client.federation.place('office-a', { name: 'web', command: ['sleep', '1000'], replicas: 2 })
      expect((await refusal(Promise.resolve().then(() => detach(d.path)))) as MusterError).toHaveProperty('code', 'already-running')
      await o.close()
      await detach(d.path)
      expect((await refusal(Promise.resolve().then(() => detach(d.path)))) as MusterError).toHaveProperty('code', 'not-configured')
      await using after = await startPlatform({ dataDir: d.path, keepDir: true })
      expect((await login(after.url, 'superadmin', initialPassword(d.path))).status).toBe(200)
      expect((await after.client.federation.placedProjects()).projects.map((p) => p.name)).toEqual(['web'])
      expect(federationOf(after.platform).link).toBeUndefined()
    })
  })

  describe('vouch redemption', () => {
    test('opens one normal session; replay, another office and a non-office are refused; writes are logged', async () => {
      using da = tmpDir()
      using db = tmpDir()
      await using c = await startPlatform()
      const a = await c.client.federation.mint({ officeId: 'office-a' })
      const b = await c.client.federation.mint({ officeId: 'office-b' })
      await using oa = await startOffice(c.url, a.token, { dataDir: da.path })
      await using ob = await startOffice(c.url, b.token, { dataDir: db.path })
      await using plain = await startPlatform()
      await waitFor(async () => (await c.client.federation.offices()).offices.every((o) => o.advertiseUrl), { what: 'registered' })
      const me = await accountClient(c)
      const v = await me.federation.vouch('office-a')
      expect(v.redeemUrl).toBe(`${oa.url}/office/vouch?v=${encodeURIComponent(v.vouch)}`)
      expect(Date.parse(v.expiresAt) - Date.now()).toBeGreaterThan(110_000)
      expect(((await refusal(ob.clientWith().federation.redeemVouch(v.vouch))) as MusterError).code).toBe('vouch-office-mismatch')
      expect(((await refusal(plain.clientWith().federation.redeemVouch(v.vouch))) as MusterError).code).toBe('vouch-not-an-office')
      const res = await openVouchLink(v.redeemUrl!)
      expect(res.status).toBe(303)
      expect(res.headers.get('location')).toBe('/')
      const cookie = res.headers.get('set-cookie')!.split(';')[0]!
      const who = await fetch(`${oa.url}/api/v1/whoami`, { headers: { cookie } })
      expect(await who.json()).toMatchObject({ account: 'superadmin', role: 'superadmin', kind: 'session' })
      expect(((await refusal(oa.clientWith().federation.redeemVouch(v.vouch))) as MusterError).code).toBe('vouch-already-redeemed')
      // An identity the office never had: created, no usable password, logged; the existing one was linked.
      await insertAccount(c.platform.store, { name: 'alice', role: 'operator', passwordHash: null, now: Date.now() })
      const { token: aliceToken } = await c.platform.auth.mintApiToken({ name: 'alice', role: 'operator', account: 'alice' })
      const alice = await c.clientWith(aliceToken).federation.vouch('office-a')
      expect(await oa.clientWith().federation.redeemVouch(alice.vouch)).toEqual({ ok: true, account: 'alice', created: true, role: 'operator' })
      const writes = (await (await vouchedClient(c, oa)).federation.identityWrites()).writes
      expect(writes.map((w) => [w.owner, w.action, w.role])).toEqual([['alice', 'created', 'operator'], ['superadmin', 'linked', 'superadmin']])
      await oa.close()
      const refused = await refusal(breakGlass(da.path, 'alice'))
      expect((refused as MusterError).code).toBe('conflict')
    })

    test('a vouch expires after 120 s and a rotated token invalidates an unspent one', async () => {
      using d = tmpDir()
      await using c = await startPlatform()
      const a = await c.client.federation.mint({ officeId: 'office-a' })
      await using o = await startOffice(c.url, a.token, { dataDir: d.path })
      const me = await accountClient(c)
      const v1 = await me.federation.vouch('office-a')
      o.advance(121_000)
      expect(((await refusal(o.clientWith().federation.redeemVouch(v1.vouch))) as MusterError).code).toBe('vouch-expired')
      o.advance(-121_000)
      const v2 = await me.federation.vouch('office-a')
      await c.client.federation.mint({ officeId: 'office-a', rotate: true })
      const v3 = await me.federation.vouch('office-a')
      // The office still holds the old token: the old vouch verifies there, the new one does not.
      expect(((await refusal(o.clientWith().federation.redeemVouch(v3.vouch))) as MusterError).code).toBe('vouch-invalid')
      expect(await o.clientWith().federation.redeemVouch(v2.vouch)).toMatchObject({ ok: true })
    })
  })
})
