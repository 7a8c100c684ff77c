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

export async function upsertConnection(db: Db, r: CloudConnectionRow): Promise<void> {
  await db.run(`INSERT INTO cloud_connections (provider, sealed, account, connected_at, connected_by) VALUES (?1, ?2, ?3, ?4, ?5)
     ON CONFLICT(provider) DO UPDATE SET sealed = ?2, account = ?3, connected_at = ?4, connected_by = ?5`, r.provider, r.sealed, r.account, r.connected_at, r.connected_by)
}

export async function getConnection(db: Db, provider: string): Promise<CloudConnectionRow | null> {
  return await db.get<CloudConnectionRow>('SELECT * FROM cloud_connections WHERE provider = ?1', provider)
}

export async function listConnections(db: Db): Promise<Omit<CloudConnectionRow, 'sealed'>[]> {
  return await db.all<Omit<CloudConnectionRow, 'sealed'>>('SELECT provider, account, connected_at, connected_by FROM cloud_connections ORDER BY provider')
}

export async function deleteConnection(db: Db, provider: string): Promise<boolean> {
  return (await db.run('DELETE FROM cloud_connections WHERE provider = ?1', provider)) === 1
}
