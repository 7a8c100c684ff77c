// docs/security.md against a real server: login CSRF in every shape a page elsewhere
// can send (multipart included), malformed Origins, and password guessing.
import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { hashPassword } from '../../src/auth/auth.ts'
import { addressKey, LoginThrottle } from '../../src/auth/throttle.ts'
import { insertAccount } from '../../src/store/accounts.ts'
import { startPlatform, type TestPlatform } from '../helpers/platform.ts'

const superPassword = (p: TestPlatform) => readFileSync(`${p.dataDir}/platform/initial-superadmin-password`, 'utf8').trim()

function multipart(fields: Record<string, string>): { body: string; type: string } {
  const b = 'XyZzy42'
  const body = Object.entries(fields).map(([k, v]) => `--${b}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`).join('') + `--${b}--\r\n`
  return { body, type: `multipart/form-data; boundary=${b}` }
}

describe('login CSRF', () => {
  test('a page elsewhere cannot log a browser in: multipart, form and text logins need this Platform’s Origin', async () => {
    await using p = await startPlatform()
    // The attacker's page posts the attacker's own (valid) credentials; a browser adds the page's Origin.
    const creds = { identifier: 'superadmin', password: superPassword(p) }
    const shapes = [
      () => multipart(creds),
      () => ({ body: new URLSearchParams(creds).toString(), type: 'application/x-www-form-urlencoded' }),
      () => ({ body: JSON.stringify(creds), type: 'text/plain' }),
    ]
    for (const shape of shapes) {
      const { body, type } = shape()
      for (const origin of ['https://evil.example', 'null', 'http://[', 'not a url', '://', 'http://a b', `${p.url}/path`]) {
        const res = await fetch(`${p.url}/login`, { method: 'POST', headers: { 'content-type': type, origin }, body, redirect: 'manual' })
        expect({ type, origin, status: res.status }).toEqual({ type, origin, status: 403 })
        expect(res.headers.get('set-cookie')).toBeNull()
        expect(((await res.json()) as { error: { code: string } }).error.code).toBe('forbidden')
      }
    }
    // The router also serves /login/ and /login?…: the same check holds there.
    for (const path of ['/login/', '/login?next=/', '//login']) {
      const { body, type } = multipart(creds)
      const res = await fetch(`${p.url}${path}`, { method: 'POST', headers: { 'content-type': type, origin: 'https://evil.example' }, body, redirect: 'manual' })
      expect({ path, status: res.status }).toEqual({ path, status: 403 })
    }
    // The Platform's own page (same Origin) logs in with a multipart form.
    const own = multipart(creds)
    const ok = await fetch(`${p.url}/login`, { method: 'POST', headers: { 'content-type': own.type, origin: p.url }, body: own.body, redirect: 'manual' })
    expect(ok.status).toBe(303)
    expect(ok.headers.get('set-cookie')).toContain('muster_session=')
    // JSON cannot be sent from another site without a preflight, which muster never grants: no Origin rule.
    const json = await fetch(`${p.url}/login`, { method: 'POST', headers: { 'content-type': 'application/json', origin: 'https://evil.example' }, body: JSON.stringify(creds) })
    expect(json.status).toBe(200)
  })

  test('a malformed Origin on a session write is 403, never 500', async () => {
    await using p = await startPlatform()
    const login = await fetch(`${p.url}/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ identifier: 'superadmin', password: superPassword(p) }) })
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!
    for (const origin of ['http://[', 'x', 'http://a b', '%']) {
      const res = await fetch(`${p.url}/api/v1/nodes/enrollments`, { method: 'POST', headers: { cookie, origin, 'content-type': 'application/json' }, body: '{"nodeId":"w1"}' })
      expect({ origin, status: res.status }).toEqual({ origin, status: 403 })
    }
  })
})

describe('login throttling', () => {
  const login = (p: TestPlatform, identifier: string, password: string) =>
    fetch(`${p.url}/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ identifier, password }) })

  test('a guessing loop is stopped after 5 failures: 429 with Retry-After whatever the password, doubling up to 15 minutes', async () => {
    await using p = await startPlatform()
    const right = superPassword(p)
    const statuses: number[] = []
    for (let i = 0; i < 8; i++) statuses.push((await login(p, 'superadmin', `guess-${i}`)).status)
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429, 429, 429])
    // Even the right password is refused now, and costs the attacker nothing to learn.
    const locked = await login(p, 'superadmin', right)
    expect(locked.status).toBe(429)
    expect(locked.headers.get('set-cookie')).toBeNull()
    expect(Number(locked.headers.get('retry-after'))).toBe(60)
    // Each further lockout doubles: 2, 4, 8 minutes, then 15 at most.
    const waits: number[] = []
    for (let round = 0; round < 5; round++) {
      p.advance(Number((await login(p, 'superadmin', right)).headers.get('retry-after')) * 1000 + 1000)
      for (let i = 0; i < 5; i++) expect((await login(p, 'superadmin', `again-${round}-${i}`)).status).toBe(401)
      waits.push(Number((await login(p, 'superadmin', right)).headers.get('retry-after')))
    }
    expect(waits).toEqual([120, 240, 480, 900, 900])
    // After the lockout the right password works, and a success resets the count.
    p.advance(901_000)
    expect((await login(p, 'superadmin', right)).status).toBe(200)
    for (let i = 0; i < 4; i++) expect((await login(p, 'superadmin', `typo-${i}`)).status).toBe(401)
    expect((await login(p, 'superadmin', right)).status).toBe(200)
    for (let i = 0; i < 4; i++) expect((await login(p, 'superadmin', `typo2-${i}`)).status).toBe(401)
    expect((await login(p, 'superadmin', right)).status).toBe(200)
  })

  test('one address guessing across many accounts is stopped too, and parallel guesses gain nothing', async () => {
    await using p = await startPlatform()
    await insertAccount(p.platform.store, { name: 'vera', role: 'viewer', passwordHash: await hashPassword('vera-pass-1'), now: Date.now() })
    for (const name of ['alice', 'bob', 'carol', 'dave', 'erin']) expect((await login(p, name, 'password1')).status).toBe(401)
    const res = await login(p, 'vera', 'vera-pass-1')
    expect(res.status).toBe(429)
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0)
    p.advance(61_000)
    expect((await login(p, 'vera', 'vera-pass-1')).status).toBe(200)
    // 20 guesses at once: only as many are checked as the limit leaves.
    p.advance(16 * 60_000)
    const burst = await Promise.all(Array.from({ length: 20 }, (_, i) => login(p, 'superadmin', `parallel-${i}`).then((r) => r.status)))
    expect(burst.filter((s) => s === 401).length).toBeLessThanOrEqual(5)
    expect(burst.filter((s) => s === 429).length).toBeGreaterThanOrEqual(15)
  })

  test('the throttle forgets idle keys, counts IPv6 by /64, and a success clears only its own failures from an address', () => {
    let now = 0
    const opts = { maxFailures: 2, windowMs: 1000, firstLockMs: 1000, maxLockMs: 4000, maxKeys: 10 }
    const t = new LoginThrottle(() => now, opts)
    expect(addressKey('2001:db8:1:2:aaaa::1')).toBe(addressKey('2001:db8:1:2:ffff:1:2:3'))
    expect(addressKey('2001:db8:1:3::1')).not.toBe(addressKey('2001:db8:1:2::1'))
    expect(addressKey('::ffff:10.0.0.1')).toBe(addressKey('10.0.0.1'))
    const attempt = (account: string, ok: boolean, address = '10.0.0.1', throttle = t) => {
      const wait = throttle.begin(account, address)
      if (wait === 0) throttle.end(account, address, ok)
      return wait
    }
    expect(attempt('mallory', false)).toBe(0)
    expect(attempt('alice', true)).toBe(0) // alice's success leaves mallory's failure on the address
    expect(attempt('mallory', false, '10.0.0.2')).toBe(0)
    expect(attempt('bob', false)).toBe(0) // second failure from 10.0.0.1: locked
    expect(attempt('carol', true)).toBe(1)
    now += 1001
    expect(attempt('carol', true)).toBe(0)
    // Many names never grow the table past maxKeys.
    const small = new LoginThrottle(() => now, { ...opts, maxKeys: 3 })
    for (let i = 0; i < 50; i++) attempt(`name-${i}`, false, `10.1.0.${i}`, small)
    expect((small as unknown as { keys: Map<string, unknown> }).keys.size).toBeLessThanOrEqual(3)
    // Idle keys go: two minutes on, nothing is locked or remembered.
    now += 120_000
    expect(attempt('bob', true)).toBe(0)
  })
})
