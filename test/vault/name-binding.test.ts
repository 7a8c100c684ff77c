// The vault binds each sealed secret to its name (src/context/vault.ts: the AES-GCM
// additional data names the row). Someone who can write the store but has no
// master.key cannot move one sealed secret onto another name: the copy does
// not open, and a Platform on that store refuses to start instead of using it.
import { describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import type { MusterError } from '../../src/errors.ts'
import { startPlatform } from '../helpers/platform.ts'

describe('vault name binding', () => {
  test('a sealed secret copied onto another row does not open there, and the Platform refuses to start on it', async () => {
    const p = await startPlatform({ keepDir: true })
    try {
      const names = (await p.platform.vault.list('trust/')).concat(await p.platform.vault.list('ca/'))
      const trust = names.find((n) => n.startsWith('trust/'))!
      const caKey = names.find((n) => n.startsWith('ca/') && n.endsWith('key.pem'))!
      expect(trust).toBeDefined()
      expect(caKey).toBeDefined()
      const original = await p.platform.vault.get(caKey)
      // Both rows open under their own names.
      expect(original).toContain('PRIVATE KEY')
      expect(await p.platform.vault.get(trust)).toBeTruthy()
      await p.platform.close()

      // The attack: in the store, the CA key's row takes the trust key's sealed bytes.
      const db = new Database(join(p.dataDir, 'muster.db'))
      db.run('UPDATE secrets SET sealed = (SELECT sealed FROM secrets WHERE name = ?1) WHERE name = ?2', [trust, caKey])
      db.close()

      const again = await startPlatform({ dataDir: p.dataDir }).catch((e: MusterError) => e)
      if ('close' in again) await again.close() // it started on a swapped secret: the test fails below
      expect((again as MusterError).code).toBe('store-sealed')
      expect((again as MusterError).message).toContain('platform/master.key cannot open the secrets')
    } finally {
      rmSync(p.dataDir, { recursive: true, force: true })
    }
  })
})
