// The one asynchronous store API (SPEC §16.9) on Bun.SQL, with two engines:
// SQLite in the data directory and PostgreSQL. Store functions write their SQL
// once with numbered parameters (?1, ?2, …); PostgreSQL receives them as $1, $2.
//
// Why each engine is driven the way it is:
// - SQLite: Bun.SQL holds one connection, and a query issued while a
//   transaction is open runs *inside* it (measured: an outside insert was
//   rolled back with the transaction). So every statement and transaction on
//   SQLite takes one in-process lock. Transactions are BEGIN IMMEDIATE: the
//   write lock is taken up front, so another process (`muster admin …` while
//   serve runs) waits on busy_timeout instead of failing a lock upgrade.
// - PostgreSQL: a pool of connections, READ COMMITTED. Every compare-and-set
//   is one UPDATE … WHERE <condition> RETURNING statement: PostgreSQL locks the
//   row and re-checks the WHERE on the newest version before updating, so two
//   racing writers cannot both pass the condition. Uniqueness races are
//   settled by primary keys (an insert loses with a unique violation, and its
//   transaction rolls back whole). Deadlocks and serialization failures are
//   retried.
// - BIGINT columns come back from PostgreSQL as strings; rows are normalised
//   to numbers by column type (every integer we keep is < 2^53).
import { SQL } from 'bun'
import { chmodSync } from 'node:fs'
import { EventEmitter } from 'node:events'

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
  /** Runs `fn` in one transaction (inside a transaction: in that same one). */
  tx<T>(fn: (db: Db) => Promise<T>): Promise<T>
  /** Runs a script of several statements without parameters (migrations). */
  script(text: string): Promise<void>
}

/** The store: a Db plus what only the whole store does. */
export interface Store extends Db {
  /** The URL with any password removed, for messages. */
  readonly label: string
  /** Receives payloads sent on `channel` by any Platform on this store; returns the unsubscribe. */
  listen(channel: string, fn: (payload: string) => void): Promise<() => Promise<void>>
  notify(channel: string, payload: string): Promise<void>
  close(): Promise<void>
}

/** A unique or primary-key violation (the loser of an insert race). */
export function isUniqueViolation(e: unknown): boolean {
  const err = e as { code?: unknown; errno?: unknown }
  return err?.errno === '23505' || (typeof err?.code === 'string' && /^SQLITE_CONSTRAINT_(PRIMARYKEY|UNIQUE)$/.test(err.code))
}

function redact(url: string): string {
  try {
    const u = new URL(url)
    if (u.password) u.password = '***'
    return u.toString()
  } catch {
    return 'postgres://…'
  }
}

// ---- SQLite -----------------------------------------------------------------

class SqliteDb implements Db {
  readonly engine = 'sqlite' as const
  constructor(
    protected readonly sql: SQL,
    protected readonly lock: <T>(fn: () => Promise<T>) => Promise<T>,
  ) {}
  all<T>(text: string, ...params: Param[]): Promise<T[]> {
    return this.lock(async () => [...((await this.sql.unsafe(text, params)) as T[])])
  }
  async get<T>(text: string, ...params: Param[]): Promise<T | null> {
    return (await this.all<T>(text, ...params))[0] ?? null
  }
  run(text: string, ...params: Param[]): Promise<number> {
    return this.lock(async () => ((await this.sql.unsafe(text, params)) as { count: number }).count)
  }
  tx<T>(fn: (db: Db) => Promise<T>): Promise<T> {
    if (this.lock === inTx) return fn(this)
    return this.lock(() => this.sql.begin('IMMEDIATE', (t) => fn(new SqliteDb(t as unknown as SQL, inTx))) as Promise<T>)
  }
  async script(text: string): Promise<void> {
    await this.lock(() => this.sql.unsafe(text))
  }
}

const inTx = <T>(fn: () => Promise<T>) => fn()

class SqliteStore extends SqliteDb implements Store {
  private readonly events = new EventEmitter()
  private chain: Promise<unknown> = Promise.resolve()

  constructor(
    sql: SQL,
    readonly label: string,
  ) {
    super(sql, (fn) => this.serial(fn))
    this.events.setMaxListeners(0)
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.chain.then(fn, fn)
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
    await this.serial(() => this.sql.close())
  }
}

export async function openSqlite(file: string): Promise<Store> {
  const sql = new SQL({ adapter: 'sqlite', filename: file, create: true } as ConstructorParameters<typeof SQL>[0])
  const store = new SqliteStore(sql, `sqlite://${file}`)
  try {
    await store.script('PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000; PRAGMA foreign_keys = ON;')
  } catch (e) {
    await sql.close()
    throw e
  }
  for (const f of [file, `${file}-wal`, `${file}-shm`]) {
    try {
      chmodSync(f, 0o600)
    } catch {}
  }
  return store
}

// ---- PostgreSQL -----------------------------------------------------------------

const INT8 = 20
const RETRYABLE = new Set(['40001', '40P01']) // serialization failure, deadlock

const pgTexts = new Map<string, string>()
function pgText(text: string): string {
  let out = pgTexts.get(text)
  if (out === undefined) {
    out = text.replace(/\?(\d+)/g, '$$$1')
    pgTexts.set(text, out)
  }
  return out
}

type PgRows = Record<string, unknown>[] & { count: number; columns?: { name: string; type: number }[] }

function normalise<T>(rows: PgRows): T[] {
  const ints = rows.columns?.filter((c) => c.type === INT8).map((c) => c.name) ?? []
  if (ints.length > 0) {
    for (const r of rows) for (const k of ints) if (typeof r[k] === 'string') r[k] = Number(r[k])
  }
  return [...rows] as T[]
}

class PgDb implements Db {
  readonly engine = 'postgres' as const
  constructor(
    protected readonly sql: SQL,
    private readonly nested: boolean,
  ) {}
  async all<T>(text: string, ...params: Param[]): Promise<T[]> {
    return normalise<T>((await this.sql.unsafe(pgText(text), params)) as PgRows)
  }
  async get<T>(text: string, ...params: Param[]): Promise<T | null> {
    return (await this.all<T>(text, ...params))[0] ?? null
  }
  async run(text: string, ...params: Param[]): Promise<number> {
    return ((await this.sql.unsafe(pgText(text), params)) as PgRows).count
  }
  async script(text: string): Promise<void> {
    await this.sql.unsafe(text)
  }
  async tx<T>(fn: (db: Db) => Promise<T>): Promise<T> {
    if (this.nested) return fn(this)
    for (let attempt = 1; ; attempt++) {
      try {
        return (await this.sql.begin((t) => fn(new PgDb(t as unknown as SQL, true)))) as T
      } catch (e) {
        if (attempt >= 5 || !RETRYABLE.has(String((e as { errno?: unknown }).errno))) throw e
        await Bun.sleep(5 * attempt + Math.random() * 20)
      }
    }
  }
}

class PgStore extends PgDb implements Store {
  constructor(
    sql: SQL,
    readonly label: string,
  ) {
    super(sql, false)
  }

  async listen(channel: string, fn: (payload: string) => void): Promise<() => Promise<void>> {
    const sub = (await this.sql.listen(channel, fn)) as unknown as { unlisten?: () => Promise<void> } | (() => Promise<void>)
    return async () => {
      if (typeof sub === 'function') await sub()
      else await sub?.unlisten?.()
    }
  }

  async notify(channel: string, payload: string): Promise<void> {
    await this.sql.unsafe('SELECT pg_notify($1, $2)', [channel, payload])
  }

  async close(): Promise<void> {
    await this.sql.close({ timeout: 1 })
  }
}

export async function openPostgres(url: string, opts: { max?: number } = {}): Promise<Store> {
  const sql = new SQL({ url, max: opts.max ?? 10, idleTimeout: 30, connectionTimeout: 10 } as ConstructorParameters<typeof SQL>[0])
  const store = new PgStore(sql, redact(url))
  try {
    await store.get('SELECT 1 AS one')
  } catch (e) {
    await sql.close({ timeout: 0 }).catch(() => {})
    throw e
  }
  return store
}

export function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//.test(url)
}
