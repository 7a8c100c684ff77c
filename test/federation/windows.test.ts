// Federation at the edges of its windows: controller calls within
// ±120 s and their nonces kept for as long as a replay could land inside that
// window; vouches whose nonce is kept to the last millisecond of their life,
// and whose expiry no controller clock may push past 120 s plus 300 s of skew.
// A real controller and office, each on a clock the test holds still.
import { describe, expect, test } from 'bun:test'
import { b64url, randomBytes } from '../../src/crypto/tokens.ts'
import type { MusterError } from '../../src/errors.ts'
import { CALL_WINDOW_MS } from '../../src/federation/calls.ts'
import { DOMAINS, VOUCH_TTL_SECONDS } from '../../src/wire/federation-formats.ts'
import { signProof } from '../../src/federation/proofs.ts'
import { federationOf } from '../../src/federation/service.ts'
import { startPlatform, type TestPlatform } from '../helpers/platform.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'
import { accountClient, startOffice } from './_helpers.ts'

const spec = { name: 'web', command: ['sleep', '1000'], env: {}, replicas: 1, cpu: 100, memory: 32 }

/** A controller and a joined office-a, each on its own held clock (whole seconds to start). */
async function pair(d: string) {
  const start = Math.floor(Date.now() / 1000) * 1000
  const cc = { t: start }
  const oc = { t: start }
  const c = await startPlatform({ clock: () => cc.t })
  const { token } = await c.client.federation.mint({ officeId: 'office-a' })
  const o = await startOffice(c.url, token, { dataDir: d, clock: () => oc.t })
  await waitFor(() => federationOf(o.platform).link?.state === 'connected', { what: 'connected' })
  return {
    c,
    o,
    cc,
    oc,
    async [Symbol.asyncDispose]() {
      await o.close()
      await c.close()
    },
  }
}

/** A place call signed by the controller's key, issued at `issuedAt`; send it again to replay it. */
async function signedCall(c: TestPlatform, issuedAt: number) {
  const target = await federationOf(c.platform).controller.callTarget('office-a')
  const call = { call: 'place', officeId: 'office-a', nonce: b64url(randomBytes(32)), issuedAt, payload: { ...spec, name: `web-${issuedAt % 100_000}` } }
  const body = JSON.stringify({ ...call, proof: signProof(DOMAINS.call, target.key, { ...call, tokenFingerprint: target.fingerprint }) })
  return async (url: string) => (await fetch(`${url}/api/office/calls`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })).status
}

const code = (p: Promise<unknown>) => p.then(() => 'redeemed', (e: MusterError) => e.code)

describe('federation: windows', () => {
  test('a controller call is accepted issued exactly 120 s before or after the office\'s time, refused 1 ms further', async () => {
    using d = tmpDir()
    await using f = await pair(d.path)
    const now = f.oc.t
    const seen: Record<string, number> = {}
    for (const [what, at] of [
      ['120 s ago', now - CALL_WINDOW_MS],
      ['120 s + 1 ms ago', now - CALL_WINDOW_MS - 1],
      ['in 120 s', now + CALL_WINDOW_MS],
      ['in 120 s + 1 ms', now + CALL_WINDOW_MS + 1],
    ] as const) {
      seen[what] = await (await signedCall(f.c, at))(f.o.url)
    }
    expect(seen).toEqual({ '120 s ago': 200, '120 s + 1 ms ago': 403, 'in 120 s': 200, 'in 120 s + 1 ms': 403 })
  })

  test("a call's nonce outlives its window: replayed at the window's last millisecond it is refused as a replay", async () => {
    using d = tmpDir()
    await using f = await pair(d.path)
    const issued = f.oc.t
    const send = await signedCall(f.c, issued)
    expect(await send(f.o.url)).toBe(200)
    // The office's clock at the last moment the call's time is inside the window; another call spends (and prunes) first.
    f.oc.t = issued + CALL_WINDOW_MS
    expect(await (await signedCall(f.c, f.oc.t))(f.o.url)).toBe(200)
    expect(await send(f.o.url)).toBe(403)
    // A call issued in the office's future: the same, at the far edge of its window.
    const ahead = f.oc.t + CALL_WINDOW_MS
    const early = await signedCall(f.c, ahead)
    expect(await early(f.o.url)).toBe(200)
    f.oc.t = ahead + CALL_WINDOW_MS
    expect(await (await signedCall(f.c, f.oc.t))(f.o.url)).toBe(200)
    expect(await early(f.o.url)).toBe(403)
  })

  test("a redeemed vouch's nonce is kept to the last millisecond of the vouch's life; at its end the vouch is expired", async () => {
    using d = tmpDir()
    await using f = await pair(d.path)
    const me = await accountClient(f.c)
    const v = await me.federation.vouch('office-a')
    const end = Date.parse(v.expiresAt)
    expect(end).toBe(f.cc.t + VOUCH_TTL_SECONDS * 1000)
    const redeem = (vouch: string) => code(f.o.clientWith().federation.redeemVouch(vouch))
    expect(await redeem(v.vouch)).toBe('redeemed')
    f.oc.t = end - 1
    // another redemption first, so spent nonces past their time are pruned
    expect(await redeem((await me.federation.vouch('office-a')).vouch)).toBe('redeemed')
    expect(await redeem(v.vouch)).toBe('vouch-already-redeemed')
    const unspent = await me.federation.vouch('office-a')
    f.oc.t = end
    expect(await redeem(unspent.vouch)).toBe('vouch-expired')
  })

  test("a controller clock 300 s ahead still vouches; 301 s ahead its vouch's expiry is beyond what any vouch may have, and refused", async () => {
    using d = tmpDir()
    await using f = await pair(d.path)
    const me = await accountClient(f.c)
    const at = (ahead: number) => {
      f.cc.t = f.oc.t + ahead * 1000
    }
    at(300)
    const fine = await me.federation.vouch('office-a')
    at(301)
    const far = await me.federation.vouch('office-a')
    at(3600)
    const hour = await me.federation.vouch('office-a')
    const redeem = (vouch: string) => code(f.o.clientWith().federation.redeemVouch(vouch))
    expect({ fine: await redeem(fine.vouch), far: await redeem(far.vouch), hour: await redeem(hour.vouch) }).toEqual({ fine: 'redeemed', far: 'vouch-invalid', hour: 'vouch-invalid' })
  })

  test('a redeemed vouch with any one signed field edited is refused at the office: identity, role, expiry, nonce; one minted under another token too', async () => {
    using d = tmpDir()
    await using f = await pair(d.path)
    const me = await accountClient(f.c)
    const v = await me.federation.vouch('office-a')
    const redeem = (vouch: string) => code(f.o.clientWith().federation.redeemVouch(vouch))
    expect(await redeem(v.vouch)).toBe('redeemed')
    const parts = v.vouch.split(':')
    const edit = (i: number, value: string) => parts.map((x, j) => (j === i ? value : x)).join(':')
    expect({
      identity: await redeem(edit(2, 'someone-else')),
      role: await redeem(edit(3, 'viewer')),
      expiry: await redeem(edit(4, String(Number(parts[4]) + 1))),
      // a new nonce on a spent vouch would redeem it a second time
      nonce: await redeem(edit(5, b64url(randomBytes(16)))),
    }).toEqual({ identity: 'vouch-invalid', role: 'vouch-invalid', expiry: 'vouch-invalid', nonce: 'vouch-invalid' })
    // minted under a token this office no longer holds (rotated on the controller, not yet re-joined)
    await f.c.client.federation.mint({ officeId: 'office-a', rotate: true })
    expect(await redeem((await me.federation.vouch('office-a')).vouch)).toBe('vouch-invalid')
  })
})
