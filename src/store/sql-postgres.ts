// The PostgreSQL engine of the store (src/store/sql.ts says why each engine is
// driven the way it is): a pool of connections, READ COMMITTED, BIGINT columns
// normalised to numbers, deadlocks and serialization failures retried, and
// group commit for the transactions that ask for it.
import { SQL } from 'bun'
import type { Db, Param, Store, TxJob, TxOptions } from './sql.ts'
import type { StoreMeter } from '../metrics/platform.ts'

function redact(url: string): string {
  try {
    const u = new URL(url)
    if (u.password) u.password = '***'
    return u.toString()
  } catch {
    return 'postgres://…'
  }
}

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

/** Where a store and its transactions count (set by `measure`; shared, so a transaction counts where its store does). */
interface Meter {
  meter?: StoreMeter
}

class PgDb implements Db {
  readonly engine = 'postgres' as const
  constructor(
    protected readonly sql: SQL,
    private readonly nested: boolean,
    protected readonly counts: Meter,
  ) {}
  async all<T>(text: string, ...params: Param[]): Promise<T[]> {
    const started = performance.now()
    try {
      return normalise<T>((await this.sql.unsafe(pgText(text), params)) as PgRows)
    } finally {
      this.counts.meter?.observeQuery('postgres', started)
    }
  }
  async get<T>(text: string, ...params: Param[]): Promise<T | null> {
    return (await this.all<T>(text, ...params))[0] ?? null
  }
  async run(text: string, ...params: Param[]): Promise<number> {
    const started = performance.now()
    try {
      return ((await this.sql.unsafe(pgText(text), params)) as PgRows).count
    } finally {
      this.counts.meter?.observeQuery('postgres', started)
    }
  }
  async script(text: string): Promise<void> {
    await this.sql.unsafe(text)
  }
  async tx<T>(fn: (db: Db) => Promise<T>): Promise<T> {
    if (this.nested) return fn(this)
    for (let attempt = 1; ; attempt++) {
      try {
        return (await this.sql.begin((t) => fn(new PgDb(t as unknown as SQL, true, this.counts)))) as T
      } catch (e) {
        if (attempt >= 5 || !RETRYABLE.has(String((e as { errno?: unknown }).errno))) throw e
        this.counts.meter?.storeRetries.inc({ engine: 'postgres' })
        await Bun.sleep(5 * attempt + Math.random() * 20)
      }
    }
  }
}

/** pg_notify for each [channel, payload] of a JSON array, in the array's order. */
const NOTIFY_MANY = `SELECT pg_notify(c, p) FROM (SELECT j ->> 0 AS c, j ->> 1 AS p FROM jsonb_array_elements($1::text::jsonb) WITH ORDINALITY AS t(j, i) ORDER BY i) AS n`
const MAX_NOTICES = 500

/** Grouped transactions at most in one group (the group's statements run one after another on one connection). */
const MAX_GROUP = 256

class PgStore extends PgDb implements Store {
  private waiting: TxJob[] = []
  private grouping = false

  constructor(
    sql: SQL,
    readonly label: string,
  ) {
    super(sql, false, {})
  }

  measure(meter: StoreMeter): void {
    this.counts.meter = meter
  }

  /**
   * Group commit for PostgreSQL: grouped transactions that start while a group runs
   * wait for it and then run together, one after another, in one BEGIN … COMMIT on one
   * connection. They run first without savepoints (a savepoint is two more round trips a
   * member, and a subtransaction whose writes PostgreSQL must track: past 64 in a transaction
   * every other backend's snapshot checks overflow to pg_subtrans). When one fails, the whole
   * group is rolled back and runs again, each inside its own SAVEPOINT: one that fails then rolls
   * back to its savepoint (its work undone, the others' kept) and rejects at once, or, when the
   * failure is a deadlock or serialization failure, runs again alone. The rest resolve only after
   * the COMMIT, and a failed COMMIT rejects them all. What is shared is the commit and, for
   * enrolls, the join token's row lock, which separate transactions took turns holding across
   * round trips.
   */
  override tx<T>(fn: (db: Db) => Promise<T>, opts?: TxOptions): Promise<T> {
    if (!opts?.group) return super.tx(fn)
    return new Promise<T>((resolve, reject) => {
      this.waiting.push({ fn, resolve: resolve as (v: unknown) => void, reject })
      if (!this.grouping) void this.runGroups()
    })
  }

  private async runGroups(): Promise<void> {
    this.grouping = true
    try {
      while (this.waiting.length > 0) await this.commitGroup(this.waiting.splice(0, MAX_GROUP))
    } finally {
      this.grouping = false
    }
  }

  private async commitGroup(jobs: TxJob[]): Promise<void> {
    if (jobs.length === 1) {
      const job = jobs[0]!
      await super.tx(job.fn).then(job.resolve, job.reject)
      return
    }
    if (await this.commitWhole(jobs)) return
    const kept: { job: TxJob; value: unknown }[] = []
    const again: TxJob[] = []
    try {
      await this.sql.begin(async (t) => {
        for (const job of jobs) {
          try {
            const value = await (t as unknown as { savepoint<R>(fn: (sp: SQL) => Promise<R>): Promise<R> }).savepoint((sp) => job.fn(new PgDb(sp, true, this.counts)))
            kept.push({ job, value })
          } catch (e) {
            if (RETRYABLE.has(String((e as { errno?: unknown }).errno))) again.push(job)
            else job.reject(e)
          }
        }
      })
    } catch (e) {
      for (const { job } of kept) job.reject(e)
      for (const job of again) job.reject(e)
      return
    }
    for (const { job, value } of kept) job.resolve(value)
    if (again.length > 0) this.counts.meter?.storeRetries.inc({ engine: 'postgres' }, again.length)
    for (const job of again) void super.tx(job.fn).then(job.resolve, job.reject)
  }

  /**
   * The group's members one after another in one transaction, no savepoints: true when every
   * member succeeded and the COMMIT settled them all (resolved, or rejected by a failed COMMIT);
   * false, with nothing kept and nobody told, when a member failed (the group runs again with
   * savepoints).
   */
  private async commitWhole(jobs: TxJob[]): Promise<boolean> {
    const values: unknown[] = []
    const failed = new Error('a member of the group failed')
    try {
      await this.sql.begin(async (t) => {
        const db = new PgDb(t as unknown as SQL, true, this.counts)
        for (const job of jobs) {
          try {
            values.push(await job.fn(db))
          } catch {
            throw failed
          }
        }
      })
    } catch (e) {
      // A member that caught its own statement's error left the transaction aborted: its COMMIT rolled back.
      if (e === failed || (e as { code?: unknown }).code === 'ERR_POSTGRES_COMMIT_ROLLED_BACK') return false
      for (const job of jobs) job.reject(e)
      return true
    }
    jobs.forEach((job, i) => job.resolve(values[i]))
    return true
  }

  async listen(channel: string, fn: (payload: string) => void): Promise<() => Promise<void>> {
    const sub = (await this.sql.listen(channel, (payload: string) => (this.counts.meter?.storeNotices.inc({ direction: 'received' }), fn(payload)))) as unknown as { unlisten?: () => Promise<void> } | (() => Promise<void>)
    return async () => {
      if (typeof sub === 'function') await sub()
      else await sub?.unlisten?.()
    }
  }

  /**
   * Sends a notice. Notices sent in the same turn of the event loop go in one statement, in order
   * (an enroll sends one, and concurrent enrolls each their own: one round trip for them all).
   */
  notify(channel: string, payload: string): Promise<void> {
    return new Promise((resolve, reject) => {
      this.notices.push({ channel, payload, resolve, reject })
      if (!this.sending) {
        this.sending = true
        setImmediate(() => void this.sendNotices())
      }
    })
  }
  private notices: { channel: string; payload: string; resolve: () => void; reject: (e: unknown) => void }[] = []
  private sending = false

  /** One batch at a time, so notices arrive in the order they were sent. */
  private async sendNotices(): Promise<void> {
    while (this.notices.length > 0) {
      const batch = this.notices.splice(0, MAX_NOTICES)
      try {
        await this.sql.unsafe(NOTIFY_MANY, [JSON.stringify(batch.map((n) => [n.channel, n.payload]))])
        this.counts.meter?.storeNotices.inc({ direction: 'sent' }, batch.length)
        for (const n of batch) n.resolve()
      } catch (e) {
        for (const n of batch) n.reject(e)
      }
    }
    this.sending = false
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
