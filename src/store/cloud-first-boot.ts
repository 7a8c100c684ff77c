// The sealed first-boot data of a provision (cloud_provisions.first_boot):
// written once, before anything is sent to the provider, and never replaced,
// so every attempt sends the same bytes; dropped when the provision stops
// starting (ready, failed, released).
import type { Db } from './db.ts'

/** Keeps the sealed first-boot data; false when the provision already has some (it wins: use that). */
export async function setFirstBoot(db: Db, id: string, sealed: Uint8Array): Promise<boolean> {
  return (await db.run(`UPDATE cloud_provisions SET first_boot = ?2 WHERE id = ?1 AND first_boot IS NULL AND state = 'creating'`, id, sealed)) === 1
}

export async function getFirstBoot(db: Db, id: string): Promise<Uint8Array | null> {
  const row = await db.get<{ first_boot: Uint8Array | null }>('SELECT first_boot FROM cloud_provisions WHERE id = ?1', id)
  return row?.first_boot ?? null
}

export async function dropFirstBoot(db: Db, id: string): Promise<void> {
  await db.run('UPDATE cloud_provisions SET first_boot = NULL WHERE id = ?1', id)
}
