// Two enrolls of one name at the same moment on a fleet token: both read the
// name as free, one inserts it, and the other loses on the primary key with
// its whole write undone, the token's use included (src/store/enroll-rows.ts,
// src/fabric/enroll.ts): a lost race never spends a use. The store is held
// while both arrive, so both reads come before either write, on both engines.
import { describe, expect, test } from 'bun:test'
import type { Store } from '../../src/store/db.ts'
import { VERSION } from '../../src/version.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import { onEngine, startPlatform } from '../helpers/platform.ts'
import { ENGINES } from '../helpers/postgres.ts'
import { waitFor } from '../helpers/tmp.ts'

/** Holds the store until `gate` settles: SQLite's one connection, or PostgreSQL's join_tokens table. */
function holdStore(store: Store, gate: Promise<void>): { held: Promise<void>; done: Promise<void> } {
  let held!: () => void
  const heldP = new Promise<void>((r) => (held = r))
  const done = store.tx(async (t) => {
    if (t.engine === 'postgres') await t.run('LOCK TABLE join_tokens IN ACCESS EXCLUSIVE MODE')
    held()
    await gate
  })
  return { held: heldP, done }
}

describe.each(ENGINES)('on %s', (engine) => {
  onEngine(engine)

  test('two enrolls of one name at once: one node, one 409, and the token keeps the loser\'s use', async () => {
    await using p = await startPlatform({ remoteDispatch: true })
    const fleet = await p.client.nodes.createJoinToken({ maxUses: 2 })
    const [c1, c2, c3] = await Promise.all([newCert(), newCert(), newCert()])
    let open!: () => void
    const hold = holdStore(p.platform.ctx.store, new Promise<void>((r) => (open = r)))
    await hold.held
    const limiter = p.platform.fabric.limits.enroll
    const both = [c1, c2].map((c) => enrollRaw(p.url, { token: fleet.token, nodeId: 'same-name', certPem: c.certPem, version: VERSION }))
    await waitFor(() => limiter.active === 2, { timeoutMs: 30_000, what: 'both enrolls in flight' })
    open()
    await hold.done
    const statuses = (await Promise.all(both)).map((r) => r.status).sort()
    expect(statuses).toEqual([200, 409])
    // One use spent: the token still enrolls one more node.
    const third = await enrollRaw(p.url, { token: fleet.token, nodeId: 'other-name', certPem: c3.certPem, version: VERSION })
    expect(third.status).toBe(200)
    const uses = await p.platform.ctx.store.get<{ uses: number }>('SELECT uses FROM join_tokens WHERE id = ?1', fleet.id)
    expect(Number(uses!.uses)).toBe(2)
  })
})
