// Through dist/muster: a viewer-role API token of the
// superadmin account minted a vouch; the office gave the session superadmin,
// which then minted a permanent API token there. Now (docs/security.md) the vouch
// needs server.federation.vouch and carries the voucher's role, the office
// grants no more, and a vouched session mints no token.
import { describe, expect, test } from 'bun:test'
import { runMuster, startMuster, startServe } from '../helpers/binary.ts'
import { freePort, openVouchLink } from '../federation/_helpers.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

describe('vouch privilege through dist/muster', () => {
  test('a viewer token cannot vouch; an operator vouch opens an operator session; no vouched session mints a token', { timeout: 90_000 }, async () => {
    using dir = tmpDir()
    const FAST = { MUSTER_FEDERATION_HEARTBEAT_SECONDS: '0.2' }
    const cDir = `${dir.path}/controller`
    await using controller = await startServe(cDir, [], FAST)
    const mint = async (role: string) => (JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', cDir, '--role', role, '--account', 'superadmin', '--name', role, '--json'])).stdout) as { token: string }).token
    const env = (token: string) => ({ MUSTER_URL: controller.url, MUSTER_TOKEN: token })
    const superadmin = await mint('superadmin')
    const { token } = JSON.parse((await runMuster(['federation', 'mint', 'office-a', '--json'], { env: env(superadmin) })).stdout) as { token: string }
    const port = await freePort()
    await using office = await startMuster(['serve', '--data-dir', `${dir.path}/office-a`, '--port', String(port)], {
      env: { ...FAST, MUSTER_CONTROLLER_URL: controller.url, MUSTER_ADVERTISE_URL: `http://127.0.0.1:${port}`, MUSTER_JOIN_TOKEN: token },
    })
    await office.waitForLog(/listening on/)
    await waitFor(async () => (JSON.parse((await runMuster(['federation', 'offices', '--json'], { env: env(superadmin) })).stdout) as { offices: { fresh: boolean }[] }).offices[0]?.fresh, { what: 'office-a fresh', timeoutMs: 15_000 })
    const at = (path: string, cookie: string, init: RequestInit = {}) => fetch(`http://127.0.0.1:${port}${path}`, { ...init, headers: { cookie, 'content-type': 'application/json', origin: `http://127.0.0.1:${port}` } })
    const redeem = async (token: string) => {
      const v = JSON.parse((await runMuster(['federation', 'vouch', 'office-a', '--json'], { env: env(token) })).stdout) as { redeemUrl: string; vouch: string }
      const res = await openVouchLink(v.redeemUrl)
      expect(res.status).toBe(303)
      return { vouch: v.vouch, cookie: res.headers.get('set-cookie')!.split(';')[0]! }
    }

    // 1. the viewer token of the superadmin account: no vouch at all
    const viewer = await runMuster(['federation', 'vouch', 'office-a'], { env: env(await mint('viewer')) })
    expect(viewer.code).toBe(1)
    expect(viewer.stderr).toContain('server.federation.vouch')
    expect(viewer.stdout).not.toContain('mfv')

    // 2. an operator token of the superadmin account: an operator session, though the office's superadmin account is superadmin
    const op = await redeem(await mint('operator'))
    expect(op.vouch).toMatch(/^mfv2:office-a:superadmin:operator:/)
    expect(await (await at('/api/v1/whoami', op.cookie)).json()).toMatchObject({ account: 'superadmin', role: 'operator', kind: 'session' })
    expect((await at('/api/v1/federation/join-tokens', op.cookie, { method: 'POST', body: '{"officeId":"x"}' })).status).toBe(403)

    // 3. no vouched session mints a token there, superadmin or not
    const su = await redeem(superadmin)
    expect(await (await at('/api/v1/whoami', su.cookie)).json()).toMatchObject({ role: 'superadmin' })
    for (const s of [op, su]) {
      const res = await at('/api/v1/api-tokens', s.cookie, { method: 'POST', body: '{}' })
      expect(res.status).toBe(403)
      expect(await res.text()).not.toContain('mat_')
    }
  })
})
