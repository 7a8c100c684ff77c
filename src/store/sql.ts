// The one asynchronous store API (docs/storage-ha.md), with two engines:
// SQLite in the data directory and PostgreSQL. Store functions write their SQL
// once with numbered parameters (?1, ?2, …); PostgreSQL receives them as $1, $2.
//
// Why each engine is driven the way it is:
// - SQLite: bun:sqlite (the library under Bun.SQL's own SQLite adapter), one
//   connection whose prepared statements are kept: Bun.SQL's adapter prepares
//   every statement again (measured 30–45 µs a query on our schema against
//   5–10 µs kept), which held enrolls under 2,000/s. A statement issued while a
//   transaction is open would run *inside* it, so every statement and
//   transaction takes one in-process lock. Transactions are BEGIN IMMEDIATE:
//   the write lock is taken up front, so another process (`muster admin …`
//   while serve runs) waits on busy_timeout instead of failing a lock upgrade.
//   Transactions that queue meanwhile, and grouped ones started in the same
//   turn of the event loop, share one commit (group commit, below).
// - PostgreSQL: a pool of connections, READ COMMITTED. Every compare-and-set
//   is one UPDATE … WHERE <condition> RETURNING statement: PostgreSQL locks the
//   row and re-checks the WHERE on the newest version before updating, so two
//   racing writers cannot both pass the condition. Uniqueness races are
//   settled by primary keys (an insert loses with a unique violation, and its
//   transaction rolls back whole). Deadlocks and serialization failures are
//   retried.
// - BIGINT columns come back from PostgreSQL as strings; rows are normalised
//   to numbers by column type (every integer we keep is < 2^53).
import { Database, type SQLQueryBindings, type Statement } from 'bun:sqlite'
import { chmodSync } from 'node:fs'
import { EventEmitter } from 'node:events'
import type { StoreMeter } from '../metrics/platform.ts'

export type Engine = 'sqlite' | 'postgres'
export type Param = string | number | boolean | null | Uint8Array

/** A handle to run statements on: the store itself, or an open transaction. */
export interface Db {
  readonly engine: Engine
  /** Every row. */
  all<T = Record<string, unknown>>(text: string, ...params: Param[]): Promise<T[]>
  /** The first row, or null. */
  get<T = Record<string, unknown>>(text: string, ...params: Param[]): Promise<T | null>
  /** Runs a statement; the number of rows it changed. */
  run(text: string, ...params: Param[]): Promise<number>
  /**
   * Runs `fn` in one transaction (inside a transaction: in that same one). `group`: it may share
   * its commit with other grouped transactions started meanwhile (SQLite groups every transaction).
   */
  tx<T>(fn: (db: Db) => Promise<T>, opts?: TxOptions): Promise<T>
  /** Runs a script of several statements without parameters (migrations). */
  script(text: string): Promise<void>
}

export interface TxOptions {
  /**
   * Share one commit with the grouped transactions started while others run (PostgreSQL: one
   * BEGIN … COMMIT, with no savepoints unless one of them fails, when the group runs again each
   * inside its own SAVEPOINT, as SQLite's group commit). For short
   * transactions that take no lock another Platform holds for long: the group waits for its slowest.
   */
  group?: boolean
}

/** The store: a Db plus what only the whole store does. */
export interface Store extends Db {
  /** The URL with any password removed, for messages. */
  readonly label: string
  /** Receives payloads sent on `channel` by any Platform on this store; returns the unsubscribe. */
  listen(channel: string, fn: (payload: string) => void): Promise<() => Promise<void>>
  notify(channel: string, payload: string): Promise<void>
  close(): Promise<void>
  /** Times every statement (and counts retries and notices) in these families from now on: the Platform's own. */
  measure(meter: StoreMeter): void
}

/** A unique or primary-key violation (the loser of an insert race). */
export function isUniqueViolation(e: unknown): boolean {
  const err = e as { code?: unknown; errno?: unknown }
  return err?.errno === '23505' || (typeof err?.code === 'string' && /^SQLITE_CONSTRAINT_(PRIMARYKEY|UNIQUE)$/.test(err.code))
}

// ---- SQLite -----------------------------------------------------------------

/** One connection with its prepared statements, kept by text (the store's texts are constants). */
class SqliteConn {
  private readonly statements = new Map<string, Statement>()
  meter: StoreMeter | undefined
  constructor(readonly db: Database) {}

  /** Runs `use` on the statement for `text`: a kept one, or (past the cap) one finalized after. */
  private with<R>(text: string, use: (s: Statement) => R): R {
    const kept = this.statements.get(text)
    if (kept) return use(kept)
    const s = this.db.prepare(text)
    if (this.statements.size < MAX_CACHED_STATEMENTS) {
      this.statements.set(text, s)
      return use(s)
    }
    try {
      return use(s)
    } finally {
      s.finalize()
    }
  }

  all<T>(text: string, params: Param[]): T[] {
    const started = performance.now()
    try {
      return this.with(text, (s) => s.all(...(params as SQLQueryBindings[])) as T[])
    } finally {
      this.meter?.observeQuery('sqlite', started)
    }
  }

  run(text: string, params: Param[]): number {
    const started = performance.now()
    try {
      return this.with(text, (s) => s.run(...(params as SQLQueryBindings[])).changes)
    } finally {
      this.meter?.observeQuery('sqlite', started)
    }
  }

  close(): void {
    for (const s of this.statements.values()) s.finalize()
    this.statements.clear()
    this.db.close(false)
  }
}
const MAX_CACHED_STATEMENTS = 1000

type Lock = <T>(fn: () => T | Promise<T>) => Promise<T>

class SqliteDb implements Db {
  readonly engine = 'sqlite' as const
  constructor(
    protected readonly conn: SqliteConn,
    protected readonly lock: Lock,
  ) {}
  all<T>(text: string, ...params: Param[]): Promise<T[]> {
    return this.lock(() => this.conn.all<T>(text, params))
  }
  async get<T>(text: string, ...params: Param[]): Promise<T | null> {
    return (await this.all<T>(text, ...params))[0] ?? null
  }
  run(text: string, ...params: Param[]): Promise<number> {
    return this.lock(() => this.conn.run(text, params))
  }
  tx<T>(fn: (db: Db) => Promise<T>): Promise<T> {
    // Inside a transaction: part of that same one.
    return fn(this)
  }
  async script(text: string): Promise<void> {
    await this.lock(() => this.conn.db.exec(text))
  }
}

/** Inside a transaction the store's lock is already held: statements run at once. */
const inTx: Lock = (fn) => {
  try {
    return Promise.resolve(fn())
  } catch (e) {
    return Promise.reject(e)
  }
}

export interface TxJob {
  fn: (db: Db) => Promise<unknown>
  resolve: (value: unknown) => void
  reject: (e: unknown) => void
}

class SqliteStore extends SqliteDb implements Store {
  private readonly events = new EventEmitter()
  private chain: Promise<unknown> = Promise.resolve()
  /** Statements and transactions queued or running under the lock. */
  private held = 0
  private waiting: TxJob[] = []

  constructor(
    conn: SqliteConn,
    readonly label: string,
    /** The database file (another connection to it: src/store/heartbeat-writer.ts). */
    readonly file: string,
  ) {
    super(conn, (fn) => this.serial(fn))
    this.events.setMaxListeners(0)
  }

  measure(meter: StoreMeter): void {
    this.conn.meter = meter
  }

  /**
   * Group commit: the transactions that queued while the lock was busy run in one
   * BEGIN IMMEDIATE … COMMIT, each inside its own SAVEPOINT. One that fails rolls
   * back to its savepoint (its work is undone, the others' kept) and rejects at
   * once; the rest resolve only after the COMMIT, so a caller is never told of a
   * write that is not committed, and a failed COMMIT rejects every one of them.
   * Atomicity and isolation are those of separate transactions (they run one
   * after another on the one connection); what is shared is the commit, which
   * is most of a small transaction's cost (bench/enroll-wrk.sh).
   */
  override tx<T>(fn: (db: Db) => Promise<T>, opts?: TxOptions): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.waiting.push({ fn, resolve: resolve as (v: unknown) => void, reject })
      if (this.waiting.length > 1) return
      // A grouped transaction's group starts on the loop's next turn, not now: started now it would run to its
      // COMMIT in this turn's microtasks, before any other request could queue (one commit an enroll, measured
      // in docs/benchmarks.md); the requests this turn brought in reach their transactions first and share it.
      // Others start at once (an audit entry's prune counts the entries still in flight: fewer, as before).
      if (opts?.group) this.starting = new Promise<void>((started) => setImmediate(() => started(void this.serial(() => this.commitGroup()))))
      else void this.serial(() => this.commitGroup())
    })
  }

  /** The group waiting for the loop's next turn, if any (close commits it first). */
  private starting: Promise<void> | undefined

  private async commitGroup(): Promise<void> {
    const jobs = this.waiting
    this.waiting = []
    this.starting = undefined
    if (jobs.length === 0) return
    // Kept statements (run), not exec: exec parses its text each time, and these run 2–4 times an enroll.
    const exec = (text: string) => void this.conn.run(text, [])
    const db = new SqliteDb(this.conn, inTx)
    const kept: { job: TxJob; value: unknown }[] = []
    const settled = new Set<TxJob>()
    try {
      exec('BEGIN IMMEDIATE')
    } catch (e) {
      for (const job of jobs) job.reject(e)
      return
    }
    try {
      if (jobs.length === 1) {
        kept.push({ job: jobs[0]!, value: await jobs[0]!.fn(db) })
      } else {
        for (const job of jobs) {
          exec('SAVEPOINT muster_group')
          let value: unknown
          try {
            value = await job.fn(db)
          } catch (e) {
            // Should this fail, the transaction is in doubt: the catch below ends the whole group.
            exec('ROLLBACK TO muster_group')
            exec('RELEASE muster_group')
            settled.add(job)
            job.reject(e)
            continue
          }
          exec('RELEASE muster_group')
          kept.push({ job, value })
        }
      }
      exec('COMMIT')
    } catch (e) {
      try {
        if (this.conn.db.inTransaction) exec('ROLLBACK')
      } catch {}
      for (const job of jobs) if (!settled.has(job)) job.reject(e)
      return
    }
    for (const { job, value } of kept) job.resolve(value)
  }

  /**
   * The one lock every statement and transaction takes (a transaction's awaits let
   * other requests run; their statements must not land inside it). When nothing
   * holds it, a statement runs at once.
   */
  private serial<T>(fn: () => T | Promise<T>): Promise<T> {
    if (this.held === 0) {
      let out: T | Promise<T>
      try {
        out = fn()
      } catch (e) {
        return Promise.reject(e)
      }
      if (!(out instanceof Promise)) return Promise.resolve(out)
      this.held++
      const running = out.finally(() => this.held--)
      this.chain = running.catch(() => {})
      return running
    }
    this.held++
    const run = this.chain.then(fn, fn).finally(() => this.held--)
    this.chain = run.catch(() => {})
    return run
  }

  // One Platform per SQLite file: notifications stay in this process.
  async listen(channel: string, fn: (payload: string) => void): Promise<() => Promise<void>> {
    this.events.on(channel, fn)
    return async () => void this.events.off(channel, fn)
  }

  async notify(channel: string, payload: string): Promise<void> {
    this.events.emit(channel, payload)
  }

  async close(): Promise<void> {
    // A transaction started before the close is committed (or fails) before the connection closes.
    await this.starting
    await this.serial(() => this.conn.close())
  }
}

// wal_autocheckpoint 10,000 pages (40 MB; SQLite's default is 1,000): the pages every enroll and heartbeat
// flush writes again (the join token's, the audit's and the indexes' last pages) are copied into the file
// once per checkpoint, so fewer checkpoints copy them fewer times. bench/enroll-wrk.sh, 2026-12-01 17:14–17:17,
// same window: 313–315 µs of engine CPU an enroll against 327–337 µs with the default.
// While a Platform's heartbeat writer thread runs, that thread checkpoints instead (src/store/heartbeat-writer.ts).
export async function openSqlite(file: string): Promise<Store> {
  const conn = new SqliteConn(new Database(file, { create: true, readwrite: true }))
  const store = new SqliteStore(conn, `sqlite://${file}`, file)
  try {
    await store.script('PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000; PRAGMA foreign_keys = ON; PRAGMA wal_autocheckpoint = 10000;')
  } catch (e) {
    conn.close()
    throw e
  }
  for (const f of [file, `${file}-wal`, `${file}-shm`]) {
    try {
      chmodSync(f, 0o600)
    } catch {}
  }
  return store
}
