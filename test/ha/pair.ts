// Two in-process Platforms on one PostgreSQL database, each with its own data
// directory holding the same platform/master.key (as an operator copies it).
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { PlatformOptions } from '../../src/platform/platform.ts'
import { startPlatform, type TestPlatform } from '../helpers/platform.ts'
import { freshDatabase } from '../helpers/postgres.ts'

export interface Pair {
  a: TestPlatform
  b: TestPlatform
  database: string
  /** Starts another Platform on the same store (a copy of a's master key unless `masterKey: false`). */
  another(opts?: Partial<PlatformOptions> & { masterKey?: boolean }): Promise<TestPlatform>
  [Symbol.asyncDispose](): Promise<void>
}

export async function startPair(opts: Partial<PlatformOptions> = {}): Promise<Pair> {
  const db = await freshDatabase()
  const dirs: string[] = []
  const started: TestPlatform[] = []
  const another = async (o: Partial<PlatformOptions> & { masterKey?: boolean } = {}) => {
    const dataDir = mkdtempSync(join(tmpdir(), 'muster-ha-'))
    dirs.push(dataDir)
    if (o.masterKey !== false && started[0]) {
      mkdirSync(join(dataDir, 'platform'), { recursive: true, mode: 0o700 })
      copyFileSync(join(started[0].dataDir, 'platform', 'master.key'), join(dataDir, 'platform', 'master.key'))
    }
    const p = await startPlatform({ remoteDispatch: true, localNode: false, ...opts, ...o, dataDir, database: db.url, engine: 'postgres' })
    started.push(p)
    return p
  }
  const a = await another()
  const b = await another()
  return {
    a,
    b,
    database: db.url,
    another,
    async [Symbol.asyncDispose]() {
      for (const p of started.reverse()) await p.close().catch(() => {})
      await db.drop()
      for (const d of dirs) rmSync(d, { recursive: true, force: true })
    },
  }
}
