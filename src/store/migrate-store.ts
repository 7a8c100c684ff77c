// `muster admin migrate-store`: copies a Platform's SQLite store into an empty
// PostgreSQL database while the Platform is stopped, row for row, and checks
// the counts before the data directory is switched over.
//   1. the Platform is stopped (serve.lock free), and the SQLite store exists
//   2. the SQLite store is brought to this binary's schema
//   3. the target database is empty (no tables at all), else refused
//   4. the schema is created there, and every table copied in one transaction
//      (parents before children; identity sequences moved past the copied ids)
//   5. the row counts of every table match, else the transaction rolls back
//   6. platform/database-url names the new store, and muster.db is renamed
//      muster.db.moved-to-postgres so nothing can start on the stale copy
import { existsSync, renameSync } from 'node:fs'
import type { DataDir } from '../datadir.ts'
import { MusterError } from '../errors.ts'
import { serveLockHolder } from '../serve-lock.ts'
import { migrate, openStore } from './db.ts'
import { MIGRATIONS } from './migrations.ts'
import { DATABASE_URL_FILE, SQLITE_FILE } from './open.ts'
import type { Db, Param } from './sql.ts'
import { isPostgresUrl, openPostgres } from './sql-postgres.ts'

export interface MigrateResult {
  to: string
  tables: { table: string; rows: number }[]
  movedSqliteTo: string
}

/** Tables in an order where every table comes after those it references. */
async function tablesInOrder(db: Db): Promise<string[]> {
  const names = (await db.all<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name != 'schema_migrations' ORDER BY name")).map((r) => r.name)
  const deps = new Map<string, string[]>()
  for (const n of names) deps.set(n, (await db.all<{ table: string }>(`SELECT "table" FROM pragma_foreign_key_list('${n}')`)).map((r) => r.table))
  const out: string[] = []
  const visit = (n: string, path: string[]) => {
    if (out.includes(n) || path.includes(n)) return
    for (const d of deps.get(n) ?? []) if (d !== n) visit(d, [...path, n])
    out.push(n)
  }
  for (const n of names) visit(n, [])
  return out
}

async function identityColumns(db: Db): Promise<{ table: string; column: string }[]> {
  return db.all<{ table: string; column: string }>(
    "SELECT table_name AS \"table\", column_name AS \"column\" FROM information_schema.columns WHERE table_schema = current_schema() AND is_identity = 'YES'",
  )
}

export async function migrateStore(dataDir: DataDir, to: string, progress: (line: string) => void = () => {}): Promise<MigrateResult> {
  if (!isPostgresUrl(to)) throw new MusterError('invalid-request', '--to must be a postgres:// URL.')
  const pid = serveLockHolder(dataDir)
  if (pid !== null) throw new MusterError('already-running', `muster serve (pid ${pid}) is running on ${dataDir.root}; stop it first: the store must not change while it is copied.`, { pid })
  const file = dataDir.path(SQLITE_FILE)
  if (!existsSync(file)) throw new MusterError('not-configured', `${dataDir.root} has no SQLite store (${file}) to move.`)
  const source = await openStore(file)
  let target
  try {
    target = await openPostgres(to).catch((e: Error) => {
      throw new MusterError('store-unavailable', `Cannot reach the PostgreSQL store: ${e.message}`)
    })
  } catch (e) {
    await source.close()
    throw e
  }
  try {
    const existing = await target.get<{ n: number }>('SELECT COUNT(*) AS n FROM information_schema.tables WHERE table_schema = current_schema()')
    if ((existing?.n ?? 0) > 0) throw new MusterError('conflict', `The target database is not empty (${existing!.n} tables); migrate-store copies only into an empty database, so nothing was changed.`)
    await migrate(target, MIGRATIONS)
    const tables = await tablesInOrder(source)
    const counts: { table: string; rows: number }[] = []
    await target.tx(async (t) => {
      // The migrations seed a few rows (defaults); the copy replaces them.
      for (const table of [...tables].reverse()) await t.run(`DELETE FROM ${table}`)
      for (const table of tables) {
        const rows = await source.all<Record<string, Param>>(`SELECT * FROM ${table}`)
        if (rows.length > 0) {
          const cols = Object.keys(rows[0]!)
          const per = Math.max(1, Math.floor(30_000 / cols.length)) // PostgreSQL takes at most 65535 parameters a statement
          for (let i = 0; i < rows.length; i += per) {
            const chunk = rows.slice(i, i + per)
            const values = chunk.map((_, r) => `(${cols.map((_, c) => `?${r * cols.length + c + 1}`).join(', ')})`).join(', ')
            await t.run(`INSERT INTO ${table} (${cols.join(', ')}) VALUES ${values}`, ...chunk.flatMap((row) => cols.map((c) => row[c] ?? null)))
          }
        }
        const copied = (await t.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table}`))?.n ?? 0
        if (copied !== rows.length) throw new MusterError('internal', `${table}: copied ${copied} rows of ${rows.length}; nothing was changed.`)
        counts.push({ table, rows: rows.length })
        progress(`${table}: ${rows.length} row${rows.length === 1 ? '' : 's'}`)
      }
      for (const { table, column } of await identityColumns(t)) {
        await t.get(`SELECT setval(pg_get_serial_sequence('${table}', '${column}'), GREATEST((SELECT MAX(${column}) FROM ${table}), 1))`)
      }
    })
    await source.close()
    dataDir.writeSecret(DATABASE_URL_FILE, `${to}\n`)
    const moved = `${file}.moved-to-postgres`
    renameSync(file, moved)
    return { to: target.label, tables: counts, movedSqliteTo: moved }
  } finally {
    await source.close().catch(() => {})
    await target.close()
  }
}
