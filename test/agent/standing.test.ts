// What a node may learn about its own credential (docs/operations.md), and when the
// Agent gives up: POST /api/v1/nodes/self answers only a credential whose MAC
// verifies for the certificate presented; the Agent stops for good on a
// refusal the Platform confirms, never on an outage, a 5xx, a 429 or a
// Platform that cannot tell; its reconnect back-off is capped.
import { afterEach, describe, expect, test } from 'bun:test'
import { readFileSync, writeFileSync } from 'node:fs'
import { Agent } from '../../src/agent/agent.ts'
import { RECONNECT_CAP_MS, reconnectDelayMs } from '../../src/agent/backoff.ts'
import { joinPlatform } from '../../src/agent/join.ts'
import { clearPinCache } from '../../src/crypto/pin.ts'
import { certFingerprint } from '../../src/crypto/x509.ts'
import { freePort, startListenerPlatform, type ListenerPlatform } from '../helpers/node-side.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

afterEach(() => clearPinCache())

async function joined(p: ListenerPlatform, dir: string, name = 'w1') {
  const { token } = await p.client.nodes.createEnrollment({ nodeId: name })
  const dataDir = `${dir}/${name}`
  await joinPlatform({ dataDir, platformUrl: p.enrollUrl, nodeId: name, fingerprint: p.fingerprint, addresses: ['127.0.0.1'], port: await freePort(), readToken: async () => token })
  const credential = readFileSync(`${dataDir}/worker/node-credential`, 'utf8').trim()
  const certSha256 = certFingerprint(readFileSync(`${dataDir}/worker/agent.crt`, 'utf8')).slice('sha256:'.length)
  return { dataDir, credential, certSha256 }
}

const self = (p: ListenerPlatform, credential: string, certSha256: unknown) =>
  fetch(`${p.url}/api/v1/nodes/self`, { method: 'POST', headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' }, body: JSON.stringify({ certSha256 }) })

describe('POST /api/v1/nodes/self', () => {
  test('a node whose MAC verifies learns valid, revoked, rebound or removed; anyone else the generic refusal', async () => {
    await using p = await startListenerPlatform()
    using dir = tmpDir()
    const w1 = await joined(p, dir.path, 'w1')
    const w2 = await joined(p, dir.path, 'w2')
    expect(await (await self(p, w1.credential, w1.certSha256)).json()).toEqual({ nodeId: 'w1', credential: 'valid', state: 'enrolled', reason: 'no heartbeat yet' })

    // The attack: learn about w1 without its credential. A forged MAC, w2's credential with w1's name,
    // w1's credential with another certificate, or no credential: one generic 401, the heartbeat's words.
    const generic = { error: { code: 'unauthorized', message: 'Node credential not valid.' } }
    const forged = `${w1.credential.slice(0, -4)}AAAA`
    const renamed = w2.credential.replace('mnc_w2.', 'mnc_w1.')
    for (const [credential, cert] of [[forged, w1.certSha256], [renamed, w2.certSha256], [renamed, w1.certSha256], [w1.credential, w2.certSha256]] as const) {
      const res = await self(p, credential, cert)
      expect({ status: res.status, body: await res.json() }).toEqual({ status: 401, body: generic })
    }
    await p.client.nodes.revoke('w1')
    for (const credential of [forged, renamed]) expect((await self(p, credential, w1.certSha256)).status).toBe(401) // revoked or not, nothing to learn
    expect((await self(p, 'not-a-credential', w1.certSha256)).status).toBe(401)
    expect((await self(p, w1.credential, 'xyz')).status).toBe(400)

    expect(await (await self(p, w1.credential, w1.certSha256)).json()).toEqual({ nodeId: 'w1', credential: 'revoked' })
    await p.client.nodes.rebind('w1')
    expect(await (await self(p, w1.credential, w1.certSha256)).json()).toEqual({ nodeId: 'w1', credential: 'rebound' })
    await p.client.nodes.remove('w2', { force: true })
    expect(await (await self(p, w2.credential, w2.certSha256)).json()).toEqual({ nodeId: 'w2', credential: 'removed' })
  })

  test('a credential rotated away past its grace is superseded', async () => {
    await using p = await startListenerPlatform()
    using dir = tmpDir()
    const w1 = await joined(p, dir.path)
    await p.client.nodes.rotate('w1')
    expect(((await (await self(p, w1.credential, w1.certSha256)).json()) as { credential: string }).credential).toBe('valid') // the hour of grace
    p.advance(2 * 3600_000)
    expect(await (await self(p, w1.credential, w1.certSha256)).json()).toEqual({ nodeId: 'w1', credential: 'superseded' })
  })
})

describe('the Agent stops only when the Platform confirms a refusal', () => {
  /** A stand-in for the Platform API: answers heartbeats and /nodes/self as told. */
  function fakeApi(answers: { register: () => Response; self: () => Response }) {
    const hits = { register: 0, self: 0 }
    const server = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      fetch(req) {
        const path = new URL(req.url).pathname
        if (path === '/api/v1/nodes/register') return hits.register++, answers.register()
        if (path === '/api/v1/nodes/self') return hits.self++, answers.self()
        return Response.json({ error: { code: 'unauthorized', message: 'Node credential not valid.' } }, { status: 401 })
      },
    })
    return { url: `http://127.0.0.1:${server.port}`, hits, stop: () => server.stop(true) }
  }
  const refusal = (status: number, code: string) => () => Response.json({ error: { code, message: code } }, { status })

  const cases: [string, { register: () => Response; self: () => Response }, 'stops' | 'retries'][] = [
    ['503 on every heartbeat', { register: refusal(503, 'unavailable'), self: refusal(503, 'unavailable') }, 'retries'],
    ['429 on every heartbeat', { register: refusal(429, 'rate-limited'), self: refusal(429, 'rate-limited') }, 'retries'],
    ['401, and the Platform cannot say why (5xx)', { register: refusal(401, 'unauthorized'), self: refusal(503, 'unavailable') }, 'retries'],
    ['401, and a Platform too old to say (404)', { register: refusal(401, 'unauthorized'), self: refusal(404, 'not-found') }, 'retries'],
    ['401, and the Platform says the credential is valid', { register: refusal(401, 'unauthorized'), self: () => Response.json({ nodeId: 'w1', credential: 'valid' }) }, 'retries'],
    ['401, and the Platform says rebound', { register: refusal(401, 'unauthorized'), self: () => Response.json({ nodeId: 'w1', credential: 'rebound' }) }, 'stops'],
    ['401, and the Platform does not recognise the credential', { register: refusal(401, 'unauthorized'), self: refusal(401, 'unauthorized') }, 'stops'],
    ['403 node-revoked, even when the question cannot be asked', { register: refusal(403, 'node-revoked'), self: refusal(503, 'unavailable') }, 'stops'],
  ]
  for (const [what, answers, outcome] of cases) {
    test(`${what}: ${outcome}`, async () => {
      await using p = await startListenerPlatform()
      using dir = tmpDir()
      const w1 = await joined(p, dir.path)
      const api = fakeApi(answers)
      // Point the joined node's API at the stand-in (plain http on loopback, as a local Platform's), and its
      // listener at a closed port: a trust answer from the real Platform would move it back to the real API.
      const config = JSON.parse(readFileSync(`${w1.dataDir}/worker/agent.json`, 'utf8'))
      writeFileSync(`${w1.dataDir}/worker/agent.json`, JSON.stringify({ ...config, platformUrl: api.url, enrollmentUrl: `https://127.0.0.1:${await freePort()}` }))
      writeFileSync(`${w1.dataDir}/worker/platforms.json`, JSON.stringify({ platforms: [{ url: api.url }], current: api.url, updatedAt: new Date().toISOString() }))
      const agent = new Agent({ dataDir: w1.dataDir, host: '127.0.0.1', port: 0, heartbeatMs: 50, workloads: false })
      let line: string | undefined
      void agent.refusedForGood.then((l) => (line = l))
      await agent.start()
      try {
        if (outcome === 'stops') {
          await waitFor(() => line, { what: 'the Agent to give up' })
          expect(line).toContain('The way back')
          const beats = api.hits.register
          // Nothing is scheduled any more: no heartbeat follows (the timers are gone).
          expect((agent as unknown as { timers: Set<unknown> }).timers.size).toBe(0)
          expect(api.hits.register).toBe(beats)
        } else {
          await waitFor(() => api.hits.register >= 4, { what: 'four heartbeats', timeoutMs: 30_000 })
          expect(line).toBeUndefined()
        }
      } finally {
        await agent.stop()
        api.stop()
      }
    })
  }
})

describe('reconnect back-off', () => {
  test('doubles from min(interval, 1 s) and never waits longer than the cap, so a returning Platform is heard within 10 s', () => {
    expect(RECONNECT_CAP_MS).toBeLessThanOrEqual(8_000)
    for (let failures = 1; failures <= 1000; failures++) {
      const top = reconnectDelayMs(failures, 10_000, () => 1)
      expect(top).toBeLessThanOrEqual(RECONNECT_CAP_MS)
      expect(reconnectDelayMs(failures, 10_000, () => 0)).toBe(Math.round(top / 2))
    }
    expect([1, 2, 3, 4, 5, 50].map((f) => reconnectDelayMs(f, 10_000, () => 1))).toEqual([1000, 2000, 4000, 8000, 8000, 8000])
    expect([1, 2, 3].map((f) => reconnectDelayMs(f, 100, () => 1))).toEqual([100, 200, 400])
  })
})
