import { describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { join } from 'node:path'
import { migrate, openDb } from '../../src/store/db.ts'
import { MIGRATIONS } from '../../src/store/migrations.ts'
import { tmpDir } from '../helpers/tmp.ts'

describe('store', () => {
  test('migrations apply once, in WAL mode, and are recorded', () => {
    using dir = tmpDir()
    const file = join(dir.path, 'muster.db')
    const db = openDb(file)
    expect(db.query<{ journal_mode: string }, []>('PRAGMA journal_mode').get()?.journal_mode).toBe('wal')
    const ids = db.query<{ id: number }, []>('SELECT id FROM schema_migrations ORDER BY id').all().map((r) => r.id)
    expect(ids).toEqual([...MIGRATIONS].map((m) => m.id).sort((a, b) => a - b))
    expect(migrate(db, MIGRATIONS)).toEqual([])
    db.close()
  })

  test('a failing migration leaves nothing half-applied', () => {
    using dir = tmpDir()
    const file = join(dir.path, 'muster.db')
    const bad = [...MIGRATIONS, { id: 999, name: 'broken', sql: 'CREATE TABLE half (x); THIS IS NOT SQL' }]
    expect(() => openDb(file, bad)).toThrow()
    const raw = new Database(file)
    expect(raw.query("SELECT name FROM sqlite_master WHERE name = 'half'").get()).toBeNull()
    expect(raw.query('SELECT COUNT(*) AS n FROM schema_migrations WHERE id = 999').get()).toEqual({ n: 0 })
    raw.close()
  })

  test('a store written by a newer muster is refused with a clear message', () => {
    using dir = tmpDir()
    const file = join(dir.path, 'muster.db')
    openDb(file, [...MIGRATIONS, { id: 9999, name: 'from the future', sql: 'CREATE TABLE future (x)' }]).close()
    expect(() => openDb(file)).toThrow(/written by a newer version of muster/)
  })
})
