// Where the registry's heartbeat chunks are written (src/store/heartbeats.ts).
// SQLite runs a statement on the thread that calls it, and at a million nodes
// the flush's upserts land on random pages of a million-row table: measured
// 29 µs of CPU a row, 97 ms a second at 3,333 beats a second and 85 ms for
// the longest chunk, all of it on the event loop (docs/benchmarks.md). So on
// SQLite the chunks go to a worker thread with its own connection to the same
// file (WAL: the Platform's reads never wait for it; its writes wait on
// busy_timeout for a chunk at most, as they would for another process). On
// PostgreSQL a chunk is a round trip, and the event loop only makes its text.
// The thread also copies the WAL back into the file (a passive checkpoint every
// 2 s), and the Platform's own connection checkpoints no more: a checkpoint runs
// in the connection whose commit crosses the WAL's limit, and at a million nodes
// (~10,000 pages written a second) that was the event loop's lease renewal or
// enroll, holding it for the copy and its fsync, up to 2 s (docs/benchmarks.md).
import type { Db } from './db.ts'
import { log } from '../log.ts'

export interface HeartbeatSink {
  /** Rows a chunk holds at most. */
  readonly chunk: number
  /** Writes one chunk (a JSON array of rows, as writeHeartbeatChunk makes it) in one statement and transaction. */
  writeChunk(json: string, platform: string | null): Promise<void>
  close(): Promise<void>
}

// Plain JavaScript: the worker is made from a Blob, so the compiled binary needs no second entry point.
const WORKER = `
const { Database } = require('bun:sqlite')
let db, statement, checkpoints
self.onmessage = (e) => {
  const m = e.data
  try {
    if (m.t === 'open') {
      db = new Database(m.file, { readwrite: true })
      db.exec(m.pragmas)
      statement = db.prepare(m.sql)
      checkpoints = setInterval(() => {
        try {
          db.exec('PRAGMA wal_checkpoint(PASSIVE)')
        } catch {}
      }, m.checkpointMs)
    } else if (m.t === 'write') {
      statement.run(m.json, m.platform)
    } else if (m.t === 'close') {
      clearInterval(checkpoints)
      statement?.finalize()
      db?.close(false)
    }
    postMessage({ id: m.id, ok: true })
  } catch (err) {
    postMessage({ id: m.id, ok: false, message: String((err && err.message) || err) })
  }
}
`

/**
 * Rows a chunk holds: on the event loop, enough that a second's beats take few turns of it; on the writer
 * thread fewer, because the Platform's own writes (lease renewals, every 2 s) wait for the chunk's
 * statement to release SQLite's write lock (~3 ms for 100 rows at a million nodes).
 */
const DIRECT_CHUNK = 500
const WORKER_CHUNK = 100

/** How often the writer thread copies the WAL back into the database file. */
const CHECKPOINT_MS = 2_000
/** The Platform's connection's own checkpoint limit (src/store/sql.ts), given back when the thread stops. */
const AUTOCHECKPOINT = 'PRAGMA wal_autocheckpoint = 10000'

/** The same connection settings as the Platform's own (src/store/sql.ts). */
const PRAGMAS = 'PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000; PRAGMA foreign_keys = ON; PRAGMA wal_autocheckpoint = 10000;'

/** A worker thread with its own SQLite connection; one message at a time, answered in order. */
class WorkerSink implements HeartbeatSink {
  readonly chunk = WORKER_CHUNK
  private readonly worker: Worker
  private next = 1
  private readonly pending = new Map<number, { resolve: () => void; reject: (e: Error) => void }>()
  private broken: Error | null = null
  private running = false

  /** `checkpoints`: told when the thread took over the checkpoints (true) and when it gave them back (false). */
  constructor(
    file: string,
    sql: string,
    checkpointMs: number,
    private readonly checkpoints: (byThread: boolean) => Promise<void>,
  ) {
    this.worker = new Worker(URL.createObjectURL(new Blob([WORKER], { type: 'application/javascript' })))
    this.worker.addEventListener('message', (e: MessageEvent<{ id: number; ok: boolean; message?: string }>) => {
      const p = this.pending.get(e.data.id)
      this.pending.delete(e.data.id)
      if (e.data.ok) p?.resolve()
      else p?.reject(new Error(e.data.message))
    })
    this.worker.addEventListener('error', (e) => this.fail(new Error(`the heartbeat writer thread failed: ${(e as ErrorEvent).message}`)))
    ;(this.worker as unknown as { unref(): void }).unref() // Bun's Worker has unref; the DOM type does not
    void this.send({ t: 'open', file, pragmas: PRAGMAS, sql, checkpointMs }).then(
      () => {
        if (this.broken) return
        this.running = true
        void this.checkpoints(true)
      },
      (e) => this.fail(e as Error),
    )
  }

  /** The thread no longer checkpoints (it failed or is closing): the Platform's connection does again. */
  private async giveBack(): Promise<void> {
    if (!this.running) return
    this.running = false
    await this.checkpoints(false)
  }

  private fail(e: Error): void {
    void this.giveBack()
    this.broken ??= e
    for (const p of this.pending.values()) p.reject(e)
    this.pending.clear()
  }

  private send(m: Record<string, unknown>): Promise<void> {
    if (this.broken) return Promise.reject(this.broken)
    const id = this.next++
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject })
      this.worker.postMessage({ ...m, id })
    })
  }

  get failed(): boolean {
    return this.broken !== null
  }

  writeChunk(json: string, platform: string | null): Promise<void> {
    return this.send({ t: 'write', json, platform })
  }

  async close(): Promise<void> {
    await this.giveBack()
    if (!this.broken) await this.send({ t: 'close' }).catch(() => {})
    this.worker.terminate()
  }
}

/**
 * The sink for `db`: a worker thread on SQLite files, the store itself otherwise (PostgreSQL, or SQLite in
 * memory). A worker that fails (it could not open the file, say) hands over to the store, once, with a warning.
 */
export function openHeartbeatSink(db: Db, sql: string, checkpointMs = CHECKPOINT_MS): HeartbeatSink {
  const direct: HeartbeatSink = {
    chunk: DIRECT_CHUNK,
    writeChunk: async (json, platform) => {
      await db.tx((t) => t.run(sql, json, platform))
    },
    close: async () => {},
  }
  const file = db.engine === 'sqlite' ? (db as Db & { file?: string }).file : undefined
  if (file === undefined || file === ':memory:' || file === '') return direct
  const worker = new WorkerSink(file, sql, checkpointMs, (byThread) =>
    db.script(byThread ? 'PRAGMA wal_autocheckpoint = 0' : AUTOCHECKPOINT).catch((e) => log.warn(`heartbeats: setting the store's checkpoints: ${(e as Error).message}`)),
  )
  let warned = false
  return {
    chunk: WORKER_CHUNK,
    writeChunk: async (json, platform) => {
      if (!worker.failed) {
        try {
          return await worker.writeChunk(json, platform)
        } catch (e) {
          if (!worker.failed) throw e // the statement failed: the caller keeps the rows for the next flush
        }
      }
      if (!warned) {
        warned = true
        log.warn('heartbeats: the writer thread failed; the flush writes on the event loop from now on')
      }
      return direct.writeChunk(json, platform)
    },
    close: () => worker.close(),
  }
}
