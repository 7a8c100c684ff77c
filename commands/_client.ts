// Builds the SDK client for a command: URL, token and how an https Platform
// is authenticated (a CA pin, a CA file, else the system roots) from flags,
// environment, or the file `muster login` wrote.
import { readFileSync, existsSync, mkdirSync, chmodSync } from 'node:fs'
import { homedir } from 'node:os'
import { dirname, join } from 'node:path'
import { createClient, type Client } from '../src/client/index.ts'
import { pinnedFetch, type Pin } from '../src/crypto/pin.ts'
import { assertPrivate, writeFileAtomic } from '../src/datadir.ts'
import { checkFingerprint, UsageError } from './_args.ts'
import { tunable } from '../src/tunables.ts'

export const DEFAULT_URL = 'http://127.0.0.1:7380'

export interface SavedLogin {
  url: string
  token: string
  account?: string
  /** How the Platform was authenticated at login: kept for later commands to that URL. */
  pin?: { fingerprint: string } | { caPem: string }
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

type PinArgs = { 'platform-fingerprint'?: string; 'platform-ca-file'?: string }

/** The pin from flags, then the environment; undefined when none is given. */
export function pinFromArgs(args: PinArgs): SavedLogin['pin'] {
  const fingerprint = args['platform-fingerprint'] || tunable('MUSTER_PLATFORM_FINGERPRINT')
  const caFile = args['platform-ca-file'] || tunable('MUSTER_PLATFORM_CA_FILE')
  if (fingerprint && caFile) throw new UsageError('Give --platform-fingerprint or --platform-ca-file, not both')
  if (fingerprint) return { fingerprint: checkFingerprint(fingerprint, '--platform-fingerprint')!.toLowerCase() }
  if (!caFile) return undefined
  let caPem: string
  try {
    caPem = readFileSync(caFile, 'utf8')
  } catch (e) {
    throw new UsageError(`Cannot read --platform-ca-file ${caFile}: ${(e as Error).message}`)
  }
  if (!caPem.includes('-----BEGIN CERTIFICATE-----')) throw new UsageError(`--platform-ca-file ${caFile}: no PEM certificate in it`)
  return { caPem }
}

/** A fetch that authenticates an https Platform by the pin; plain fetch without one. */
export function fetchFor(pin: Pin | undefined): ((url: string, init: RequestInit) => Promise<Response>) | undefined {
  return pin ? (url, init) => pinnedFetch(url, init, pin) : undefined
}

export function clientFrom(args: { 'platform-url'?: string; token?: string } & PinArgs): Client {
  const saved = readSavedLogin()
  const url = (args['platform-url'] || tunable('MUSTER_URL') || saved?.url || DEFAULT_URL).replace(/\/+$/, '')
  let token = args.token
  const same = saved && saved.url === url
  token ||= tunable('MUSTER_TOKEN') || (same ? saved.token : undefined)
  const pin = pinFromArgs(args) ?? (same ? saved.pin : undefined)
  return createClient({ url, token, fetch: fetchFor(pin) })
}
