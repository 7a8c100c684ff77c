// What a node takes from the Platform's enroll and trust answers
// (docs/security.md): the CA pin (keeping every pin the Platform still stands behind), and
// an API URL that is https — or plain http only on this machine, or where the
// operator allowed it.
import { describe, expect, test } from 'bun:test'
import { applyAnchors, nextPin, nextPlatformUrl } from '../../src/agent/anchors.ts'
import type { AgentConfig } from '../../src/agent/files.ts'
import { generateCa } from '../../src/crypto/ca.ts'
import { spkiPin } from '../../src/crypto/ca.ts'

const pin = (c: string) => `sha256:${c.repeat(64)}`
const [legacy, ca, next] = [pin('a'), pin('b'), pin('c')]

describe('anchors from the Platform', () => {
  test('a node pinned to the old listener certificate takes the CA pin and keeps the old one while it is served', () => {
    expect(nextPin({ fingerprint: legacy }, { caFingerprint: ca, pins: [ca, legacy] })).toEqual({ fingerprint: ca, also: [legacy] })
    // once the old certificate is no longer served, its pin goes
    expect(nextPin({ fingerprint: ca, also: [legacy] }, { caFingerprint: ca, pins: [ca] })).toEqual({ fingerprint: ca })
    // a prepared replacement is accepted beside the CA, then becomes the CA
    expect(nextPin({ fingerprint: ca }, { caFingerprint: ca, pins: [ca, next] })).toEqual({ fingerprint: ca, also: [next] })
    expect(nextPin({ fingerprint: ca, also: [next] }, { caFingerprint: next, pins: [next] })).toEqual({ fingerprint: next })
  })

  test('an answer without a usable CA pin changes nothing; the system roots stay as they are', () => {
    for (const bad of [{}, { caFingerprint: 'sha256:xyz' }, { caFingerprint: 42, pins: [ca] }, { pins: [ca] }]) expect(nextPin({ fingerprint: legacy }, bad)).toEqual({ fingerprint: legacy })
    expect(nextPin({ system: true }, { caFingerprint: ca, pins: [ca] })).toEqual({ system: true })
    // junk among the pins is dropped, and there is a limit
    expect(nextPin({ fingerprint: legacy }, { caFingerprint: ca, pins: [ca, 'nope', 7, legacy] })).toEqual({ fingerprint: ca, also: [legacy] })
    const many = Array.from({ length: 20 }, (_, i) => `sha256:${i.toString(16).padStart(64, '0')}`)
    expect((nextPin({ fingerprint: legacy }, { caFingerprint: ca, pins: many }) as { also: string[] }).also).toHaveLength(7)
  })

  test('a CA file holding this Platform CA becomes its pin; a CA file of another CA stays', async () => {
    const platformCa = await generateCa()
    const other = await generateCa()
    const mine = spkiPin(platformCa.certPem)
    expect(nextPin({ caPem: platformCa.certPem }, { caFingerprint: mine, pins: [mine] })).toEqual({ fingerprint: mine })
    expect(nextPin({ caPem: other.certPem }, { caFingerprint: mine, pins: [mine] })).toEqual({ caPem: other.certPem })
  })

  test('the API URL moves to https anywhere, to plain http only on this machine or with the operator flag', () => {
    const cur = 'http://127.0.0.1:7380'
    expect(nextPlatformUrl(cur, { platformUrl: 'https://10.0.0.5:7380/' })).toBe('https://10.0.0.5:7380')
    expect(nextPlatformUrl(cur, { platformUrl: 'http://10.0.0.5:7380' })).toBe(cur)
    expect(nextPlatformUrl(cur, { platformUrl: 'http://10.0.0.5:7380', insecureNodeTraffic: true })).toBe('http://10.0.0.5:7380')
    expect(nextPlatformUrl(cur, { platformUrl: 'http://localhost:7390' })).toBe('http://localhost:7390')
    for (const bad of ['ftp://x', 'not a url', 'https://user:pw@10.0.0.5', 42]) expect(nextPlatformUrl(cur, { platformUrl: bad })).toBe(cur)
  })

  test('applyAnchors says what changed and leaves the rest of the configuration alone', () => {
    const config = { nodeId: 'w1', agentId: 'agent-w1', enrollmentUrl: 'https://10.0.0.5:7443', platformUrl: 'http://127.0.0.1:7380', pin: { fingerprint: legacy }, addresses: [], port: 7381, url: 'https://10.0.0.9:7381', joinedAt: '', joinedWith: '' } satisfies AgentConfig
    const same = applyAnchors(config, { caFingerprint: legacy, pins: [legacy], platformUrl: 'http://127.0.0.1:7380' })
    expect(same.changes).toEqual([])
    expect(same.config).toBe(config)
    const moved = applyAnchors(config, { caFingerprint: ca, pins: [ca, legacy], platformUrl: 'https://10.0.0.5:7380' })
    expect(moved.changes).toHaveLength(2)
    expect(moved.config).toEqual({ ...config, pin: { fingerprint: ca, also: [legacy] }, platformUrl: 'https://10.0.0.5:7380' })
  })
})
