// A real PostgreSQL for tests (no mock database). CI starts one and passes
// MUSTER_TEST_POSTGRES_URL; otherwise the first test that needs it starts a
// throwaway cluster from Debian's server binaries (initdb as the `postgres`
// user when running as root), and it is stopped and removed when the test
// process exits. Every Platform under test gets a database of its own.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SQL } from 'bun'
import { openStore, type Store } from '../../src/store/db.ts'
import { randomId } from '../../src/crypto/tokens.ts'
import { INSTALL_HINT, postgresBinDir, startThrowawayPostgres } from '../../src/demo/postgres.ts'

let server: Promise<string> | undefined

async function startCluster(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'muster-test-pg-'))
  if (!postgresBinDir()) throw new Error(`${INSTALL_HINT} Or set MUSTER_TEST_POSTGRES_URL.`)
  // The cluster outlives the run's tests on purpose (it is stopped at exit, or by its watchdog): not one of the run's leftovers.
  const marker = process.env.MUSTER_TEST_RUN
  delete process.env.MUSTER_TEST_RUN
  let pg: Awaited<ReturnType<typeof startThrowawayPostgres>>
  try {
    pg = await startThrowawayPostgres(dir, ['fsync=off', 'synchronous_commit=off', 'full_page_writes=off', 'max_connections=400'])
  } finally {
    if (marker !== undefined) process.env.MUSTER_TEST_RUN = marker
  }
  process.on('exit', () => {
    pg.stop()
    rmSync(dir, { recursive: true, force: true })
  })
  // bun test does not always run exit handlers (a run that ends normally, or one the mutants runner
  // kills): a watchdog outside this process stops and removes the cluster once this process is gone.
  const data = join(dir, 'data')
  const pgCtl = join(postgresBinDir()!, 'pg_ctl')
  const stop = process.getuid?.() === 0 ? `runuser -u postgres -- ${pgCtl} -D ${data} -m immediate stop` : `${pgCtl} -D ${data} -m immediate stop`
  // Detached (a session of its own): the mutants runner kills the test's whole process group when the tests
  // end, and a watchdog in that group died with it, leaving the cluster running.
  const env = { ...process.env }
  delete env.MUSTER_TEST_RUN
  const watchdog = Bun.spawn(['sh', '-c', `while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done; ${stop} >/dev/null 2>&1; rm -rf ${dir}`], { env, stdin: 'ignore', stdout: 'ignore', stderr: 'ignore', detached: true })
  watchdog.unref()
  return pg.url
}

/** The URL of a PostgreSQL server for tests (its `postgres` database). */
export function postgresServer(): Promise<string> {
  server ??= process.env.MUSTER_TEST_POSTGRES_URL ? Promise.resolve(process.env.MUSTER_TEST_POSTGRES_URL) : startCluster()
  return server
}

let template: Promise<string> | undefined

/** A database already holding every migration, copied for each test (much faster than migrating each time). */
function migratedTemplate(admin: string): Promise<string> {
  template ??= (async () => {
    const name = `muster_tpl_${randomId(8)}`
    const sql = new SQL(admin)
    try {
      await sql.unsafe(`CREATE DATABASE ${name}`)
    } finally {
      await sql.close()
    }
    const { openStore } = await import('../../src/store/db.ts')
    await (await openStore(urlOf(admin, name))).close()
    return name
  })()
  return template
}

function urlOf(admin: string, db: string): string {
  const url = new URL(admin)
  url.pathname = `/${db}`
  return url.toString()
}

/** A new database of its own (migrated, or empty when `empty`); `drop` removes it (and ends its connections). */
export async function freshDatabase(opts: { empty?: boolean } = {}): Promise<{ url: string; drop(): Promise<void> }> {
  const admin = await postgresServer()
  const name = `muster_t_${randomId(12)}`
  const from = opts.empty ? '' : ` TEMPLATE ${await migratedTemplate(admin)}`
  const sql = new SQL(admin)
  try {
    await sql.unsafe(`CREATE DATABASE ${name}${from}`)
  } finally {
    await sql.close()
  }
  return {
    url: urlOf(admin, name),
    drop: async () => {
      const s = new SQL(admin)
      try {
        await s.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      } finally {
        await s.close()
      }
    },
  }
}

export type Engine = 'sqlite' | 'postgres'
/**
 * Every store engine: suites that touch the store run once per engine (describe.each).
 * MUSTER_TEST_ENGINES=sqlite (or postgres) narrows it: `bun run mutants` runs an entry's
 * tests on the engines it names (SQLite unless it says otherwise).
 */
export const ENGINES: Engine[] = (['sqlite', 'postgres'] as const).filter((e) => !process.env.MUSTER_TEST_ENGINES || process.env.MUSTER_TEST_ENGINES.split(',').includes(e))

/** A fresh, migrated store on the engine: a SQLite file in a temp dir, or a new PostgreSQL database; removed on dispose. */
export async function freshStore(engine: Engine): Promise<{ store: Store; [Symbol.asyncDispose](): Promise<void> }> {
  if (engine === 'postgres') {
    const db = await freshDatabase({ empty: true })
    const store = await openStore(db.url)
    return { store, [Symbol.asyncDispose]: async () => (await store.close(), await db.drop()) }
  }
  const dir = mkdtempSync(join(tmpdir(), 'muster-store-'))
  const store = await openStore(join(dir, 'muster.db'))
  return { store, [Symbol.asyncDispose]: async () => (await store.close(), rmSync(dir, { recursive: true, force: true })) }
}
