import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { X509Certificate, createPrivateKey } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { MusterError } from '../../src/errors.ts'
import { sequence, integer } from '../../src/crypto/der.ts'
import {
  certCovers, certFingerprint, derToPem, expiresWithin, generateKeyAndCert, parseCertificate, pemToDer,
  type KeyAndCert,
} from '../../src/crypto/x509.ts'

const DAY = 86_400_000
const dir = mkdtempSync(join(tmpdir(), 'muster-x509-'))

function openssl(args: string[], stdin?: string): string {
  const r = Bun.spawnSync(['openssl', ...args], { stdin: stdin === undefined ? 'ignore' : Buffer.from(stdin) })
  if (r.exitCode !== 0) throw new Error(`openssl ${args.join(' ')}: ${r.stderr.toString()}`)
  return r.stdout.toString()
}

const colonHex = (fp: string) => fp.slice('sha256:'.length).toUpperCase().match(/../g)!.join(':')

let kc: KeyAndCert
const opts = {
  commonName: 'muster-platform',
  dnsNames: ['localhost', 'node-1.example'],
  ipAddresses: ['127.0.0.1', '::1', '2001:db8::5'],
  days: 30,
}

beforeAll(async () => {
  kc = await generateKeyAndCert(opts)
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('generateKeyAndCert', () => {
  test('openssl reads a v3 certificate with SANs, key usage and basic constraints', () => {
    const text = openssl(['x509', '-text', '-noout'], kc.certPem)
    expect(text).toContain('Version: 3 (0x2)')
    expect(text).toContain('Signature Algorithm: ecdsa-with-SHA256')
    expect(text).toContain('NIST CURVE: P-256')
    expect(text).toContain('Subject: CN = muster-platform')
    expect(text).toMatch(/X509v3 Basic Constraints: critical\s+CA:TRUE/)
    expect(text).toMatch(/X509v3 Key Usage: critical\s+Digital Signature, Certificate Sign/)
    expect(text).toMatch(/Extended Key Usage:\s*\n\s+TLS Web Server Authentication, TLS Web Client Authentication/)
    expect(text).toContain('X509v3 Subject Key Identifier')
    expect(text).toContain(
      'DNS:localhost, DNS:node-1.example, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1, IP Address:2001:DB8:0:0:0:0:0:5',
    )
  })

  test('openssl verifies the self-signature and agrees on the fingerprint', () => {
    const file = join(dir, 'self.pem')
    writeFileSync(file, kc.certPem)
    expect(openssl(['verify', '-CAfile', file, file]).trim()).toBe(`${file}: OK`)
    const fp = openssl(['x509', '-noout', '-fingerprint', '-sha256'], kc.certPem).trim()
    expect(fp.split('=')[1]).toBe(colonHex(kc.fingerprint))
  })

  test('node:crypto X509Certificate agrees', () => {
    const x = new X509Certificate(kc.certPem)
    expect(kc.fingerprint).toMatch(/^sha256:[0-9a-f]{64}$/)
    expect(x.fingerprint256).toBe(colonHex(kc.fingerprint))
    expect(x.subjectAltName).toBe(
      'DNS:localhost, DNS:node-1.example, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1, IP Address:2001:DB8:0:0:0:0:0:5',
    )
    expect(x.checkIP('127.0.0.1')).toBe('127.0.0.1')
    expect(x.checkIP('::1')).toBeTruthy()
    expect(x.checkIP('10.0.0.1')).toBeUndefined()
    expect(x.checkHost('node-1.example')).toBe('node-1.example')
    expect(x.verify(x.publicKey)).toBe(true)
    expect(x.ca).toBe(true)
    expect(new Date(x.validTo).getTime()).toBe(kc.notAfter.getTime())
    expect(kc.notAfter.getTime() - Date.now()).toBeGreaterThan(30 * DAY - 60_000)
    expect(kc.notAfter.getTime() - Date.now()).toBeLessThanOrEqual(30 * DAY)
    expect(Number.parseInt(x.serialNumber[0]!, 16)).toBeLessThan(8) // positive
    expect(x.serialNumber.length).toBe(32)
  })

  test('the key is PKCS#8 P-256 and belongs to the certificate', () => {
    expect(kc.keyPem.startsWith('-----BEGIN PRIVATE KEY-----\n')).toBe(true)
    const key = createPrivateKey(kc.keyPem)
    expect(key.asymmetricKeyType).toBe('ec')
    expect(key.asymmetricKeyDetails?.namedCurve).toBe('prime256v1')
    expect(new X509Certificate(kc.certPem).checkPrivateKey(key)).toBe(true)
    const other = createPrivateKey(openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256']))
    expect(new X509Certificate(kc.certPem).checkPrivateKey(other)).toBe(false)
  })

  test('each certificate gets its own key and serial', async () => {
    const again = await generateKeyAndCert(opts)
    expect(again.fingerprint).not.toBe(kc.fingerprint)
    expect(new X509Certificate(again.certPem).serialNumber).not.toBe(new X509Certificate(kc.certPem).serialNumber)
    expect(again.keyPem).not.toBe(kc.keyPem)
  })

  test('a given serial is used; validity past 2049 uses GeneralizedTime', async () => {
    const long = await generateKeyAndCert({ ...opts, days: 365 * 40, serial: 0x1234n })
    const x = new X509Certificate(long.certPem)
    expect(x.serialNumber.replace(/^0+/, '')).toBe('1234')
    expect(long.notAfter.getUTCFullYear()).toBeGreaterThan(2049)
    expect(parseCertificate(long.certPem).notAfter.getTime()).toBe(long.notAfter.getTime())
    expect(openssl(['x509', '-noout', '-enddate'], long.certPem)).toContain(String(long.notAfter.getUTCFullYear()))
  })

  test('refuses bad input with invalid-request', async () => {
    const bad = [
      { ...opts, ipAddresses: ['300.1.1.1'] },
      { ...opts, ipAddresses: ['fe80::1%eth0'] },
      { ...opts, dnsNames: ['bad name'] },
      { ...opts, days: 0 },
      { ...opts, serial: 0n },
      { ...opts, serial: 1n << 159n },
    ]
    for (const o of bad) {
      const err = await generateKeyAndCert(o).catch((e: unknown) => e)
      expect(err).toBeInstanceOf(MusterError)
      expect((err as MusterError).code).toBe('invalid-request')
    }
  })
})

describe('parseCertificate', () => {
  test('reads back what we generated', () => {
    const p = parseCertificate(kc.certPem)
    const x = new X509Certificate(kc.certPem)
    expect(p.fingerprint).toBe(kc.fingerprint)
    expect(Buffer.from(p.der).equals(Buffer.from(x.raw))).toBe(true)
    expect(Buffer.from(p.publicKeyDer).equals(x.publicKey.export({ format: 'der', type: 'spki' }))).toBe(true)
    expect(p.notAfter.getTime()).toBe(kc.notAfter.getTime())
    expect(p.notBefore.getTime()).toBe(new Date(x.validFrom).getTime())
    expect(p.notBefore.getTime()).toBeLessThan(Date.now())
    expect(p.dnsNames).toEqual(['localhost', 'node-1.example'])
    expect(p.ipAddresses).toEqual(['127.0.0.1', '::1', '2001:db8::5'])
    expect(parseCertificate(p.der).fingerprint).toBe(kc.fingerprint)
  })

  test('reads a certificate openssl made (RSA, v3, other extensions)', () => {
    const keyFile = join(dir, 'rsa.key')
    const certFile = join(dir, 'rsa.pem')
    openssl(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', keyFile, '-out', certFile,
      '-subj', '/CN=foreign', '-days', '2', '-addext', 'subjectAltName=DNS:foo.example,IP:10.1.2.3,IP:fe80::1'])
    const pem = readFileSync(certFile, 'utf8')
    const p = parseCertificate(pem)
    expect(p.dnsNames).toEqual(['foo.example'])
    expect(p.ipAddresses).toEqual(['10.1.2.3', 'fe80::1'])
    expect(p.fingerprint).toBe(`sha256:${new X509Certificate(pem).fingerprint256.replace(/:/g, '').toLowerCase()}`)
    expect(p.notAfter.getTime()).toBe(new Date(new X509Certificate(pem).validTo).getTime())
  })

  test('anything else is the one invalid-request error', () => {
    const der = pemToDer(kc.certPem)
    const garbage: (string | Uint8Array)[] = [
      '',
      'hello',
      '-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n',
      derToPem(crypto.getRandomValues(new Uint8Array(300))),
      derToPem(sequence(integer(1), integer(2))),
      derToPem(der.subarray(0, der.length - 1)),
      derToPem(new Uint8Array([...der, 0])),
      kc.keyPem,
    ]
    for (const g of garbage) {
      let err: unknown
      try {
        parseCertificate(g)
      } catch (e) {
        err = e
      }
      expect(err).toBeInstanceOf(MusterError)
      expect((err as MusterError).code).toBe('invalid-request')
      expect((err as MusterError).message).toBe('certPem: not an X.509 certificate with a public key')
    }
  })
})

describe('PEM and fingerprints', () => {
  test('PEM round-trips with 64-column lines', () => {
    const der = pemToDer(kc.certPem)
    expect(derToPem(der)).toBe(kc.certPem)
    const lines = kc.certPem.trim().split('\n').slice(1, -1)
    expect(lines.slice(0, -1).every((l) => l.length === 64)).toBe(true)
    expect(certFingerprint(der)).toBe(certFingerprint(kc.certPem))
    expect(certFingerprint(`junk before\n${kc.certPem}junk after`)).toBe(kc.fingerprint)
    expect(() => pemToDer(kc.keyPem)).toThrow(MusterError)
    expect(pemToDer(kc.keyPem, 'PRIVATE KEY').length).toBeGreaterThan(100)
  })
})

describe('renewal checks', () => {
  test('certCovers', () => {
    expect(certCovers(kc.certPem, { dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] })).toBe(true)
    expect(certCovers(kc.certPem, { dnsNames: ['LOCALHOST', 'node-1.example'], ipAddresses: ['0:0::1', '[2001:db8:0::5]'] })).toBe(true)
    expect(certCovers(kc.certPem, { dnsNames: [], ipAddresses: [] })).toBe(true)
    expect(certCovers(kc.certPem, { ipAddresses: ['10.0.0.7'] })).toBe(false)
    expect(certCovers(kc.certPem, { ipAddresses: ['::2'] })).toBe(false)
    expect(certCovers(kc.certPem, { dnsNames: ['node-2.example'] })).toBe(false)
    expect(certCovers(kc.certPem, { ipAddresses: ['not-an-ip'] })).toBe(false)
    expect(certCovers('garbage', { dnsNames: [] })).toBe(false)
  })

  test('expiresWithin', () => {
    const now = Date.now()
    expect(expiresWithin(kc.certPem, 29, now)).toBe(false)
    expect(expiresWithin(kc.certPem, 31, now)).toBe(true)
    expect(expiresWithin(kc.certPem, 0, new Date(now + 31 * DAY))).toBe(true)
    expect(expiresWithin(kc.certPem, 0, new Date(now))).toBe(false)
    expect(expiresWithin('garbage', 30, now)).toBe(true)
  })
})
