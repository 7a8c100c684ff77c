// The platforms table: every Platform sharing the store records itself (its
// id, node-facing URLs and when it was last seen, by the database's clock).
import type { Db } from './db.ts'
import { dbNow } from './leases.ts'

export interface PlatformRow {
  id: string
  api_url: string
  enrollment_url: string | null
  fingerprint: string | null
  version: string
  started_at: number
  last_seen_at: number
}

/** Records (or refreshes) one Platform; last_seen_at is the database's time. */
export async function recordPlatform(db: Db, p: Omit<PlatformRow, 'last_seen_at' | 'started_at'>): Promise<void> {
  const now = dbNow(db.engine)
  await db.run(
    `INSERT INTO platforms (id, api_url, enrollment_url, fingerprint, version, started_at, last_seen_at) VALUES (?1, ?2, ?3, ?4, ?5, ${now}, ${now})
     ON CONFLICT (id) DO UPDATE SET api_url = ?2, enrollment_url = ?3, fingerprint = ?4, version = ?5, last_seen_at = ${now}`,
    p.id, p.api_url, p.enrollment_url, p.fingerprint, p.version,
  )
}

/** Platforms seen within `withinMs` (database clock), oldest first. */
export async function livePlatforms(db: Db, withinMs: number): Promise<PlatformRow[]> {
  return db.all<PlatformRow>(`SELECT * FROM platforms WHERE last_seen_at > ${dbNow(db.engine)} - ?1 ORDER BY started_at, id`, withinMs)
}

/** A Platform stopping cleanly: no longer live for anyone. Old rows go after a day. */
export async function forgetPlatform(db: Db, id: string): Promise<void> {
  await db.run('DELETE FROM platforms WHERE id = ?1', id)
  await db.run(`DELETE FROM platforms WHERE last_seen_at < ${dbNow(db.engine)} - 86400000`)
}
