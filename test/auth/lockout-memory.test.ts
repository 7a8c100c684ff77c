// Lockouts double while they come close together, and are forgotten after a
// quiet 15 minutes (docs/security.md, login throttling): a lockout today does
// not make next week's one longer. Through POST /login of a real Platform on a
// clock the test holds still, on both sides of the edge.
import { describe, expect, test } from 'bun:test'
import { LOGIN_THROTTLE } from '../../src/auth/throttle.ts'
import { startPlatform } from '../helpers/platform.ts'

async function lockedOnce() {
  const clock = { t: Math.floor(Date.now() / 1000) * 1000 }
  const p = await startPlatform({ clock: () => clock.t })
  const login = async (password: string) => {
    const r = await fetch(`${p.url}/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ identifier: 'superadmin', password }) })
    return { status: r.status, retryAfter: Number(r.headers.get('retry-after') ?? 0) }
  }
  /** Five failures in a row, then the lockout they cause: its length in seconds. */
  const lockout = async () => {
    for (let i = 0; i < LOGIN_THROTTLE.maxFailures; i++) expect((await login(`guess-${i}`)).status).toBe(401)
    const refused = await login('another-guess')
    expect(refused.status).toBe(429)
    return refused.retryAfter
  }
  const lockedAt = clock.t
  expect(await lockout()).toBe(LOGIN_THROTTLE.firstLockMs / 1000)
  const quietFrom = lockedAt + LOGIN_THROTTLE.firstLockMs
  return Object.assign(p, { clock, lockout, quietFrom })
}

describe('login throttling: lockouts are forgotten', () => {
  test('a lockout within 15 quiet minutes of the last one lasts twice as long', async () => {
    await using p = await lockedOnce()
    p.clock.t = p.quietFrom + LOGIN_THROTTLE.maxLockMs - 1
    expect(await p.lockout()).toBe((2 * LOGIN_THROTTLE.firstLockMs) / 1000)
  })

  test('after 15 quiet minutes the next lockout is the first again', async () => {
    await using p = await lockedOnce()
    p.clock.t = p.quietFrom + LOGIN_THROTTLE.maxLockMs
    expect(await p.lockout()).toBe(LOGIN_THROTTLE.firstLockMs / 1000)
  })
})
