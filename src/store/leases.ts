// The leases table (docs/storage-ha.md): one holder for each background loop, judged
// by the database's clock, with a fencing counter.
//
// Why it is built this way:
// - Expiry is compared with the database's clock, never a Platform's: two
//   Platforms whose clocks disagree still agree on whether a lease is free.
//   PostgreSQL's clock_timestamp() is the time of the statement (now() would be
//   the start of the transaction).
// - Taking a lease is one INSERT … ON CONFLICT DO UPDATE … WHERE: PostgreSQL
//   locks the row and re-checks the WHERE on its newest version, so of two
//   Platforms racing for a free lease exactly one gets a row back. SQLite runs
//   it under its one write lock.
// - `fence` grows whenever the holder changes. A holder's writes go through
//   `checkFence` inside their own transaction; on PostgreSQL it reads the lease
//   row FOR SHARE, which a takeover's UPDATE must wait for. So either the
//   write commits before the takeover (the new holder reads it), or the
//   takeover committed first and the check refuses the write: a paused old
//   holder cannot write after losing its lease. A holder paused inside such a
//   transaction would hold that row lock; fenced transactions therefore set
//   idle_in_transaction_session_timeout, so PostgreSQL ends them and the
//   takeover proceeds.
import type { Db, Engine } from './db.ts'

/** Milliseconds since the epoch by the database's clock, as SQL. */
export function dbNow(engine: Engine): string {
  return engine === 'postgres' ? '(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT' : "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)"
}

export interface LeaseRow {
  name: string
  holder: string
  fence: number
  expires_at: number
  acquired_at: number
}

/** The database's clock now (ms). */
export async function databaseTime(db: Db): Promise<number> {
  return (await db.get<{ t: number }>(`SELECT ${dbNow(db.engine)} AS t`))!.t
}

/**
 * Takes or renews `name` for `holder` for `ttlMs`; the fence it holds, or
 * null when another holder's lease has not expired. `exclusive`: no other
 * Platform can be using this store (SQLite: the serve lock), so take it anyway.
 */
export async function acquireLease(db: Db, name: string, holder: string, ttlMs: number, exclusive = false): Promise<{ fence: number; expiresAt: number } | null> {
  const now = dbNow(db.engine)
  const row = await db.get<{ fence: number; expires_at: number }>(
    `INSERT INTO leases (name, holder, fence, expires_at, acquired_at) VALUES (?1, ?2, 1, ${now} + ?3, ${now})
     ON CONFLICT (name) DO UPDATE SET
       fence = CASE WHEN leases.holder = excluded.holder THEN leases.fence ELSE leases.fence + 1 END,
       acquired_at = CASE WHEN leases.holder = excluded.holder THEN leases.acquired_at ELSE excluded.acquired_at END,
       holder = excluded.holder,
       expires_at = excluded.expires_at
     WHERE leases.holder = excluded.holder OR leases.expires_at <= ${now} OR ?4 = 1
     RETURNING fence, expires_at`,
    name,
    holder,
    ttlMs,
    exclusive ? 1 : 0,
  )
  return row ? { fence: row.fence, expiresAt: row.expires_at } : null
}

/** Gives a lease up at once (a clean stop), so another Platform need not wait for it to expire. */
export async function releaseLease(db: Db, name: string, holder: string): Promise<void> {
  await db.run(`UPDATE leases SET expires_at = 0 WHERE name = ?1 AND holder = ?2`, name, holder)
}

/**
 * True while `holder` holds `name` with `fence` and it has not expired; call it
 * inside the write's transaction. `exclusive` (SQLite, one Platform): nobody can
 * take the lease, so a renewal that came late (a stalled event loop) does not
 * refuse the write.
 */
export async function checkFence(t: Db, name: string, holder: string, fence: number, exclusive = false): Promise<boolean> {
  if (t.engine === 'postgres') await t.run(`SET LOCAL idle_in_transaction_session_timeout = '5s'`)
  const lock = t.engine === 'postgres' ? ' FOR SHARE' : ''
  const unexpired = exclusive ? '' : ` AND expires_at > ${dbNow(t.engine)}`
  const row = await t.get(`SELECT fence FROM leases WHERE name = ?1 AND holder = ?2 AND fence = ?3${unexpired}${lock}`, name, holder, fence)
  return row !== null
}

export async function allLeases(db: Db): Promise<(LeaseRow & { live: number })[]> {
  return db.all<LeaseRow & { live: number }>(`SELECT name, holder, fence, expires_at, acquired_at, CASE WHEN expires_at > ${dbNow(db.engine)} THEN 1 ELSE 0 END AS live FROM leases ORDER BY name`)
}
