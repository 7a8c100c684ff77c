// Trust refresh (docs/nodes.md): follows a full key rotation with a moved clock, and
// a failed or hostile answer never replaces the keys the node has.
import { afterEach, describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { readAgentConfig } from '../../src/agent/files.ts'
import { joinPlatform } from '../../src/agent/join.ts'
import { signAgentRequest, verifyAgentRequest } from '../../src/signed/requests.ts'
import { refreshTrust } from '../../src/agent/trust.ts'
import { clearPinCache } from '../../src/crypto/pin.ts'
import { DataDir } from '../../src/datadir.ts'
import { generateSigningKey } from '../../src/crypto/ed25519.ts'
import { b64url } from '../../src/crypto/tokens.ts'
import { listenerTls, startListenerPlatform, type ListenerPlatform } from '../helpers/node-side.ts'
import { tmpDir } from '../helpers/tmp.ts'

afterEach(() => clearPinCache())
const DAY = 86_400_000

async function joined(p: ListenerPlatform, dir: string) {
  const { token } = await p.client.nodes.createEnrollment({ nodeId: 'w1' })
  const dataDir = new DataDir(`${dir}/node`)
  await joinPlatform({ dataDir: dataDir.root, platformUrl: p.enrollUrl, nodeId: 'w1', fingerprint: p.fingerprint, addresses: ['127.0.0.1'], port: 7399, readToken: async () => token, now: p.platform.now })
  return { dataDir, config: readAgentConfig(dataDir)! }
}

describe('trust refresh', () => {
  test('follows the schedule: the next key arrives months before it signs, then the old one goes when it expires', async () => {
    await using p = await startListenerPlatform()
    using dir = tmpDir()
    const { dataDir, config } = await joined(p, dir.path)
    const trustFile = () => JSON.parse(readFileSync(dataDir.path('worker/trust.json'), 'utf8')).keys.map((k: { kid: string }) => k.kid)
    const [k1] = trustFile()
    const tick = () => p.platform.fabric.trust.sync() // what the Platform's short tick does
    expect(await refreshTrust(dataDir, config, p.platform.now())).toMatchObject({ added: [], removed: [] })

    const request = { method: 'POST', path: '/v1/assignments', body: '{}', node: 'w1' }
    const signed = () => new Headers(signAgentRequest((d, m) => p.platform.fabric.trust.sign(d, m), request, p.platform.now()))
    const stale = JSON.parse(readFileSync(dataDir.path('worker/trust.json'), 'utf8')).keys

    p.advance(270 * DAY)
    await tick()
    expect(await refreshTrust(dataDir, config, p.platform.now())).toMatchObject({ added: [], removed: [] })

    p.advance(10 * DAY) // 85 days before k1's year ends: k2 is published, k1 still signs
    await tick()
    const second = await refreshTrust(dataDir, config, p.platform.now())
    expect(second.removed).toEqual([])
    expect(second.added).toHaveLength(1)
    const k2 = second.added[0]!
    expect(trustFile()).toEqual([k1, k2])
    const k2Key = second.keys.find((k) => k.kid === k2)!
    expect(Date.parse(k2Key.notBefore) - p.platform.now()).toBeGreaterThanOrEqual(60 * DAY)
    expect(verifyAgentRequest(second.keys, signed(), request, p.platform.now())).toEqual({ ok: true, kid: k1 })

    p.advance(86 * DAY) // k1's year is over: k2 signs, and every node that refreshed in the last 85 days has it
    await tick()
    expect(verifyAgentRequest(second.keys, signed(), request, p.platform.now())).toEqual({ ok: true, kid: k2 })
    // a node that never refreshed does not know the key its Platform now signs with
    expect(verifyAgentRequest(stale, signed(), request, p.platform.now())).toMatchObject({ ok: false, reason: 'unknown or expired key' })

    p.advance(365 * DAY) // k1 has expired (2 years); k3 was published in the meantime
    await tick()
    const third = await refreshTrust(dataDir, config, p.platform.now())
    expect(third.removed).toEqual([k1])
    expect(trustFile()).not.toContain(k1)
    expect(trustFile()).toContain(k2)
  })

  test('an unreachable Platform or a hostile answer leaves the old keys in place', async () => {
    await using p = await startListenerPlatform()
    using dir = tmpDir()
    const { dataDir, config } = await joined(p, dir.path)
    const before = readFileSync(dataDir.path('worker/trust.json'), 'utf8')
    const now = p.platform.now()
    const iso = (t: number) => new Date(t).toISOString()
    const key = (over: Record<string, unknown> = {}) => ({ kid: 'k', publicKey: b64url(generateSigningKey().publicKey), notBefore: iso(now - DAY), notAfter: iso(now + DAY), ...over })
    // The hostile server presents the Platform's own certificate, so the pin passes and only the answer is wrong.
    const { cert, key: tlsKey } = await listenerTls(p)
    const tls = { cert, key: tlsKey }
    let answer: () => Response = () => Response.json({})
    const hostile = Bun.serve({ hostname: '127.0.0.1', port: 0, tls, fetch: () => answer() })
    try {
      const cases: [string, () => Response][] = [
        ['no keys', () => Response.json({ trustKeys: [] })],
        ['no field', () => Response.json({ keys: [key()] })],
        ['only expired keys', () => Response.json({ trustKeys: [key({ notBefore: iso(now - 3 * DAY), notAfter: iso(now - DAY) })] })],
        ['only future keys', () => Response.json({ trustKeys: [key({ notBefore: iso(now + DAY), notAfter: iso(now + 3 * DAY) })] })],
        ['a short public key', () => Response.json({ trustKeys: [key({ publicKey: 'AAAA' })] })],
        ['a duplicated kid', () => Response.json({ trustKeys: [key(), key()] })],
        ['a bad date', () => Response.json({ trustKeys: [key({ notAfter: 'tomorrow' })] })],
        ['not JSON', () => new Response('<html>', { status: 200 })],
        ['a server error', () => new Response('oops', { status: 500 })],
        ['a redirect to the real Platform', () => new Response(null, { status: 302, headers: { location: `${p.enrollUrl}/api/v1/nodes/trust` } })],
      ]
      for (const [what, a] of cases) {
        answer = a
        const r = await refreshTrust(dataDir, { ...config, enrollmentUrl: `https://127.0.0.1:${hostile.port}` }, now).then(
          () => 'replaced',
          () => 'refused',
        )
        expect(`${what}: ${r}`).toBe(`${what}: refused`)
        expect(readFileSync(dataDir.path('worker/trust.json'), 'utf8')).toBe(before)
      }
    } finally {
      hostile.stop(true)
    }
    const down = await refreshTrust(dataDir, { ...config, enrollmentUrl: 'https://127.0.0.1:1' }, now).catch((e) => e)
    expect(down.code).toBe('platform-unreachable')
    expect(readFileSync(dataDir.path('worker/trust.json'), 'utf8')).toBe(before)
    expect(p.listener.forwarded).toBe(2) // the join's two (where the API is, the enrollment); the redirect was not followed
  })
})
