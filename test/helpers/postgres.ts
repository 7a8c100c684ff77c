// A real PostgreSQL for tests (no mock database). CI starts one and passes
// MUSTER_TEST_POSTGRES_URL; otherwise the first test that needs it starts a
// throwaway cluster from Debian's server binaries (initdb as the `postgres`
// user when running as root), and it is stopped and removed when the test
// process exits. Every Platform under test gets a database of its own.
import { spawnSync } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SQL } from 'bun'
import { randomId } from '../../src/crypto/tokens.ts'

let server: Promise<string> | undefined

function serverBin(): string {
  const root = '/usr/lib/postgresql'
  const versions = existsSync(root) ? readdirSync(root).sort((a, b) => Number(b) - Number(a)) : []
  for (const v of versions) if (existsSync(join(root, v, 'bin', 'initdb'))) return join(root, v, 'bin')
  throw new Error('PostgreSQL server binaries not found under /usr/lib/postgresql: install Debian\'s postgresql package (apt-get install postgresql), or set MUSTER_TEST_POSTGRES_URL')
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port
      s.close(() => resolve(port))
    })
  })
}

async function startCluster(): Promise<string> {
  const bin = serverBin()
  const dir = mkdtempSync(join(tmpdir(), 'muster-test-pg-'))
  const asRoot = process.getuid?.() === 0
  const run = (args: string[]) => {
    const cmd = asRoot ? ['runuser', '-u', 'postgres', '--', ...args] : args
    const r = spawnSync(cmd[0]!, cmd.slice(1), { encoding: 'utf8' })
    if (r.status !== 0) throw new Error(`${args[0]} failed: ${r.stderr || r.stdout}`)
  }
  if (asRoot) {
    const pg = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' })
    const gid = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' })
    chownSync(dir, Number(pg.stdout.trim()), Number(gid.stdout.trim()))
  }
  const data = join(dir, 'data')
  run([join(bin, 'initdb'), '-D', data, '-A', 'trust', '-U', 'muster', '--no-sync'])
  const port = await freePort()
  run([join(bin, 'pg_ctl'), '-D', data, '-l', join(dir, 'log'), '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=400`, '-w', 'start'])
  process.on('exit', () => {
    spawnSync(asRoot ? 'runuser' : join(bin, 'pg_ctl'), asRoot ? ['-u', 'postgres', '--', join(bin, 'pg_ctl'), '-D', data, '-m', 'immediate', 'stop'] : ['-D', data, '-m', 'immediate', 'stop'])
    rmSync(dir, { recursive: true, force: true })
  })
  return `postgres://muster@127.0.0.1:${port}/postgres`
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
/** Every store engine: suites that touch the store run once per engine (describe.each). */
export const ENGINES: Engine[] = ['sqlite', 'postgres']
