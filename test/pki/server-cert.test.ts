// The Platform CA and the server certificates it issues (docs/security.md): the CA
// is made once and kept; the listener's certificate is kept while it fits and
// renewed from the same CA when the addresses change or 30 days remain, so
// the pin nodes hold never changes.
import { describe, expect, test } from 'bun:test'
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { isIssuedBy, spkiPin } from '../../src/crypto/ca.ts'
import { probeChain } from '../../src/crypto/pin.ts'
import { certCovers, certFingerprint, derToPem, generateKeyAndCert } from '../../src/crypto/x509.ts'
import { Platform } from '../../src/platform/platform.ts'
import { startListenerPlatform } from '../helpers/node-side.ts'
import { tmpDir } from '../helpers/tmp.ts'

const DAY = 86_400_000

function openssl(args: string[], stdin?: string): { code: number; out: string } {
  const r = Bun.spawnSync(['openssl', ...args], { stdin: stdin === undefined ? 'ignore' : Buffer.from(stdin) })
  return { code: r.exitCode, out: r.stdout.toString() + r.stderr.toString() }
}

async function served(port: number) {
  const chain = await probeChain('127.0.0.1', port)
  return { leaf: derToPem(chain[0]!), chain: chain.map((d) => derToPem(d)) }
}

describe('the Platform CA', () => {
  test('made on first start (its key sealed in the store, never a file), kept across restarts; the pin is the SHA-256 of its SubjectPublicKeyInfo', async () => {
    using dir = tmpDir()
    const dataDir = `${dir.path}/data`
    let pin: string
    {
      await using p = await startListenerPlatform({ dataDir })
      const ca = p.platform.pki.ca
      pin = ca.pin
      expect(existsSync(`${dataDir}/platform/ca`)).toBe(false)
      const sealed = await p.platform.store.get<{ sealed: Uint8Array }>("SELECT sealed FROM secrets WHERE name = 'ca/key.pem'")
      expect(Buffer.from(sealed!.sealed).toString('latin1')).not.toContain('PRIVATE KEY')
      // openssl agrees on the pin (the kubeadm CA-hash convention)
      const der = openssl(['x509', '-pubkey', '-noout'], ca.certPem)
      const digest = Bun.spawnSync(['sh', '-c', 'openssl pkey -pubin -outform DER | openssl dgst -sha256 -r'], { stdin: Buffer.from(der.out) }).stdout.toString().split(' ')[0]
      expect(pin).toBe(`sha256:${digest}`)
      expect(openssl(['x509', '-noout', '-text'], ca.certPem).out).toMatch(/CA:TRUE, pathlen:0/)
      const years = (ca.notAfter.getTime() - Date.now()) / (365 * DAY)
      expect(years).toBeGreaterThan(9.9)
      expect(years).toBeLessThan(10.1)
    }
    await using again = await startListenerPlatform({ dataDir })
    expect(again.platform.pki.ca.pin).toBe(pin)
    expect(again.fingerprint).toBe(pin)
  })

  test('a CA whose key went missing stops the start and says how to repair it; nothing new is made', async () => {
    using dir = tmpDir()
    const dataDir = `${dir.path}/data`
    {
      await using _p = await startListenerPlatform({ dataDir })
    }
    // the key's row goes missing from the store
    const { Database } = await import('bun:sqlite')
    const db = new Database(`${dataDir}/muster.db`)
    db.run("DELETE FROM secrets WHERE name = 'ca/key.pem'")
    db.close()
    const err = await Platform.open({ dataDir, port: 0, enrollmentPort: 0, enrollmentAddresses: ['127.0.0.1'] }).catch((e: unknown) => e)
    expect((err as Error).message).toContain('restore both from a backup')
    const check = new Database(`${dataDir}/muster.db`)
    expect(check.query("SELECT name FROM secrets WHERE name = 'ca/key.pem'").get()).toBeNull()
    check.close()
  })
})

describe('the enrollment listener certificate', () => {
  test('sent with its chain; renewed from the same CA when the addresses change: the pin stays', async () => {
    using dir = tmpDir()
    const dataDir = `${dir.path}/data`
    let first: string
    let pin: string
    {
      await using p = await startListenerPlatform({ dataDir })
      pin = p.fingerprint
      const s = await served(p.listener.port)
      first = certFingerprint(s.leaf)
      expect(s.chain).toHaveLength(2)
      expect(spkiPin(s.chain[1]!)).toBe(pin)
      expect(isIssuedBy(s.leaf, s.chain[1]!)).toBe(true)
      expect(existsSync(`${dataDir}/platform/tls`)).toBe(false) // sealed in the store
      // openssl verifies the served leaf as a TLS server certificate under the CA alone
      const caFile = join(dir.path, 'ca.pem')
      writeFileSync(caFile, p.platform.pki.ca.certPem)
      const leafFile = join(dir.path, 'leaf.pem')
      writeFileSync(leafFile, s.leaf)
      expect(openssl(['verify', '-CAfile', caFile, '-purpose', 'sslserver', leafFile]).out.trim()).toBe(`${leafFile}: OK`)
    }
    {
      await using p = await startListenerPlatform({ dataDir })
      expect(certFingerprint((await served(p.listener.port)).leaf)).toBe(first)
    }
    await using p = await startListenerPlatform({ dataDir, enrollmentAddresses: ['127.0.0.1', 'enroll.example.test'] })
    const s = await served(p.listener.port)
    expect(certFingerprint(s.leaf)).not.toBe(first)
    expect(certCovers(s.leaf, { dnsNames: ['enroll.example.test'], ipAddresses: ['127.0.0.1'] })).toBe(true)
    expect(p.fingerprint).toBe(pin)
    expect((await p.client.nodes.platform()).enrollment?.fingerprint).toBe(pin)
  })

  test('a self-signed certificate from before the CA is kept and published while it fits, then replaced by one from the CA', async () => {
    using dir = tmpDir()
    const dataDir = `${dir.path}/data`
    // what the earlier version left in platform/tls/: a self-signed certificate for the listener's addresses
    const legacy = await generateKeyAndCert({ commonName: 'muster platform', dnsNames: [], ipAddresses: ['127.0.0.1'], days: 365 })
    mkdirSync(`${dataDir}/platform/tls`, { recursive: true, mode: 0o700 })
    writeFileSync(`${dataDir}/platform/tls/cert.pem`, legacy.certPem, { mode: 0o600 })
    writeFileSync(`${dataDir}/platform/tls/key.pem`, legacy.keyPem, { mode: 0o600 })
    await using p = await startListenerPlatform({ dataDir })
    const ca = p.platform.pki.ca
    expect(p.fingerprint).toBe(legacy.fingerprint)
    expect(p.platform.fabric.enrollment).toMatchObject({ fingerprint: legacy.fingerprint, caFingerprint: ca.pin })
    expect((await served(p.listener.port)).chain).toEqual([legacy.certPem])
    // nodes are told to keep both pins while the old certificate is served
    expect(p.platform.fabric.nodeAnchors()).toMatchObject({ caFingerprint: ca.pin, pins: [ca.pin, legacy.fingerprint] })
    // kept until two days before it ends (nodes refresh daily)
    p.advance(360 * DAY)
    expect(certFingerprint((await served(p.listener.port)).leaf)).toBe(legacy.fingerprint)
    p.advance(4 * DAY)
    const s = await served(p.listener.port)
    expect(isIssuedBy(s.leaf, ca.certPem)).toBe(true)
    expect(p.fingerprint).toBe(ca.pin)
    expect(p.platform.fabric.nodeAnchors().pins).toEqual([ca.pin])
  })

  test('renewed while running once 30 days remain, by the wall clock at the next connection; new connections get it', async () => {
    await using p = await startListenerPlatform()
    const before = certFingerprint((await served(p.listener.port)).leaf)
    expect(await p.listener.renewIfNeeded()).toBe(false)
    p.advance(300 * DAY)
    expect(certFingerprint((await served(p.listener.port)).leaf)).toBe(before)
    p.advance(40 * DAY)
    // no tick, no call: the connection itself notices the clock
    const after = certFingerprint((await served(p.listener.port)).leaf)
    expect(after).not.toBe(before)
    expect(p.fingerprint).toBe(p.platform.pki.ca.pin)
    expect(p.platform.fabric.enrollment?.fingerprint).toBe(p.platform.pki.ca.pin)
    expect(await p.listener.renewIfNeeded()).toBe(false)
  })
})
