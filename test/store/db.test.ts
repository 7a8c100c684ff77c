import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { statSync } from 'node:fs'
import { join } from 'node:path'
import { openStore, type Db, type Store } from '../../src/store/db.ts'
import { MIGRATIONS } from '../../src/store/migrations.ts'
import { takeTokenUse } from '../../src/store/join-tokens.ts'
import { insertNode } from '../../src/store/nodes.ts'
import { advanceGeneration } from '../../src/store/node-generation.ts'
import { mintJoinToken } from '../../src/fabric/join-tokens.ts'
import { tmpDir } from '../helpers/tmp.ts'
import { ENGINES, freshDatabase, type Engine } from '../helpers/postgres.ts'

/** A fresh store URL for the engine: a file in a temp dir, or a new PostgreSQL database. */
async function freshUrl(engine: Engine): Promise<{ url: string; [Symbol.asyncDispose](): Promise<void> }> {
  if (engine === 'postgres') {
    const db = await freshDatabase({ empty: true })
    return { url: db.url, [Symbol.asyncDispose]: () => db.drop() }
  }
  const dir = tmpDir()
  return { url: join(dir.path, 'muster.db'), [Symbol.asyncDispose]: async () => dir[Symbol.dispose]() }
}

describe.each(ENGINES)('store on %s', (engine) => {
  test('migrations apply once and are recorded', async () => {
    await using at = await freshUrl(engine)
    const store = await openStore(at.url)
    const ids = (await store.all<{ id: number }>('SELECT id FROM schema_migrations ORDER BY id')).map((r) => r.id)
    expect(ids).toEqual([...MIGRATIONS].map((m) => m.id).sort((a, b) => a - b))
    await store.close()
    // a second open applies nothing new and keeps the data
    const again = await openStore(at.url)
    expect((await again.all('SELECT id FROM schema_migrations')).length).toBe(MIGRATIONS.length)
    await again.close()
  })

  test('a failing migration leaves nothing half-applied', async () => {
    await using at = await freshUrl(engine)
    const bad = [...MIGRATIONS, { id: 999, name: 'broken', sql: 'CREATE TABLE half (x INTEGER); THIS IS NOT SQL' }]
    await expect(openStore(at.url, bad)).rejects.toThrow()
    const store = await openStore(at.url, MIGRATIONS)
    const table = engine === 'sqlite' ? "SELECT name FROM sqlite_master WHERE name = 'half'" : "SELECT tablename FROM pg_tables WHERE tablename = 'half'"
    expect(await store.get(table)).toBeNull()
    expect(await store.get('SELECT COUNT(*) AS n FROM schema_migrations WHERE id = 999')).toEqual({ n: 0 })
    await store.close()
  })

  test('a store written by a newer muster is refused with a clear message', async () => {
    await using at = await freshUrl(engine)
    await (await openStore(at.url, [...MIGRATIONS, { id: 9999, name: 'from the future', sql: 'CREATE TABLE future (x INTEGER)' }])).close()
    await expect(openStore(at.url)).rejects.toThrow(/written by a newer version of muster/)
  })

  test('integers come back as numbers, blobs as bytes, and transactions roll back whole', async () => {
    await using at = await freshUrl(engine)
    const store = await openStore(at.url)
    const big = Date.UTC(2099, 0, 1)
    await store.run('INSERT INTO node_tombstones (name, removed_at) VALUES (?1, ?2)', 'w1', big)
    expect(await store.get('SELECT removed_at FROM node_tombstones WHERE name = ?1', 'w1')).toEqual({ removed_at: big })
    await store.run('INSERT INTO secrets (name, sealed, updated_at) VALUES (?1, ?2, ?3)', 'x', new Uint8Array([0, 1, 255]), 1)
    const row = await store.get<{ sealed: Uint8Array }>('SELECT sealed FROM secrets WHERE name = ?1', 'x')
    expect([...row!.sealed]).toEqual([0, 1, 255])
    await expect(
      store.tx(async (t) => {
        await t.run('INSERT INTO node_tombstones (name, removed_at) VALUES (?1, ?2)', 'w2', 1)
        throw new Error('abort')
      }),
    ).rejects.toThrow('abort')
    expect(await store.get('SELECT name FROM node_tombstones WHERE name = ?1', 'w2')).toBeNull()
    await store.close()
  })

  test('a statement issued while a transaction is open is not swallowed by its rollback', async () => {
    await using at = await freshUrl(engine)
    const store = await openStore(at.url)
    let release!: () => void
    const held = new Promise<void>((r) => (release = r))
    const tx = store
      .tx(async (t) => {
        await t.run('INSERT INTO node_tombstones (name, removed_at) VALUES (?1, ?2)', 'in-tx', 1)
        await held
        throw new Error('rollback')
      })
      .catch(() => 'rolled back')
    const outside = store.run('INSERT INTO node_tombstones (name, removed_at) VALUES (?1, ?2)', 'outside', 1)
    release()
    expect(await tx).toBe('rolled back')
    await outside
    expect((await store.all<{ name: string }>('SELECT name FROM node_tombstones ORDER BY name')).map((r) => r.name)).toEqual(['outside'])
    await store.close()
  })

  test('transactions started together each commit or roll back on their own, and are told only once committed', async () => {
    await using at = await freshUrl(engine)
    const store = await openStore(at.url)
    const other = await openStore(at.url) // a second connection: it sees only what is committed
    await store.run('INSERT INTO node_tombstones (name, removed_at) VALUES (?1, ?2)', 'taken', 1)
    // Hold the store busy so the next transactions queue up together (SQLite commits such a queue as one group).
    let release!: () => void
    const held = new Promise<void>((r) => (release = r))
    // Grouped (PostgreSQL groups only transactions that ask to be: src/store/sql.ts); each notes its transaction's id.
    const txids = new Set<string>()
    const txid = async (t: Db) => {
      if (engine === 'postgres') txids.add(String((await t.get<{ id: string }>('SELECT txid_current()::text AS id'))!.id))
    }
    const first = store.tx(async (t) => {
      await t.run('INSERT INTO node_tombstones (name, removed_at) VALUES (?1, ?2)', 'first', 1)
      await held
      return 'first'
    }, { group: true })
    const outcomes = Array.from({ length: 30 }, (_, i) =>
      store
        .tx(async (t) => {
          await t.run('INSERT INTO node_tombstones (name, removed_at) VALUES (?1, ?2)', `n${i}`, i)
          if (i % 3 === 1) throw new Error(`own failure ${i}`)
          // a unique violation inside the group undoes this one's insert above, not the others'
          if (i % 3 === 2) await t.run('INSERT INTO node_tombstones (name, removed_at) VALUES (?1, ?2)', 'taken', i)
          await txid(t)
          return `ok ${i}`
        }, { group: true })
        .then(async (value) => {
          const seen = await other.get('SELECT name FROM node_tombstones WHERE name = ?1', `n${i}`)
          return { value, committedWhenTold: seen !== null }
        })
        .catch((e: Error) => ({ value: e.message.startsWith('own failure') ? e.message : 'unique violation', committedWhenTold: false })),
    )
    release()
    expect(await first).toBe('first')
    const got = await Promise.all(outcomes)
    got.forEach((o, i) => {
      if (i % 3 === 0) expect(o).toEqual({ value: `ok ${i}`, committedWhenTold: true })
      else expect(o.value).toBe(i % 3 === 1 ? `own failure ${i}` : 'unique violation')
    })
    const names = (await other.all<{ name: string }>('SELECT name FROM node_tombstones')).map((r) => r.name).sort()
    expect(names).toEqual(['first', 'taken', ...Array.from({ length: 30 }, (_, i) => i).filter((i) => i % 3 === 0).map((i) => `n${i}`)].sort())
    // The ten that committed shared a commit (they queued behind the first): fewer transactions than members.
    if (engine === 'postgres') expect(txids.size).toBeLessThan(10)
    await other.close()
    await store.close()
  })

  test('grouped transactions that all succeed share one commit and are told only once committed; one that caught its own failed statement undoes only itself', async () => {
    await using at = await freshUrl(engine)
    const store = await openStore(at.url)
    const other = await openStore(at.url)
    await store.run('INSERT INTO node_tombstones (name, removed_at) VALUES (?1, ?2)', 'taken', 1)
    // Hold the store busy with a first grouped transaction so each round's members queue up together.
    const round = async (caughtAt: number | null) => {
      let release!: () => void
      const held = new Promise<void>((r) => (release = r))
      const first = store.tx(async () => (await held, 'first'), { group: true })
      const txids = new Set<string>()
      const outcomes = Array.from({ length: 12 }, (_, i) =>
        store
          .tx(async (t) => {
            await t.run('INSERT INTO node_tombstones (name, removed_at) VALUES (?1, ?2)', `${caughtAt ?? 'all'}-${i}`, i)
            // On PostgreSQL the failed statement leaves the transaction aborted: its COMMIT would roll back.
            if (i === caughtAt) await t.run('INSERT INTO node_tombstones (name, removed_at) VALUES (?1, ?2)', 'taken', i).catch(() => 0)
            else if (engine === 'postgres') txids.add(String((await t.get<{ id: string }>('SELECT txid_current()::text AS id'))!.id))
            return `ok ${i}`
          }, { group: true })
          .then(async (value) => ({ value, committedWhenTold: (await other.get('SELECT name FROM node_tombstones WHERE name = ?1', `${caughtAt ?? 'all'}-${i}`)) !== null }))
          .catch(() => ({ value: 'rejected', committedWhenTold: false })),
      )
      release()
      expect(await first).toBe('first')
      return { got: await Promise.all(outcomes), txids }
    }
    const all = await round(null)
    expect(all.got).toEqual(Array.from({ length: 12 }, (_, i) => ({ value: `ok ${i}`, committedWhenTold: true })))
    if (engine === 'postgres') expect(all.txids.size).toBe(1)
    // In the middle the next member's statement fails; last, the COMMIT rolls back (PostgreSQL).
    if (engine === 'postgres') {
      for (const at of [5, 11]) {
        const caught = await round(at)
        caught.got.forEach((o, i) => expect(o).toEqual(i === at ? { value: 'rejected', committedWhenTold: false } : { value: `ok ${i}`, committedWhenTold: true }))
        expect(await other.get('SELECT name FROM node_tombstones WHERE name = ?1', `${at}-${at}`)).toBeNull()
      }
    }
    await other.close()
    await store.close()
  })

  describe('the token-use compare-and-set under real contention', () => {
    let a: Store
    let b: Store
    let url: { url: string; [Symbol.asyncDispose](): Promise<void> }
    beforeAll(async () => {
      url = await freshUrl(engine)
      a = await openStore(url.url)
      b = await openStore(url.url) // a second connection (pool) to the same store
    })
    afterAll(async () => {
      await a.close()
      await b.close()
      await url[Symbol.asyncDispose]()
    })

    test('150 takes on 100 uses across two connections give exactly 100', async () => {
      const now = Date.now()
      const t = await mintJoinToken(a, (s) => s, { kind: 'fleet', node_id: null, name_pattern: null, label: null, max_uses: 100, created_at: now, expires_at: now + 60_000 })
      const results = await Promise.all(Array.from({ length: 150 }, (_, i) => takeTokenUse(i % 2 ? a : b, t.id, now)))
      expect(results.filter(Boolean).length).toBe(100)
      expect(await a.get('SELECT uses FROM join_tokens WHERE id = ?1', t.id)).toEqual({ uses: 100 })
    })

    test('20 renewals from one generation across two connections move it once', async () => {
      const name = `racer-${Date.now()}`
      expect(await insertNode(a, { name, auth: 'enrolled', cert_sha256: 'ab'.repeat(32), cert_pem: 'pem', url: null, token_id: 't', version: null, enrolled_at: Date.now() })).toBe(true)
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => advanceGeneration(i % 2 ? a : b, name, 1, Date.now() + 3_600_000)))
      expect(results.filter((r) => r !== null)).toEqual([2])
      expect(await a.get('SELECT generation FROM nodes WHERE name = ?1', name)).toEqual({ generation: 2 })
    })
  })

  if (engine === 'sqlite') {
    test('the SQLite file is WAL and private', async () => {
      await using at = await freshUrl(engine)
      const store = await openStore(at.url)
      expect(await store.get('PRAGMA journal_mode')).toEqual({ journal_mode: 'wal' })
      expect(statSync(at.url).mode & 0o777).toBe(0o600)
      await store.close()
    })
  }
})

test('on SQLite, grouped transactions the requests of one turn of the event loop start share one commit, though nothing held the store', async () => {
  await using at = await freshUrl('sqlite')
  const store = await openStore(at.url)
  const other = await openStore(at.url) // a second connection: it sees only what is committed
  // As requests do, each starts its transaction some microtasks after the one before, in the same turn.
  const runs: Promise<boolean>[] = []
  for (let i = 0; i < 8; i++) {
    for (let k = 0; k < 50; k++) await null
    runs.push(
      store.tx(async (t) => {
        await t.run('INSERT INTO node_tombstones (name, removed_at) VALUES (?1, ?2)', `g${i}`, i)
        // The first one's row, committed already? Not when they share the commit.
        return (await other.get('SELECT name FROM node_tombstones WHERE name = ?1', 'g0')) !== null
      }, { group: true }),
    )
  }
  const sawFirstCommitted = await Promise.all(runs)
  expect(sawFirstCommitted).toEqual(Array.from({ length: 8 }, () => false))
  expect((await other.all('SELECT name FROM node_tombstones')).length).toBe(8)
  await other.close()
  await store.close()
})

describe.each(ENGINES)('notices on %s', (engine) => {
  test('notices sent together all arrive, in the order sent, and each send resolves once its notice is out', async () => {
    await using at = await freshUrl(engine)
    const a = await openStore(at.url)
    const b = engine === 'postgres' ? await openStore(at.url) : a // SQLite: notices stay in the process
    const got: string[] = []
    const unlisten = await b.listen('muster_test', (p) => got.push(p))
    const sent = Array.from({ length: 700 }, (_, i) => `n${i} "quoted" \\ ${'x'.repeat(i % 7)}`)
    let resolved = 0
    for (const p of sent) void a.notify('muster_test', p).then(() => resolved++)
    const deadline = Date.now() + 15_000
    while ((got.length < sent.length || resolved < sent.length) && Date.now() < deadline) await Bun.sleep(20)
    expect(got).toEqual(sent)
    expect(resolved).toBe(sent.length)
    await unlisten()
    if (b !== a) await b.close()
    await a.close()
  })
})
