// The cloud_connections table: one row per provider, its credentials sealed
// (src/cloud/seal.ts). Nothing here ever holds them in the clear.
import type { Db } from './db.ts'

export interface CloudConnectionRow {
  provider: string
  sealed: Uint8Array
  account: string | null
  connected_at: number
  connected_by: string | null
}

export function upsertConnection(db: Db, r: CloudConnectionRow): void {
  db.query(
    `INSERT INTO cloud_connections (provider, sealed, account, connected_at, connected_by) VALUES (?1, ?2, ?3, ?4, ?5)
     ON CONFLICT(provider) DO UPDATE SET sealed = ?2, account = ?3, connected_at = ?4, connected_by = ?5`,
  ).run(r.provider, r.sealed, r.account, r.connected_at, r.connected_by)
}

export function getConnection(db: Db, provider: string): CloudConnectionRow | null {
  return db.query<CloudConnectionRow, [string]>('SELECT * FROM cloud_connections WHERE provider = ?1').get(provider)
}

export function listConnections(db: Db): Omit<CloudConnectionRow, 'sealed'>[] {
  return db.query<Omit<CloudConnectionRow, 'sealed'>, []>('SELECT provider, account, connected_at, connected_by FROM cloud_connections ORDER BY provider').all()
}

export function deleteConnection(db: Db, provider: string): boolean {
  return db.query('DELETE FROM cloud_connections WHERE provider = ?1').run(provider).changes === 1
}
