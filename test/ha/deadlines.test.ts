// Lease deadlines on both sides, on PostgreSQL as Platforms sharing
// a store use them: a Platform runs a leader loop only until TTL − renew after
// it *sent* its last successful renewal (never past the database's expiry,
// however late the answer came), and a fenced write is refused once the lease
// expired by the database's clock even when nobody took it over yet.
import { afterAll, beforeAll, describe, expect, spyOn, test } from 'bun:test'
import { openStore, type Store } from '../../src/store/db.ts'
import { acquireLease, checkFence, databaseTime, dbNow } from '../../src/store/leases.ts'
import { livePlatforms, recordPlatform } from '../../src/store/platforms.ts'
import { LIVE_MS } from '../../src/ha/live-platforms.ts'
import { LeaseLost, Leases } from '../../src/context/leases.ts'
import { freshDatabase } from '../helpers/postgres.ts'
import { waitFor } from '../helpers/tmp.ts'

const TTL = 600

/** The store, with `onAnswer` run as each statement's answer arrives (before the caller sees it). */
function answering(store: Store, onAnswer: () => void): Store {
  return new Proxy(store, {
    get(target, key) {
      const v = Reflect.get(target, key, target) as unknown
      if (key === 'get') {
        return async (...args: Parameters<Store['get']>) => {
          const r = await target.get(...args)
          onAnswer()
          return r
        }
      }
      return typeof v === 'function' ? v.bind(target) : v
    },
  })
}

describe('lease deadlines on postgres', () => {
  let db: { url: string; drop(): Promise<void> }
  let store: Store
  beforeAll(async () => {
    db = await freshDatabase()
    store = await openStore(db.url)
    await store.script('CREATE TABLE deadline_writes (id INTEGER PRIMARY KEY)')
  })
  afterAll(async () => {
    await store.close()
    await db.drop()
  })

  test('a lease is run until TTL − renew after its renewal was sent, not a moment longer, however late the answer came', async () => {
    // The monotonic clock the lease reads, set by the test; each answer arrives `delay` ms after it was asked.
    let clock = 1_000_000
    let delay = 0
    let failing = false
    const now = spyOn(performance, 'now').mockImplementation(() => clock)
    try {
      const leases = new Leases(
        answering(store, () => {
          if (failing) throw new Error('the store is unreachable')
          clock += delay
        }),
        'deadline-holder',
        TTL,
      )
      const lease = leases.lease('placement')
      const window = TTL - leases.renewMs
      for (const late of [0, 100, window - 1]) {
        delay = late
        const sent = clock
        await leases.tryAll()
        expect(clock).toBe(sent + late)
        // Held from the answer until `sent + window`, whatever `late` was.
        expect(lease.held).toBe(true)
        clock = sent + window - 1
        expect(lease.held).toBe(true)
        clock = sent + window
        expect(lease.held).toBe(false)
        clock = sent + window + TTL
        expect(lease.held).toBe(false)
      }
      // An answer that came after the whole window: the lease may already be another's; never run on it.
      delay = window
      await leases.tryAll()
      expect(lease.held).toBe(false)
      // The store cannot be asked at all: the last deadline runs out by itself.
      delay = 0
      const sent = clock
      await leases.tryAll()
      expect(lease.held).toBe(true)
      failing = true // renewals fail from now on: the deadline of the last one that answered stands
      clock = sent + window - 1
      await leases.tryAll()
      expect(lease.held).toBe(true)
      clock = sent + window
      await leases.tryAll()
      expect(lease.held).toBe(false)
    } finally {
      now.mockRestore()
    }
  })

  test('a fenced write is refused once the lease expired by the database clock, though nobody took it over', async () => {
    const got = await acquireLease(store, 'expiry', 'holder-a', 60_000)
    expect(got?.fence).toBe(1)
    const fenceOk = () => store.tx((t) => checkFence(t, 'expiry', 'holder-a', 1))
    // well before the expiry: passes
    expect(await fenceOk()).toBe(true)
    // the expiry is now (by the database clock): refused
    await store.run(`UPDATE leases SET expires_at = ${dbNow('postgres')} WHERE name = 'expiry'`)
    expect(await fenceOk()).toBe(false)
    // past it: refused; no other holder took it meanwhile
    await store.run(`UPDATE leases SET expires_at = ${dbNow('postgres')} - 1 WHERE name = 'expiry'`)
    expect(await fenceOk()).toBe(false)
    expect(await store.get<{ holder: string; fence: number }>("SELECT holder, fence FROM leases WHERE name = 'expiry'")).toEqual({ holder: 'holder-a', fence: 1 })
    // renewed: passes again
    expect((await acquireLease(store, 'expiry', 'holder-a', 60_000))?.fence).toBe(1)
    expect(await fenceOk()).toBe(true)
  })

  test('a Platform whose renewals stopped writes nothing once its lease expired, even while it still believes it holds it', async () => {
    const leases = new Leases(store, 'paused', TTL)
    const lease = leases.lease('audit-prune')
    await leases.tryAll() // no timer: renewals stop here, as in a paused process
    await lease.fenced((t) => t.run('INSERT INTO deadline_writes (id) VALUES (1)'))
    const expiresAt = Number((await store.get<{ expires_at: number }>("SELECT expires_at FROM leases WHERE name = 'audit-prune'"))!.expires_at)
    await waitFor(async () => (await databaseTime(store)) > expiresAt, { what: 'the lease to expire by the database clock', intervalMs: 50 })
    // Nobody took it: the row still names this holder and its fence.
    expect(await store.get<{ holder: string }>("SELECT holder FROM leases WHERE name = 'audit-prune'")).toEqual({ holder: 'paused' })
    await expect(lease.fenced((t) => t.run('INSERT INTO deadline_writes (id) VALUES (2)'))).rejects.toBeInstanceOf(LeaseLost)
    expect((await store.all<{ id: number }>('SELECT id FROM deadline_writes ORDER BY id')).map((r) => Number(r.id))).toEqual([1])
  })

  test(`a Platform is offered to nodes while seen within ${LIVE_MS / 1000} s by the database clock, and not once that much has passed`, async () => {
    const seenAgo = async (id: string, ms: number) => {
      await recordPlatform(store, { id, api_url: `http://${id}`, enrollment_url: null, fingerprint: null, version: '0.0.0' })
      await store.run(`UPDATE platforms SET last_seen_at = ${dbNow('postgres')} - ?2 WHERE id = ?1`, id, ms)
    }
    await seenAgo('fresh', 0)
    await seenAgo('recent', LIVE_MS - 2_000)
    await seenAgo('at-the-edge', LIVE_MS)
    await seenAgo('gone', LIVE_MS + 1)
    await seenAgo('long-gone', 86_400_000)
    expect((await livePlatforms(store, LIVE_MS)).map((r) => r.id).sort()).toEqual(['fresh', 'recent'])
  })
})
