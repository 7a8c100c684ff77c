// The Platform's secrets at rest, through real Platforms: every
// sealed value has a nonce of its own; a data directory of an older version
// (secret files under platform/) has them moved into the store and the files
// removed; and with a master.key that cannot open the store, the Platform
// refuses to start and leaves those files where they were.
import { describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import type { MusterError } from '../../src/errors.ts'
import { startPlatform } from '../helpers/platform.ts'

/** What an older muster kept as files: the CA and the trust keys, with the master key. */
async function olderDataDir() {
  const p = await startPlatform({ keepDir: true })
  const vault = p.platform.vault
  const names = [...(await vault.list('ca/')), ...(await vault.list('trust/'))].filter((n) => n.split('/').length === 2)
  const files = Object.fromEntries(await Promise.all(names.map(async (n) => [n, (await vault.get(n))!] as const)))
  await p.platform.close()
  return { from: p.dataDir, files, done: () => rmSync(p.dataDir, { recursive: true, force: true }) }
}

function writeLegacy(dir: string, files: Record<string, string>) {
  for (const [name, value] of Object.entries(files)) {
    const [sub, file] = name.split('/') as [string, string]
    mkdirSync(join(dir, 'platform', sub), { recursive: true, mode: 0o700 })
    writeFileSync(join(dir, 'platform', sub, file), value, { mode: 0o600 })
  }
}

describe('secrets at rest', () => {
  test('every sealed secret has a nonce of its own', async () => {
    await using p = await startPlatform({ keepDir: false })
    await p.platform.vault.put('check/a', 'same value')
    await p.platform.vault.put('check/b', 'same value')
    await p.platform.vault.put('check/a', 'same value')
    const rows = await p.platform.store.all<{ name: string; sealed: Uint8Array }>('SELECT name, sealed FROM secrets')
    expect(rows.length).toBeGreaterThan(4)
    const nonces = rows.map((r) => Buffer.from(r.sealed.subarray(1, 13)).toString('hex'))
    expect(new Set(nonces).size).toBe(rows.length)
    expect(nonces).not.toContain('00'.repeat(12))
  })

  test("an older data directory's secret files move into the store and leave the disk; the Platform keeps its CA", async () => {
    const older = await olderDataDir()
    const dir = mkdtempSync(join(tmpdir(), 'muster-older-'))
    try {
      mkdirSync(join(dir, 'platform'), { recursive: true, mode: 0o700 })
      copyFileSync(join(older.from, 'platform', 'master.key'), join(dir, 'platform', 'master.key'))
      writeLegacy(dir, older.files)
      expect(Object.keys(older.files).some((n) => n.startsWith('trust/'))).toBe(true)
      await using p = await startPlatform({ dataDir: dir })
      expect(p.platform.pki.ca.certPem).toBe(older.files['ca/cert.pem']!)
      for (const [name, value] of Object.entries(older.files)) {
        expect(`${name} on disk: ${existsSync(join(dir, 'platform', name))}`).toBe(`${name} on disk: false`)
        expect(await p.platform.vault.get(name)).toBe(value)
      }
    } finally {
      older.done()
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test('with a master.key that cannot open the store, the Platform refuses to start and moves no secret file', async () => {
    const older = await olderDataDir()
    const dir = mkdtempSync(join(tmpdir(), 'muster-wrongkey-'))
    try {
      // The store of a Platform, beside another master key and secret files of its own.
      mkdirSync(join(dir, 'platform'), { recursive: true, mode: 0o700 })
      const db = new Database(join(older.from, 'muster.db'))
      db.run('PRAGMA wal_checkpoint(TRUNCATE)')
      db.close()
      copyFileSync(join(older.from, 'muster.db'), join(dir, 'muster.db'))
      writeFileSync(join(dir, 'platform', 'master.key'), randomBytes(32), { mode: 0o600 })
      writeLegacy(dir, { 'trust/legacy-kid.json': '{"kid":"legacy-kid"}', 'ca/cert.pem': 'an older CA' })
      const err = await startPlatform({ dataDir: dir }).then(
        async (p) => (await p.close(), 'started'),
        (e: MusterError) => e,
      )
      expect((err as MusterError).code).toBe('store-sealed')
      expect(readFileSync(join(dir, 'platform', 'trust', 'legacy-kid.json'), 'utf8')).toBe('{"kid":"legacy-kid"}')
      expect(readFileSync(join(dir, 'platform', 'ca', 'cert.pem'), 'utf8')).toBe('an older CA')
      // Nothing was written into the store under the wrong key either.
      const store = new Database(join(dir, 'muster.db'))
      expect(store.query("SELECT name FROM secrets WHERE name = 'trust/legacy-kid.json'").all()).toEqual([])
      store.close()
    } finally {
      older.done()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
