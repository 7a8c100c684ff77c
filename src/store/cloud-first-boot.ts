// The sealed first-boot data of a provision (cloud_provisions.first_boot):
// written once, before anything is sent to the provider, and never replaced,
// so every attempt sends the same bytes; dropped when the provision stops
// starting (ready, failed, released).
import type { Db } from './db.ts'

/** Keeps the sealed first-boot data; false when the provision already has some (it wins: use that). */
export function setFirstBoot(db: Db, id: string, sealed: Uint8Array): boolean {
  return db.query(`UPDATE cloud_provisions SET first_boot = ?2 WHERE id = ?1 AND first_boot IS NULL AND state = 'creating'`).run(id, sealed).changes === 1
}

export function getFirstBoot(db: Db, id: string): Uint8Array | null {
  return db.query<{ first_boot: Uint8Array | null }, [string]>('SELECT first_boot FROM cloud_provisions WHERE id = ?1').get(id)?.first_boot ?? null
}

export function dropFirstBoot(db: Db, id: string): void {
  db.query('UPDATE cloud_provisions SET first_boot = NULL WHERE id = ?1').run(id)
}
