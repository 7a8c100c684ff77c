// The sign-in store on both engines: a flow and a CLI grant are taken once
// (two takers race, one wins), an sso account never lands on a taken name, and
// a break-glass under --oidc-only counts for its account (or every one) only.
import { describe, expect, test } from 'bun:test'
import { insertAccount, getAccount } from '../../src/store/accounts.ts'
import { createSsoAccount, insertPasswordBreakGlass, insertSsoFlow, insertSsoGrant, passwordBreakGlassSince, ssoAccountOf, takeSsoFlow, takeSsoGrant } from '../../src/store/sso.ts'
import { ENGINES, freshStore } from '../helpers/postgres.ts'

const fresh = freshStore

describe.each(ENGINES)('sso store on %s', (engine) => {
  test('a flow and a grant are taken once, even by two at the same moment; an expired one is gone', async () => {
    await using at = await fresh(engine)
    const db = at.store
    const now = Date.now()
    await insertSsoFlow(db, 'state-1', { kind: 'web', nonce: 'n', verifier: 'v', binding: 'b', expires_at: now + 60_000 }, now)
    const both = await Promise.all([takeSsoFlow(db, 'state-1', now), takeSsoFlow(db, 'state-1', now)])
    expect(both.filter(Boolean)).toHaveLength(1)
    expect(both.find(Boolean)).toMatchObject({ kind: 'web', nonce: 'n', verifier: 'v', binding: 'b' })
    await insertSsoFlow(db, 'state-2', { kind: 'web', nonce: 'n', verifier: 'v', expires_at: now + 1 }, now)
    expect(await takeSsoFlow(db, 'state-2', now + 2)).toBeNull()
    await insertSsoGrant(db, 'grant-1', { account: 'alice', cliChallenge: 'c', sessionExpiresAt: now + 3600_000, expiresAt: now + 60_000 }, now)
    // A grant is not a flow: the callback's lookup never finds it.
    expect(await takeSsoFlow(db, 'grant-1', now)).toBeNull()
    const grants = await Promise.all([takeSsoGrant(db, 'grant-1', now), takeSsoGrant(db, 'grant-1', now)])
    expect(grants.filter(Boolean)).toHaveLength(1)
    expect(Number(grants.find(Boolean)!.session_expires_at)).toBe(now + 3600_000)
  })

  test('an sso account is created bound to its subject, never over a taken name', async () => {
    await using at = await fresh(engine)
    const db = at.store
    const now = Date.now()
    expect(await createSsoAccount(db, { name: 'alice@example.com', role: 'operator', issuer: 'https://idp', subject: 's-1', now })).toBe(true)
    expect(await ssoAccountOf(db, 'https://idp', 's-1')).toBe('alice@example.com')
    expect(await getAccount(db, 'alice@example.com')).toMatchObject({ origin: 'sso', password_hash: null, role: 'operator' })
    await insertAccount(db, { name: 'bob@example.com', role: 'viewer', passwordHash: 'h', now })
    expect(await createSsoAccount(db, { name: 'bob@example.com', role: 'superadmin', issuer: 'https://idp', subject: 's-2', now })).toBe(false)
    expect(await getAccount(db, 'bob@example.com')).toMatchObject({ origin: 'local', role: 'viewer', password_hash: 'h' })
    expect(await ssoAccountOf(db, 'https://idp', 's-2')).toBeNull()
  })

  test('a password break-glass opens its account, or every account, from its time on', async () => {
    await using at = await fresh(engine)
    const db = at.store
    const now = Date.now()
    await insertPasswordBreakGlass(db, 'bg1', 'superadmin', now)
    expect(await passwordBreakGlassSince(db, 'superadmin', now - 1)).toBe(true)
    expect(await passwordBreakGlassSince(db, 'alice', now - 1)).toBe(false)
    expect(await passwordBreakGlassSince(db, 'superadmin', now)).toBe(false)
    await insertPasswordBreakGlass(db, 'bg2', null, now + 5)
    expect(await passwordBreakGlassSince(db, 'alice', now)).toBe(true)
  })
})
