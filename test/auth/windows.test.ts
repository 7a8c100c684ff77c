// Operator credentials at the edges of their windows: an account's
// expiry for its logins, sessions and tokens, a new account's expiry that must
// lie ahead, a session's 12 hours and an API token's own expiry — each through
// the HTTP routes, on a clock the test holds still and moves by hand.
import { describe, expect, test } from 'bun:test'
import { SESSION_TTL_MS } from '../../src/auth/auth.ts'
import type { MusterError } from '../../src/errors.ts'
import { startPlatform } from '../helpers/platform.ts'

const json = { 'content-type': 'application/json' }
const PASSWORD = 'temp-password-123'

async function held() {
  const clock = { t: Math.floor(Date.now() / 1000) * 1000 }
  const p = await startPlatform({ clock: () => clock.t })
  const login = async (identifier: string) => {
    const r = await fetch(`${p.url}/login`, { method: 'POST', headers: json, body: JSON.stringify({ identifier, password: PASSWORD }) })
    return { status: r.status, cookie: r.headers.get('set-cookie')?.split(';')[0] ?? '' }
  }
  const whoami = async (h: Record<string, string>) => (await fetch(`${p.url}/api/v1/whoami`, { headers: h })).status
  return Object.assign(p, { clock, login, whoami })
}

describe('operator credentials: windows', () => {
  test("an account works to the last millisecond before its expiry — login, session, token — and none of them at it", async () => {
    await using p = await held()
    const end = p.clock.t + 3_600_000
    await p.client.accounts.add({ name: 'temp', role: 'operator', password: PASSWORD, expiresAt: new Date(end).toISOString() })
    const first = await p.login('temp')
    const { token } = await p.platform.auth.mintApiToken({ name: 'temp-cli', role: 'operator', account: 'temp' })
    p.clock.t = end - 1
    const before = await p.login('temp')
    expect({ login: before.status, session: await p.whoami({ cookie: first.cookie }), token: await p.whoami({ authorization: `Bearer ${token}` }) }).toEqual({ login: 200, session: 200, token: 200 })
    p.clock.t = end
    expect({ login: (await p.login('temp')).status, session: await p.whoami({ cookie: before.cookie }), token: await p.whoami({ authorization: `Bearer ${token}` }) }).toEqual({ login: 401, session: 401, token: 401 })
  })

  test('a new account may expire one millisecond from now, not now', async () => {
    await using p = await held()
    const add = (name: string, at: number) => p.client.accounts.add({ name, role: 'viewer', password: PASSWORD, expiresAt: new Date(at).toISOString() }).then(() => 'added', (e: MusterError) => e.code)
    expect(await add('now', p.clock.t)).toBe('invalid-request')
    expect(await add('soon', p.clock.t + 1)).toBe('added')
  })

  test('a session lasts 12 hours to the millisecond; an API token to its own expiry', async () => {
    await using p = await held()
    await p.client.accounts.add({ name: 'temp', role: 'operator', password: PASSWORD })
    const { cookie } = await p.login('temp')
    const end = p.clock.t + 60_000
    const { token } = await p.platform.auth.mintApiToken({ name: 'short', role: 'viewer', expiresAt: end })
    p.clock.t = end - 1
    expect(await p.whoami({ authorization: `Bearer ${token}` })).toBe(200)
    p.clock.t = end
    expect(await p.whoami({ authorization: `Bearer ${token}` })).toBe(401)
    p.clock.t = end - 60_000 + SESSION_TTL_MS - 1
    expect(await p.whoami({ cookie })).toBe(200)
    p.clock.t += 1
    expect(await p.whoami({ cookie })).toBe(401)
  })
})
