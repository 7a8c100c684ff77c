// muster doctor on prepared data directories and receipts (docs/nodes.md, docs/operations.md).
import { describe, expect, test } from 'bun:test'
import { DataDir } from '../../src/datadir.ts'
import { openPlatformVault } from '../../src/pki/host-vault.ts'
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs'
import { runDoctor } from '../../src/doctor/doctor.ts'
import { sha256Hex } from '../../src/crypto/tokens.ts'
import { generateCa } from '../../src/crypto/ca.ts'
import { VERSION } from '../../src/version.ts'
import { startPlatform } from '../helpers/platform.ts'
import { tmpDir } from '../helpers/tmp.ts'

const statusOf = (r: Awaited<ReturnType<typeof runDoctor>>) => Object.fromEntries(r.checks.map((c) => [c.name, c.status]))

function writeReceipt(root: string, fields: Record<string, unknown>) {
  mkdirSync(`${root}/etc/muster`, { recursive: true })
  writeFileSync(`${root}/etc/muster/receipt.json`, JSON.stringify({ role: 'worker', version: VERSION, installedAt: '2025-01-01T00:00:00Z', account: 'muster', dataDir: '/var/lib/muster', units: [], files: [], ...fields }))
}

describe('doctor', () => {
  test('reads the receipt under --root: installed files checked by SHA-256; a missing one fails', async () => {
    using dir = tmpDir()
    const root = `${dir.path}/root`
    mkdirSync(`${root}/usr/local/bin`, { recursive: true })
    writeFileSync(`${root}/usr/local/bin/muster`, 'binary')
    mkdirSync(`${root}/var/lib/muster`, { recursive: true, mode: 0o700 })
    writeReceipt(root, { files: [{ path: '/usr/local/bin/muster', sha256: sha256Hex('binary') }] })
    // the data directory comes from the receipt (under the root) when no flag names one
    const fine = await runDoctor({ root })
    expect(fine.dataDir).toBe(`${root}/var/lib/muster`)
    expect(statusOf(fine)).toMatchObject({ role: 'ok', receipt: 'ok', joined: 'fail' })
    expect(fine.checks.find((c) => c.name === 'joined')?.message).toContain('muster worker join')
    expect(fine.ok).toBe(false)

    writeFileSync(`${root}/usr/local/bin/muster`, 'changed')
    expect(statusOf(await runDoctor({ root })).receipt).toBe('warn')
    writeReceipt(root, { files: [{ path: '/usr/local/bin/gone', sha256: sha256Hex('x') }] })
    const missing = await runDoctor({ root })
    expect(statusOf(missing).receipt).toBe('fail')
    writeReceipt(root, { version: '0.0.1' })
    expect((await runDoctor({ root })).checks.find((c) => c.name === 'receipt')?.message).toContain(`this binary is ${VERSION}`)
    writeFileSync(`${root}/etc/muster/receipt.json`, '{not json')
    expect(statusOf(await runDoctor({ root })).receipt).toBe('fail')
  })

  test('a Platform data directory: modes, serve running, listener certificate and trust keys', async () => {
    using dir = tmpDir()
    const dataDir = `${dir.path}/data`
    const root = `${dir.path}/empty-root`
    {
      await using p = await startPlatform({ dataDir, enrollmentPort: 0, enrollmentAddresses: ['127.0.0.1'], enrollmentHost: '127.0.0.1' })
      const running = await runDoctor({ dataDir, root })
      expect(running.role).toBe('platform')
      expect(statusOf(running)).toEqual({ role: 'ok', receipt: 'warn', 'data-owner': 'ok', 'data-modes': 'ok', serve: 'ok', 'platform-ca': 'ok', 'listener-cert': 'ok', 'trust-keys': 'ok' })
      expect(running.ok).toBe(true)
      expect(running.checks.find((c) => c.name === 'platform-ca')?.message).toContain(p.platform.pki.ca.pin)
    }
    // a CA with a year or less left is a warning that says what to do; an expired one fails
    // (the CA lives sealed in the store: put one there as a CA replacement would)
    const putCa = async (ca: { certPem: string; keyPem: string }) => {
      const host = await openPlatformVault(new DataDir(dataDir))
      await host.vault.put('ca/cert.pem', ca.certPem)
      await host.vault.put('ca/key.pem', ca.keyPem)
      await host.close()
    }
    await putCa(await generateCa(300))
    const ageing = await runDoctor({ dataDir, root })
    expect(statusOf(ageing)['platform-ca']).toBe('warn')
    expect(ageing.checks.find((c) => c.name === 'platform-ca')?.message).toMatch(/expires on .* \(29\d days left\): replace it before then \(muster admin ca prepare/)
    await putCa(await generateCa(1, Date.now() - 3 * 86_400_000))
    expect(statusOf(await runDoctor({ dataDir, root }))['platform-ca']).toBe('fail')
    chmodSync(`${dataDir}/platform/master.key`, 0o644)
    const loose = await runDoctor({ dataDir, root })
    expect(statusOf(loose)).toMatchObject({ serve: 'warn', 'data-modes': 'fail' })
    expect(loose.checks.find((c) => c.name === 'data-modes')?.message).toContain(`${dataDir}/platform/master.key (644)`)
    expect(loose.ok).toBe(false)
  })
})
