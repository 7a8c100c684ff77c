// An in-process Platform on a temp data directory and a free loopback port,
// on SQLite (default) or on a fresh PostgreSQL database of its own.
import { afterAll, beforeEach } from 'bun:test'
import { existsSync, rmSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Platform, type PlatformOptions } from '../../src/platform/platform.ts'
import { createClient, type Client } from '../../src/client/index.ts'
import { freshDatabase, type Engine } from './postgres.ts'
import { registerClock, unregisterClock } from './clocks.ts'

export interface TestPlatform {
  platform: Platform
  url: string
  dataDir: string
  /** The store's URL when on PostgreSQL. */
  database?: string
  /** A superadmin API token. */
  token: string
  /** An SDK client authenticated as superadmin. */
  client: Client
  /** An SDK client with the given token (or none). */
  clientWith(token?: string): Client
  /** Moves the injected clock forward. */
  advance(ms: number): void
  close(): Promise<void>
  [Symbol.asyncDispose](): Promise<void>
}

let defaultEngine: Engine = 'sqlite'

/** Inside describe.each(ENGINES): every Platform the enclosed tests start uses this engine. */
export function onEngine(engine: Engine): void {
  beforeEach(() => {
    defaultEngine = engine
  })
  afterAll(() => {
    defaultEngine = 'sqlite'
  })
}

export async function startPlatform(opts: Partial<PlatformOptions> & { keepDir?: boolean; engine?: Engine } = {}): Promise<TestPlatform> {
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'muster-platform-'))
  let offset = 0
  const clock = opts.clock ?? (() => Date.now() + offset)
  const engine = opts.engine ?? defaultEngine
  // A restart on a kept data directory reuses the database it recorded (platform/database-url).
  const recorded = existsSync(join(dataDir, 'platform', 'database-url'))
  const db = engine === 'postgres' && !opts.database && !recorded ? await freshDatabase() : undefined
  const database = opts.database ?? db?.url
  let platform: Platform
  try {
    platform = await Platform.open({ port: 0, host: '127.0.0.1', ...opts, dataDir, clock, database })
  } catch (e) {
    await db?.drop()
    throw e
  }
  const url = await platform.listen()
  registerClock(url, clock)
  const { token } = await platform.auth.mintApiToken({ name: 'test', role: 'superadmin' })
  const close = async () => {
    unregisterClock(url, clock)
    await platform.close()
    // Dropped with the data directory that names it; a kept directory may be started again.
    if (!opts.keepDir && !opts.dataDir) {
      await db?.drop()
      rmSync(dataDir, { recursive: true, force: true })
    }
  }
  return {
    platform,
    url,
    dataDir,
    database,
    token,
    client: createClient({ url, token }),
    clientWith: (t) => createClient({ url, token: t }),
    advance: (ms) => {
      offset += ms
    },
    close,
    [Symbol.asyncDispose]: close,
  }
}
