// Two Platforms on one PostgreSQL share one Platform CA and one set of trust
// keys (docs/storage-ha.md), but each serves certificates for its own addresses; the
// trust-key schedule is applied once, by the holder of its lease.
import { describe, expect, test } from 'bun:test'
import { isIssuedBy } from '../../src/crypto/ca.ts'
import { certCovers } from '../../src/crypto/x509.ts'
import type { TestPlatform } from '../helpers/platform.ts'
import { waitFor } from '../helpers/tmp.ts'
import { startPair } from './pair.ts'

const DAY = 86_400_000
const kids = (p: TestPlatform) => p.platform.fabric.trust.published().map((k) => k.kid)

describe('two Platforms on one PostgreSQL', () => {
  test('one CA and one pin for both; each keeps the listener certificate it was issued for its own addresses', async () => {
    await using pair = await startPair()
    const listener = (name: string) => pair.another({ enrollmentPort: 0, enrollmentHost: '127.0.0.1', enrollmentAddresses: ['127.0.0.1', `${name}.example.test`] })
    const c = await listener('c')
    const d = await listener('d')
    expect(c.platform.pki.ca.pin).toBe(pair.a.platform.pki.ca.pin)
    expect(d.platform.pki.ca.pin).toBe(c.platform.pki.ca.pin)
    expect(c.platform.fabric.enrollment?.fingerprint).toBe(c.platform.pki.ca.pin)
    expect(d.platform.fabric.enrollment?.fingerprint).toBe(c.platform.pki.ca.pin)
    const before = { c: c.platform.listener!.certificate.certPem, d: d.platform.listener!.certificate.certPem }
    expect(certCovers(before.c, { dnsNames: ['c.example.test'], ipAddresses: ['127.0.0.1'] })).toBe(true)
    expect(certCovers(before.d, { dnsNames: ['d.example.test'], ipAddresses: ['127.0.0.1'] })).toBe(true)
    for (const pem of [before.c, before.d]) expect(isIssuedBy(pem, c.platform.pki.ca.certPem)).toBe(true)
    // Each looks at its certificate again (as on its 30 s tick): neither replaces the other's, nor its own.
    for (let i = 0; i < 2; i++) {
      await c.platform.checkCertificates(true)
      await d.platform.checkCertificates(true)
    }
    expect(c.platform.listener!.certificate.certPem).toBe(before.c)
    expect(d.platform.listener!.certificate.certPem).toBe(before.d)
  })

  test('the trust-key schedule runs once: only the lease holder writes a successor, and the other Platform signs with it', async () => {
    await using pair = await startPair()
    const holder = await waitFor(() => [pair.a, pair.b].find((p) => p.platform.ctx.leases.lease('trust-keys').held), { what: 'a trust-keys holder' })
    const other = holder === pair.a ? pair.b : pair.a
    const first = kids(holder)
    expect(first).toHaveLength(1)
    expect(kids(other)).toEqual(first)
    // 300 days on: the successor is due (90 days before the first key's signing year ends).
    holder.advance(300 * DAY)
    other.advance(300 * DAY)
    await other.platform.fabric.trust.sync()
    expect(await other.platform.vault.list('trust/')).toHaveLength(1)
    await holder.platform.fabric.trust.sync()
    await holder.platform.fabric.trust.sync()
    expect(await holder.platform.vault.list('trust/')).toHaveLength(2)
    const both = kids(holder)
    expect(both).toHaveLength(2)
    // The other Platform is told, reads the keys and publishes the same set.
    await waitFor(() => kids(other).length === 2, { timeoutMs: 5_000, what: 'the successor on the other Platform' })
    expect(kids(other)).toEqual(both)
    // Once the successor signs, both sign with it.
    holder.advance(70 * DAY)
    other.advance(70 * DAY)
    expect(other.platform.fabric.trust.currentKid()).toBe(both[1]!)
    expect(holder.platform.fabric.trust.currentKid()).toBe(both[1]!)
    expect(await holder.platform.vault.list('trust/')).toHaveLength(2)
  })
})
