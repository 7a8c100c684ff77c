// Federation at its edges, through real controller and office
// Platforms on loopback, each with a clock the test sets: a controller call
// replayed at the very end of its window, a vouch from a controller whose
// clock is ahead or behind (on both sides of each limit), an office stopping
// while its controller does not answer, and MUSTER_JOIN_TOKEN naming a
// different token of the same office.
import { describe, expect, test } from 'bun:test'
import { createServer, type Socket } from 'node:net'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { b64url, randomBytes } from '../../src/crypto/tokens.ts'
import { MusterError } from '../../src/errors.ts'
import { CALL_WINDOW_MS } from '../../src/federation/calls.ts'
import { DOMAINS, VOUCH_TTL_SECONDS } from '../../src/wire/federation-formats.ts'
import { signProof } from '../../src/federation/proofs.ts'
import { federationOf } from '../../src/federation/service.ts'
import { startPlatform, type TestPlatform } from '../helpers/platform.ts'
import { waitFor } from '../helpers/tmp.ts'
import { accountClient, FAST_HEARTBEAT, freePort, withEnv } from './_helpers.ts'

const MAX_SKEW_SECONDS = 300 // src/federation/vouch.ts

/** An office Platform on `dataDir` whose clock is `clock`, joined with `token` (or from its stored membership). */
async function office(controllerUrl: string, token: string | undefined, dataDir: string, clock: () => number): Promise<TestPlatform> {
  const port = await freePort()
  return withEnv(
    { MUSTER_CONTROLLER_URL: controllerUrl, MUSTER_ADVERTISE_URL: `http://127.0.0.1:${port}`, MUSTER_JOIN_TOKEN: token, MUSTER_FEDERATION_HEARTBEAT_SECONDS: FAST_HEARTBEAT },
    () => startPlatform({ dataDir, port, keepDir: true, clock }),
  )
}

async function joinedPair() {
  const t0 = Math.floor(Date.now() / 1000) * 1000 // whole seconds: vouch expiries are in seconds
  const clocks = { controller: t0, office: t0 }
  const c = await startPlatform({ clock: () => clocks.controller })
  const { token } = await c.client.federation.mint({ officeId: 'office-a' })
  const dir = mkdtempSync(join(tmpdir(), 'muster-office-'))
  const o = await office(c.url, token, dir, () => clocks.office)
  await waitFor(() => federationOf(o.platform).link?.state === 'connected', { what: 'office connected' })
  return {
    c,
    o,
    clocks,
    t0,
    token,
    dir,
    async [Symbol.asyncDispose]() {
      await o.close().catch(() => {})
      await c.close()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

describe('federation edges', () => {
  test('a controller call: accepted up to exactly 120 s either side, refused a millisecond past; a replay is refused even at the very end of its window', async () => {
    await using f = await joinedPair()
    const target = await federationOf(f.c.platform).controller.callTarget('office-a')
    const spec = { name: 'web', command: ['sleep', '1000'], replicas: 1 }
    const signed = (issuedAt: number) => {
      const call = { call: 'place', officeId: 'office-a', nonce: b64url(randomBytes(32)), issuedAt, payload: spec }
      return JSON.stringify({ ...call, proof: signProof(DOMAINS.call, target.key, { ...call, tokenFingerprint: target.fingerprint }) })
    }
    const send = async (body: string) => (await fetch(`${f.o.url}/api/office/calls`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })).status
    const T = f.t0
    // 1. the window, on both sides, at the office's clock
    f.clocks.office = T + CALL_WINDOW_MS
    expect(await send(signed(T))).toBe(200) // issued exactly 120 s ago
    expect(await send(signed(T - 1))).toBe(403)
    f.clocks.office = T - CALL_WINDOW_MS
    expect(await send(signed(T))).toBe(200) // issued exactly 120 s ahead
    expect(await send(signed(T + 1))).toBe(403)
    // 2. a replay, at every moment the call itself would still verify
    const call = signed(T)
    f.clocks.office = T
    expect(await send(call)).toBe(200)
    for (const at of [T + 1, T + CALL_WINDOW_MS - 1, T + CALL_WINDOW_MS, T - CALL_WINDOW_MS]) {
      f.clocks.office = at
      expect(`${at - T}: ${await send(call)}`).toBe(`${at - T}: 403`)
    }
  })

  test('a vouch from a controller clock ahead by up to 5 minutes is accepted, a second more is refused; one from a clock 120 s behind has expired', async () => {
    await using f = await joinedPair()
    const me = await accountClient(f.c)
    const redeem = async (controllerAhead: number) => {
      f.clocks.controller = f.t0 + controllerAhead
      const { vouch } = await me.federation.vouch('office-a')
      const res = await fetch(`${f.o.url}/api/office/vouch`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ vouch }) })
      return res.status === 200 ? 'accepted' : ((await res.json()) as { error: { code: string } }).error.code
    }
    f.clocks.office = f.t0
    expect(await redeem(MAX_SKEW_SECONDS * 1000)).toBe('accepted')
    expect(await redeem(MAX_SKEW_SECONDS * 1000 + 1000)).toBe('vouch-invalid')
    expect(await redeem(24 * 3600_000)).toBe('vouch-invalid')
    expect(await redeem(-(VOUCH_TTL_SECONDS - 1) * 1000)).toBe('accepted')
    expect(await redeem(-VOUCH_TTL_SECONDS * 1000)).toBe('vouch-expired')
  })

  test('an office stops at once while its controller holds a request unanswered', async () => {
    // A controller that accepts connections and never answers.
    const held: Socket[] = []
    const silent = createServer((s) => {
      held.push(s)
      s.on('error', () => {})
    })
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    const port = (silent.address() as { port: number }).port
    const dir = mkdtempSync(join(tmpdir(), 'muster-office-'))
    try {
      const c = await startPlatform()
      const { token } = await c.client.federation.mint({ officeId: 'office-a' })
      await c.close()
      const o = await office(`http://127.0.0.1:${port}`, token, dir, Date.now)
      await waitFor(() => held.length > 0, { what: 'the registration sent to the silent controller' })
      const t = Date.now()
      await o.close()
      // Before the request's own 10 s timeout could have ended it.
      expect(Date.now() - t).toBeLessThan(5_000)
      await waitFor(() => held.every((s) => s.destroyed || s.readableEnded), { what: 'the request abandoned', timeoutMs: 2_000 })
    } finally {
      for (const s of held) s.destroy()
      silent.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test('MUSTER_JOIN_TOKEN naming another token of the same office refuses the start; the stored one keeps working', async () => {
    await using f = await joinedPair()
    await f.o.close()
    const rotated = await f.c.client.federation.mint({ officeId: 'office-a', rotate: true })
    expect(rotated.token).not.toBe(f.token)
    const err = await office(f.c.url, rotated.token, f.dir, Date.now).then(
      async (p) => (await p.close(), 'started'),
      (e: MusterError) => e,
    )
    expect(err).toBeInstanceOf(MusterError)
    expect((err as MusterError).code).toBe('office-mismatch')
    expect((err as MusterError).message).toContain('a different token for')
    // The same token as stored is no conflict.
    const again = await office(f.c.url, f.token, f.dir, Date.now)
    await again.close()
  })

  test('a revoked office gets no signed answer: registration and heartbeat are refused as revoked, at once', async () => {
    await using f = await joinedPair()
    const body = (nonce: string) => ({ token: f.token, officeId: 'office-a', advertiseUrl: f.o.url, nonce })
    const post = async (path: string) => {
      const res = await fetch(`${f.c.url}/api/v1/federation/${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body(b64url(randomBytes(32)))) })
      const answer = (await res.json()) as { proof?: string; error?: { code: string } }
      return `${res.status} ${answer.error?.code ?? (answer.proof ? 'signed' : 'unsigned')}`
    }
    // before: both answered and signed
    expect(await post('register')).toBe('200 signed')
    expect(await post('heartbeat')).toBe('200 signed')
    await f.c.client.federation.revoke('office-a')
    expect(await post('register')).toBe('403 federation-token-revoked')
    expect(await post('heartbeat')).toBe('403 federation-token-revoked')
  })
})
