import { describe, expect, test } from 'bun:test'
import { chmodSync, statSync, writeFileSync } from 'node:fs'
import { DataDir } from '../../src/datadir.ts'
import { MusterError } from '../../src/errors.ts'
import { Platform } from '../../src/platform/platform.ts'
import { tmpDir } from '../helpers/tmp.ts'

describe('data directory', () => {
  test('secrets are written 0600 in 0700 folders', () => {
    using dir = tmpDir()
    const d = new DataDir(`${dir.path}/data`)
    const file = d.writeSecret('platform/x', 'secret')
    expect(statSync(file).mode & 0o777).toBe(0o600)
    expect(statSync(d.path('platform')).mode & 0o777).toBe(0o700)
    expect(statSync(d.root).mode & 0o777).toBe(0o700)
  })

  test('a group-readable secret is refused naming the file and the chmod that fixes it', () => {
    using dir = tmpDir()
    const d = new DataDir(dir.path)
    const file = d.path('platform', 'master.key')
    d.ensureDir('platform')
    writeFileSync(file, new Uint8Array(32))
    chmodSync(file, 0o640)
    let err: unknown
    try {
      d.readSecret('platform/master.key')
    } catch (e) {
      err = e
    }
    expect(err).toBeInstanceOf(MusterError)
    expect((err as Error).message).toContain(file)
    expect((err as Error).message).toContain(`chmod 600 ${file}`)
  })

  test('a Platform refuses to start on a master key others can read', async () => {
    using dir = tmpDir()
    const p = await Platform.open({ dataDir: dir.path, lock: false })
    await p.close()
    chmodSync(`${dir.path}/platform/master.key`, 0o644)
    await expect(Platform.open({ dataDir: dir.path, lock: false })).rejects.toThrow(/chmod 600/)
  })

  test('first start creates master.key and the superadmin password file, once', async () => {
    using dir = tmpDir()
    const p = await Platform.open({ dataDir: dir.path, lock: false })
    await p.close()
    const pw = `${dir.path}/platform/initial-superadmin-password`
    expect(statSync(pw).mode & 0o777).toBe(0o600)
    expect(statSync(`${dir.path}/platform/master.key`).size).toBe(32)
    const first = await Bun.file(pw).text()
    const again = await Platform.open({ dataDir: dir.path, lock: false })
    await again.close()
    expect(await Bun.file(pw).text()).toBe(first)
  })
})
