// The secrets table: the Platform's own secrets, each sealed (src/context/vault.ts).
import type { Db } from './db.ts'

export async function getSecret(db: Db, name: string): Promise<{ sealed: Uint8Array } | null> {
  return db.get<{ sealed: Uint8Array }>('SELECT sealed FROM secrets WHERE name = ?1', name)
}

export async function upsertSecret(db: Db, name: string, sealed: Uint8Array, now: number): Promise<void> {
  await db.run('INSERT INTO secrets (name, sealed, updated_at) VALUES (?1, ?2, ?3) ON CONFLICT(name) DO UPDATE SET sealed = ?2, updated_at = ?3', name, sealed, now)
}

/** False when a secret of that name exists already (the first writer wins). */
export async function insertSecret(db: Db, name: string, sealed: Uint8Array, now: number): Promise<boolean> {
  return (await db.run('INSERT INTO secrets (name, sealed, updated_at) VALUES (?1, ?2, ?3) ON CONFLICT(name) DO NOTHING', name, sealed, now)) === 1
}

export async function deleteSecret(db: Db, name: string): Promise<void> {
  await db.run('DELETE FROM secrets WHERE name = ?1', name)
}

export async function listSecretNames(db: Db, prefix: string): Promise<string[]> {
  const rows = await db.all<{ name: string }>('SELECT name FROM secrets WHERE substr(name, 1, ?2) = ?1 ORDER BY name', prefix, prefix.length)
  return rows.map((r) => r.name)
}
