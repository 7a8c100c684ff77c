// An in-process Platform on a temp data directory and a free loopback port.
import { rmSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Platform, type PlatformOptions } from '../../src/platform.ts'
import { createClient, type Client } from '../../src/client/index.ts'

export interface TestPlatform {
  platform: Platform
  url: string
  dataDir: string
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

export async function startPlatform(opts: Partial<PlatformOptions> & { keepDir?: boolean } = {}): Promise<TestPlatform> {
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'muster-platform-'))
  let offset = 0
  const clock = opts.clock ?? (() => Date.now() + offset)
  const platform = await Platform.open({ port: 0, host: '127.0.0.1', ...opts, dataDir, clock })
  const url = await platform.listen()
  const { token } = platform.auth.mintApiToken({ name: 'test', role: 'superadmin' })
  const close = async () => {
    await platform.close()
    if (!opts.keepDir && !opts.dataDir) rmSync(dataDir, { recursive: true, force: true })
  }
  return {
    platform,
    url,
    dataDir,
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
