// The credential generation of a node, advanced by one compare-and-set
// statement: two renewals (or a renewal racing an operator's rotate, here or
// on another Platform sharing the store) never both move it from the same
// generation, so a rotated-away credential can never be traded for the
// generation that replaced it.
import type { Db } from './db.ts'

/** Moves `name` from generation `from` to the next; the new generation, or null when it was not at `from` (or has no certificate). */
export async function advanceGeneration(db: Db, name: string, from: number, previousValidUntil: number): Promise<number | null> {
  const row = await db.get<{ generation: number }>(
    `UPDATE nodes SET generation = generation + 1, previous_valid_until = ?3
      WHERE name = ?1 AND generation = ?2 AND cert_sha256 IS NOT NULL RETURNING generation`,
    name, from, previousValidUntil,
  )
  return row ? Number(row.generation) : null
}
