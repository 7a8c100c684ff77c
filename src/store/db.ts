// Opens the embedded SQLite store (WAL, NORMAL sync, busy timeout) and applies
// numbered migrations inside one transaction. A store that holds a migration
// this binary does not know was written by a newer muster and is refused.
import { Database } from 'bun:sqlite'
import { chmodSync } from 'node:fs'
import { MusterError } from '../errors.ts'
import { MIGRATIONS, type Migration } from './migrations.ts'

export type Db = Database

export function openDb(file: string, migrations: readonly Migration[] = MIGRATIONS): Db {
  const db = new Database(file, { create: true, strict: true })
  db.exec('PRAGMA journal_mode = WAL')
  db.exec('PRAGMA synchronous = NORMAL')
  db.exec('PRAGMA busy_timeout = 5000')
  db.exec('PRAGMA foreign_keys = ON')
  for (const f of [file, `${file}-wal`, `${file}-shm`]) {
    try {
      chmodSync(f, 0o600)
    } catch {}
  }
  try {
    migrate(db, migrations)
  } catch (e) {
    db.close()
    throw e
  }
  return db
}

export function migrate(db: Db, migrations: readonly Migration[]): number[] {
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (id INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)')
  const known = new Set(migrations.map((m) => m.id))
  const applied = db.query<{ id: number }, []>('SELECT id FROM schema_migrations ORDER BY id').all().map((r) => r.id)
  const unknown = applied.filter((id) => !known.has(id))
  if (unknown.length > 0) {
    throw new MusterError(
      'data-dir-newer',
      `This data directory was written by a newer version of muster (it holds migration ${unknown.join(', ')}, which this binary does not know). Upgrade muster, or use another --data-dir.`,
    )
  }
  const done = new Set(applied)
  const pending = [...migrations].sort((a, b) => a.id - b.id).filter((m) => !done.has(m.id))
  if (pending.length === 0) return []
  db.transaction(() => {
    for (const m of pending) {
      db.exec(m.sql)
      db.query('INSERT INTO schema_migrations (id, name, applied_at) VALUES (?1, ?2, ?3)').run(m.id, m.name, new Date().toISOString())
    }
  }).immediate()
  return pending.map((m) => m.id)
}
