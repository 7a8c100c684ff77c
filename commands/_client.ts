// Builds the SDK client for a command: URL and token from flags, environment,
// or the file `muster login` wrote.
import { readFileSync, existsSync, mkdirSync, chmodSync } from 'node:fs'
import { homedir } from 'node:os'
import { dirname, join } from 'node:path'
import { createClient, type Client } from '../src/client/index.ts'
import { assertPrivate, writeFileAtomic } from '../src/datadir.ts'
import { warnArgvSecret } from './_secret.ts'

export const DEFAULT_URL = 'http://127.0.0.1:7380'

export interface SavedLogin {
  url: string
  token: string
  account?: string
}

export function configFile(): string {
  const base = process.env.XDG_CONFIG_HOME || join(homedir(), '.config')
  return join(base, 'muster', 'credentials.json')
}

export function readSavedLogin(): SavedLogin | undefined {
  const file = configFile()
  if (!existsSync(file)) return undefined
  assertPrivate(file)
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as SavedLogin
  } catch {
    return undefined
  }
}

export function saveLogin(login: SavedLogin): string {
  const file = configFile()
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 })
  chmodSync(dirname(file), 0o700)
  writeFileAtomic(file, `${JSON.stringify(login, null, 2)}\n`, 0o600)
  return file
}

export function clientFrom(args: { 'platform-url'?: string; token?: string }): Client {
  const saved = readSavedLogin()
  const url = (args['platform-url'] || process.env.MUSTER_URL || saved?.url || DEFAULT_URL).replace(/\/+$/, '')
  let token = args.token
  if (token) warnArgvSecret('--token')
  token ||= process.env.MUSTER_TOKEN || (saved && saved.url === url ? saved.token : undefined)
  return createClient({ url, token })
}
