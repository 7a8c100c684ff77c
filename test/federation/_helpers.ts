// Federation test helpers: a controller and offices as in-process Platforms on
// loopback. Office mode is configured by environment variables, read once while
// the Platform opens, so they are set only around that call.
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startPlatform, type TestPlatform } from '../helpers/platform.ts'
import { createClient } from '../../src/client/index.ts'
import { freePort } from '../../src/addresses.ts'

export const FAST_HEARTBEAT = '0.1'

// A port that was free a moment ago, so an office can advertise its URL before it listens.
export { freePort }

export async function withEnv<T>(vars: Record<string, string | undefined>, fn: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]))
  for (const [k, v] of Object.entries(vars)) {
    if (v === undefined) delete process.env[k]
    else process.env[k] = v
  }
  try {
    return await fn()
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k]
      else process.env[k] = v
    }
  }
}

export interface OfficeOptions {
  dataDir?: string
  port?: number
  env?: Record<string, string | undefined>
  /** The office's clock (default: the wall clock, moved by `advance`). */
  clock?: () => number
}

/** Starts an office Platform; with `token` it joins `controllerUrl` (first start), else it starts from its stored membership. */
export async function startOffice(controllerUrl: string | undefined, token: string | undefined, opts: OfficeOptions = {}): Promise<TestPlatform> {
  const port = opts.port ?? (await freePort())
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'muster-office-'))
  return withEnv(
    {
      MUSTER_CONTROLLER_URL: controllerUrl,
      MUSTER_ADVERTISE_URL: controllerUrl ? `http://127.0.0.1:${port}` : undefined,
      MUSTER_JOIN_TOKEN: token,
      MUSTER_FEDERATION_HEARTBEAT_SECONDS: FAST_HEARTBEAT,
      ...opts.env,
    },
    () => startPlatform({ dataDir, port, keepDir: true, ...(opts.clock ? { clock: opts.clock } : {}) }),
  )
}

/** A client whose calls carry an API token tied to an account (a vouch names an account). */
export async function accountClient(p: TestPlatform, account = 'superadmin') {
  const { token } = await p.platform.auth.mintApiToken({ name: `${account}-test`, role: 'superadmin', account })
  return createClient({ url: p.url, token })
}

export function initialPassword(dataDir: string): string {
  return readFileSync(join(dataDir, 'platform/initial-superadmin-password'), 'utf8').trim()
}

export function login(url: string, identifier: string, password: string) {
  return fetch(`${url}/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ identifier, password }) })
}

/**
 * A client on a joined office that works while its local door is closed: a
 * session opened by a vouch of the controller's superadmin (local API tokens
 * are suspended there).
 */
export async function vouchedClient(controller: TestPlatform, office: TestPlatform, officeId = 'office-a') {
  const { vouch } = await (await accountClient(controller)).federation.vouch(officeId)
  const res = await fetch(`${office.url}/api/office/vouch`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ vouch }) })
  if (res.status !== 200) throw new Error(`vouch refused: ${res.status} ${await res.text()}`)
  const cookie = res.headers.get('set-cookie')!.split(';')[0]!
  return createClient({ url: office.url, headers: { cookie } })
}

/**
 * What a person does with a vouch link: open it (a page that spends nothing and sets no cookie), then press its
 * button, which POSTs the vouch as a form from the office's own origin. The answer of that POST (303 and a cookie).
 */
export async function openVouchLink(redeemUrl: string): Promise<Response> {
  const shown = await fetch(redeemUrl, { redirect: 'manual' })
  if (shown.headers.get('set-cookie')) throw new Error('the vouch link set a cookie on GET')
  const page = await shown.text()
  const v = /<input type="hidden" name="v" value="([^"]*)">/.exec(page)?.[1]
  if (!v) return shown // the page says why the vouch cannot be used (its status says the same)
  const office = new URL(redeemUrl)
  const value = v.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&')
  return fetch(`${office.origin}/office/vouch`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: office.origin, 'sec-fetch-site': 'same-origin' },
    body: new URLSearchParams({ v: value }).toString(),
  })
}
