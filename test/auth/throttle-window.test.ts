// The failed-login window forgets (docs/security.md, login throttling): failures
// count only within their 5 minutes, so old typos never add up to a lockout.
// Through POST /login of a real Platform, on a clock the test holds still and
// moves by hand, on both sides of the window's edge.
import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { LOGIN_THROTTLE } from '../../src/auth/throttle.ts'
import { startPlatform } from '../helpers/platform.ts'

const WINDOW = LOGIN_THROTTLE.windowMs

async function held() {
  const clock = { t: Math.floor(Date.now() / 1000) * 1000 }
  const p = await startPlatform({ clock: () => clock.t })
  const right = readFileSync(`${p.dataDir}/platform/initial-superadmin-password`, 'utf8').trim()
  const login = async (password: string) =>
    (await fetch(`${p.url}/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ identifier: 'superadmin', password }) })).status
  return Object.assign(p, { clock, right, login })
}

describe('login throttling: the window forgets', () => {
  test('a typo every 76 s never locks the account out: at most 4 fall inside any 5 minutes', async () => {
    await using p = await held()
    const statuses: number[] = []
    for (let i = 0; i < 12; i++) {
      statuses.push(await p.login(`typo-${i}`))
      p.clock.t += 76_000
    }
    expect(statuses).toEqual(new Array(12).fill(401))
    // Twelve failures in 15 minutes, none within 5 minutes of four others: the right password works.
    expect(await p.login(p.right)).toBe(200)
  })

  test('a failure counts until 5 minutes have passed, not at the 5 minutes', async () => {
    // The 5th failure within the window locks (the next attempt is refused whatever the password) …
    {
      await using p = await held()
      const first = p.clock.t
      expect(await p.login('old-typo')).toBe(401)
      p.clock.t = first + 1_000
      for (let i = 0; i < 3; i++) expect(await p.login(`typo-${i}`)).toBe(401)
      p.clock.t = first + WINDOW - 1
      expect(await p.login('fifth')).toBe(401)
      expect(await p.login(p.right)).toBe(429)
    }
    // … and at the very millisecond the first one is 5 minutes old it no longer counts.
    {
      await using p = await held()
      const first = p.clock.t
      expect(await p.login('old-typo')).toBe(401)
      p.clock.t = first + 1_000
      for (let i = 0; i < 3; i++) expect(await p.login(`typo-${i}`)).toBe(401)
      p.clock.t = first + WINDOW
      expect(await p.login('fifth')).toBe(401)
      expect(await p.login(p.right)).toBe(200)
    }
  })
})
