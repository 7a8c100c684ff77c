// Columns that carry project env values are sealed (src/context/vault.ts FieldSeal,
// docs/security.md). Rows an earlier version wrote in plain text are sealed in place
// when a Platform of this version starts; readers accept both until then.
import { log } from '../log.ts'
import type { Db } from './db.ts'

/** Every column that holds env values: its table, the row's key and the column. */
export const SEALED_COLUMNS = [
  { table: 'projects', key: 'name', column: 'env' },
  { table: 'projects', key: 'name', column: 'previous' },
  { table: 'node_assignments', key: 'node', column: 'replicas' },
  { table: 'office_placed_projects', key: 'name', column: 'spec_json' },
] as const

export type SealField = (table: string, row: string, column: string, text: string) => string

/** Seals the plain-text values of those columns (compare-and-set per row); how many. */
export async function sealPlainFields(db: Db, seal: SealField): Promise<number> {
  let n = 0
  for (const c of SEALED_COLUMNS) {
    const rows = await db.all<{ k: string; v: string }>(`SELECT ${c.key} AS k, ${c.column} AS v FROM ${c.table} WHERE ${c.column} IS NOT NULL AND ${c.column} NOT LIKE 'sealed1:%'`)
    for (const r of rows) n += await db.run(`UPDATE ${c.table} SET ${c.column} = ?1 WHERE ${c.key} = ?2 AND ${c.column} = ?3`, seal(c.table, r.k, c.column, r.v), r.k, r.v)
  }
  if (n > 0) log.info(`sealed ${n} stored value(s) holding project env under platform/master.key`)
  return n
}
