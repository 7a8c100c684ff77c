// The node_probes table: readiness probe results, written in batches by the
// Platform holding the probe lease and read by every Platform on the store.
import type { Db } from './db.ts'

export interface ProbeRow {
  name: string
  cert_sha256: string
  ok: number
  at: number
  reason: string | null
}

export async function writeProbes(db: Db, rows: ProbeRow[]): Promise<void> {
  for (const r of rows) {
    await db.run(
      `INSERT INTO node_probes (name, cert_sha256, ok, at, reason) VALUES (?1, ?2, ?3, ?4, ?5)
       ON CONFLICT (name) DO UPDATE SET cert_sha256 = ?2, ok = ?3, at = ?4, reason = ?5`,
      r.name, r.cert_sha256, r.ok, r.at, r.reason,
    )
  }
}

/** Results written at or after `since` (every one when 0). */
export async function probesSince(db: Db, since: number): Promise<ProbeRow[]> {
  return db.all<ProbeRow>('SELECT name, cert_sha256, ok, at, reason FROM node_probes WHERE at >= ?1', since)
}
