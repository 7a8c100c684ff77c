// platform/tls/: kept while it fits, replaced (loudly) when the addresses
// change or it nears expiry (SPEC §8).
import { describe, expect, test } from 'bun:test'
import { statSync } from 'node:fs'
import { certCovers } from '../../src/crypto/x509.ts'
import { probeCertificate } from '../../src/crypto/pin.ts'
import { log } from '../../src/log.ts'
import { TLS_CERT_FILE, TLS_KEY_FILE } from '../../src/listener/platform-tls.ts'
import { startListenerPlatform } from '../helpers/node-side.ts'
import { tmpDir } from '../helpers/tmp.ts'

/** Captures warnings logged while `fn` runs. */
async function warningsDuring(fn: () => Promise<void>): Promise<string[]> {
  const seen: string[] = []
  const reporter = { log: (o: { type: string; args: unknown[] }) => void (o.type === 'warn' && seen.push(o.args.map(String).join(' '))) }
  const level = log.level
  log.level = 3
  log.addReporter(reporter)
  try {
    await fn()
  } finally {
    log.removeReporter(reporter)
    log.level = level
  }
  return seen
}

const DAY = 86_400_000

describe('Platform TLS for the enrollment listener', () => {
  test('kept across restarts; renewed with a loud warning when the addresses change; key 0600', async () => {
    using dir = tmpDir()
    const dataDir = `${dir.path}/data`
    let first: string
    {
      await using p = await startListenerPlatform({ dataDir })
      first = p.fingerprint
      expect(statSync(`${dataDir}/${TLS_KEY_FILE}`).mode & 0o777).toBe(0o600)
      expect((await probeCertificate('127.0.0.1', p.listener.port)).fingerprint).toBe(first)
    }
    {
      await using p = await startListenerPlatform({ dataDir })
      expect(p.fingerprint).toBe(first)
    }
    let changed = ''
    const warnings = await warningsDuring(async () => {
      await using p = await startListenerPlatform({ dataDir, enrollmentAddresses: ['127.0.0.1', 'enroll.example.test'] })
      changed = p.fingerprint
      expect((await p.client.nodes.platform()).enrollment?.fingerprint).toBe(changed)
      expect((await probeCertificate('127.0.0.1', p.listener.port)).fingerprint).toBe(changed)
    })
    expect(changed).not.toBe(first)
    expect(warnings.join('\n')).toContain(`old fingerprint: ${first}`)
    expect(warnings.join('\n')).toContain(`new fingerprint: ${changed}`)
    const pem = await Bun.file(`${dataDir}/${TLS_CERT_FILE}`).text()
    expect(certCovers(pem, { dnsNames: ['enroll.example.test'], ipAddresses: ['127.0.0.1'] })).toBe(true)
  })

  test('renewed while running once within 30 days of expiry; new connections get the new certificate', async () => {
    await using p = await startListenerPlatform()
    const before = p.fingerprint
    expect(await p.listener.renewIfNeeded()).toBe(false)
    p.advance(300 * DAY)
    expect(await p.listener.renewIfNeeded()).toBe(false)
    p.advance(40 * DAY)
    let renewed = false
    const warnings = await warningsDuring(async () => {
      renewed = await p.listener.renewIfNeeded()
    })
    expect(renewed).toBe(true)
    expect(warnings.join('\n')).toContain('expires within 30 days')
    expect(p.fingerprint).not.toBe(before)
    expect(p.platform.fabric.enrollment?.fingerprint).toBe(p.fingerprint)
    expect((await probeCertificate('127.0.0.1', p.listener.port)).fingerprint).toBe(p.fingerprint)
  })
})
