// The store at its edges: the enrollment audit's two budgets as
// pruning leaves them (exactly 500 each, the newest kept, neither touching the
// other); several Platforms opening one new PostgreSQL database at once; a
// deadlock between two writers retried, not failed; and `admin migrate-store`
// leaving PostgreSQL's identity sequences past the copied ids and the
// password out of what it prints.
import { describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { DataDir } from '../../src/datadir.ts'
import { openStore, type Store } from '../../src/store/db.ts'
import { AUDIT_MAX_ENTRIES, insertAudit, pruneAudit } from '../../src/store/enroll-audit.ts'
import { migrateStore } from '../../src/store/migrate-store.ts'
import { MIGRATIONS } from '../../src/store/migrations.ts'
import { openPostgres } from '../../src/store/sql-postgres.ts'
import { freshDatabase } from '../helpers/postgres.ts'
import { tmpDir } from '../helpers/tmp.ts'

const perBudget = async (s: Store) =>
  Object.fromEntries((await s.all<{ budget: string; n: number }>('SELECT budget, COUNT(*) AS n FROM enroll_audit GROUP BY budget ORDER BY budget')).map((r) => [r.budget, Number(r.n)]))

describe('store edges', () => {
  test(`pruning keeps exactly ${AUDIT_MAX_ENTRIES} entries per budget, the newest, and one budget never prunes the other`, async () => {
    using dir = tmpDir()
    const s = await openStore(join(dir.path, 'muster.db'))
    try {
      const now = Date.now()
      const add = async (outcome: string, nodeId: string) => insertAudit(s, { at: now, outcome, reason: null, node_id: nodeId, version: null })
      for (const n of ['w1', 'w2', 'w3']) await add('enrolled', n)
      // exactly at the budget: nothing goes
      for (let i = 0; i < AUDIT_MAX_ENTRIES; i++) await add('refused', `junk-${i}`)
      await pruneAudit(s, now)
      expect(await perBudget(s)).toEqual({ enrollments: 3, refusals: AUDIT_MAX_ENTRIES })
      // one over: the oldest refusal goes, and only it
      await add('invalid', 'junk-last')
      await pruneAudit(s, now)
      expect(await perBudget(s)).toEqual({ enrollments: 3, refusals: AUDIT_MAX_ENTRIES })
      const refusals = (await s.all<{ node_id: string }>("SELECT node_id FROM enroll_audit WHERE budget = 'refusals' ORDER BY id")).map((r) => r.node_id)
      expect(refusals[0]).toBe('junk-1')
      expect(refusals.at(-1)).toBe('junk-last')
      // a flood of refusals after the enrollments leaves every enrollment record
      for (let i = 0; i < 200; i++) await add('refused', `flood-${i}`)
      await pruneAudit(s, now)
      expect(await perBudget(s)).toEqual({ enrollments: 3, refusals: AUDIT_MAX_ENTRIES })
      expect((await s.all<{ node_id: string }>("SELECT node_id FROM enroll_audit WHERE budget = 'enrollments' ORDER BY id")).map((r) => r.node_id)).toEqual(['w1', 'w2', 'w3'])
      // the enrollment budget is pruned the same way, at its own 500
      for (let i = 0; i < AUDIT_MAX_ENTRIES - 2; i++) await add('node-exists', `again-${i}`)
      await pruneAudit(s, now)
      expect(await perBudget(s)).toEqual({ enrollments: AUDIT_MAX_ENTRIES, refusals: AUDIT_MAX_ENTRIES })
      expect((await s.get<{ node_id: string }>("SELECT node_id FROM enroll_audit WHERE budget = 'enrollments' ORDER BY id LIMIT 1"))?.node_id).toBe('w2')
    } finally {
      await s.close()
    }
  })

  test('several Platforms opening one new PostgreSQL database at once all start, and the schema is applied once', async () => {
    const db = await freshDatabase({ empty: true })
    try {
      const stores = await Promise.all(Array.from({ length: 4 }, () => openStore(db.url)))
      try {
        const ids = (await stores[0]!.all<{ id: number }>('SELECT id FROM schema_migrations ORDER BY id')).map((r) => Number(r.id))
        expect(ids).toEqual(MIGRATIONS.map((m) => m.id).sort((a, b) => a - b))
      } finally {
        for (const s of stores) await s.close()
      }
    } finally {
      await db.drop()
    }
  })

  test('two writers that deadlock on PostgreSQL both commit: the loser is retried', async () => {
    const db = await freshDatabase()
    const s = await openStore(db.url)
    try {
      await s.script('CREATE TABLE crossed (id INTEGER PRIMARY KEY, v INTEGER NOT NULL); INSERT INTO crossed VALUES (1, 0), (2, 0)')
      // Each takes one row, waits until the other holds the other row, then wants it: a deadlock on the first attempts.
      let locked = 0
      const bothLocked = () => new Promise<void>((resolve) => {
        const check = () => (locked >= 2 ? resolve() : setTimeout(check, 5))
        check()
      })
      let attempts = 0
      const writer = (first: number, second: number) =>
        s.tx(async (t) => {
          attempts++
          await t.run('UPDATE crossed SET v = v + 1 WHERE id = ?1', first)
          if (++locked <= 2) await bothLocked()
          await t.run('UPDATE crossed SET v = v + 1 WHERE id = ?1', second)
        })
      await Promise.all([writer(1, 2), writer(2, 1)])
      expect(attempts).toBe(3) // one deadlock, one retry
      expect((await s.all<{ v: number }>('SELECT v FROM crossed ORDER BY id')).map((r) => Number(r.v))).toEqual([2, 2])
    } finally {
      await s.close()
      await db.drop()
    }
  })

  test('migrate-store: the next row after the move gets a new id, and the password never appears in what it reports', async () => {
    using dir = tmpDir()
    const dataDir = new DataDir(dir.path)
    dataDir.ensureDir('platform')
    const sqlite = await openStore(dataDir.path('muster.db'))
    const now = Date.now()
    for (const n of ['w1', 'w2', 'w3']) await insertAudit(sqlite, { at: now, outcome: 'enrolled', reason: null, node_id: n, version: null })
    await sqlite.close()
    const db = await freshDatabase({ empty: true })
    try {
      // The test server trusts local connections, so a password in the URL is accepted and ignored.
      const u = new URL(db.url)
      u.username = u.username || 'postgres'
      u.password = 'hunter2-secret'
      const moved = await migrateStore(dataDir, u.toString())
      expect(JSON.stringify(moved)).not.toContain('hunter2-secret')
      expect(moved.to).toContain('***')
      const pg = await openPostgres(u.toString())
      try {
        expect(pg.label).not.toContain('hunter2-secret')
        // The next enroll's audit record: a new id past the copied ones, on every identity column.
        await insertAudit(pg, { at: now, outcome: 'enrolled', reason: null, node_id: 'w4', version: null })
        expect((await pg.all<{ id: number; node_id: string }>('SELECT id, node_id FROM enroll_audit ORDER BY id')).map((r) => [Number(r.id), r.node_id])).toEqual([
          [1, 'w1'],
          [2, 'w2'],
          [3, 'w3'],
          [4, 'w4'],
        ])
        const identity = await pg.all<{ table: string; column: string }>(
          "SELECT table_name AS \"table\", column_name AS \"column\" FROM information_schema.columns WHERE table_schema = current_schema() AND is_identity = 'YES'",
        )
        for (const { table, column } of identity) {
          const max = Number((await pg.get<{ m: number | null }>(`SELECT MAX(${column}) AS m FROM ${table}`))?.m ?? 0)
          if (max === 0) continue
          const next = Number((await pg.get<{ n: number }>(`SELECT nextval(pg_get_serial_sequence('${table}', '${column}')) AS n`))!.n)
          expect(`${table}.${column} next ${next > max ? 'after' : 'within'} the copied ids`).toBe(`${table}.${column} next after the copied ids`)
        }
      } finally {
        await pg.close()
      }
    } finally {
      await db.drop()
    }
  })
})
