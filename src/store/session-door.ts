// Sessions and an office's local door (item 5): a password session
// opened on a joined office (a break-glass held the door open) names that
// membership, and ends when the door closes again.
import type { Db } from './db.ts'

export async function markSessionMembership(db: Db, idHash: string, membership: string): Promise<void> {
  await db.run('UPDATE sessions SET membership = ?2 WHERE id_hash = ?1', idHash, membership)
}

/** The membership a session was opened under (null: opened on a standalone Platform, or by a vouch). */
export async function sessionMembership(db: Db, idHash: string): Promise<string | null> {
  return (await db.get<{ membership: string | null }>('SELECT membership FROM sessions WHERE id_hash = ?1', idHash))?.membership ?? null
}

export async function endSession(db: Db, idHash: string): Promise<void> {
  await db.run('DELETE FROM sessions WHERE id_hash = ?1', idHash)
}
