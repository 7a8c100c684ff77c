// A throwaway PostgreSQL cluster in a directory of its own, for `muster demo
// --ha` (and the tests): initdb with trust authentication on 127.0.0.1 only,
// a free port, and an immediate stop that removes nothing but the cluster.
// As root the server binaries refuse to run, so they run as the `postgres`
// user, which must own the directory.
import { spawnSync } from 'node:child_process'
import { chownSync, existsSync, mkdirSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { freePort } from '../addresses.ts'
import { MusterError } from '../errors.ts'

export const INSTALL_HINT =
  'PostgreSQL server binaries (initdb, pg_ctl) were not found. Install them and run this again: Debian/Ubuntu `apt-get install postgresql`, Fedora `dnf install postgresql-server`, macOS `brew install postgresql`.'

/** The directory holding initdb and pg_ctl: Debian's /usr/lib/postgresql/<newest>/bin, else PATH. */
export function postgresBinDir(): string | null {
  const root = '/usr/lib/postgresql'
  const versions = existsSync(root) ? readdirSync(root).sort((a, b) => Number(b) - Number(a)) : []
  for (const v of versions) if (existsSync(join(root, v, 'bin', 'initdb'))) return join(root, v, 'bin')
  const which = spawnSync('sh', ['-c', 'command -v initdb'], { encoding: 'utf8' })
  const found = which.status === 0 ? which.stdout.trim() : ''
  return found ? found.replace(/\/initdb$/, '') : null
}

export interface ThrowawayPostgres {
  /** postgres://muster@127.0.0.1:PORT/postgres */
  url: string
  /** Stops the server at once (the directory stays for the caller to remove). */
  stop(): void
}

/** Starts a cluster in `dir` (created; must be empty). Extra server settings go in `settings`. */
export async function startThrowawayPostgres(dir: string, settings: string[] = []): Promise<ThrowawayPostgres> {
  const bin = postgresBinDir()
  if (!bin) throw new MusterError('not-configured', INSTALL_HINT)
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const asRoot = process.getuid?.() === 0
  if (asRoot) {
    const id = (flag: string) => Number(spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' }).stdout.trim())
    if (!Number.isInteger(id('-u'))) throw new MusterError('not-configured', 'Running as root, PostgreSQL must run as the `postgres` user, which does not exist; install the postgresql package (it creates it).')
    chownSync(dir, id('-u'), id('-g'))
  }
  const run = (args: string[]) => {
    const cmd = asRoot ? ['runuser', '-u', 'postgres', '--', ...args] : args
    const r = spawnSync(cmd[0]!, cmd.slice(1), { encoding: 'utf8' })
    if (r.status !== 0) throw new MusterError('internal', `${args[0]} failed: ${(r.stderr || r.stdout || '').trim().split('\n').slice(-3).join(' / ')}`)
  }
  const data = join(dir, 'data')
  run([join(bin, 'initdb'), '-D', data, '-A', 'trust', '-U', 'muster', '--no-sync'])
  const port = await freePort()
  const options = [`-p ${port}`, `-k ${dir}`, '-c listen_addresses=127.0.0.1', ...settings.map((s) => `-c ${s}`)].join(' ')
  run([join(bin, 'pg_ctl'), '-D', data, '-l', join(dir, 'log'), '-o', options, '-w', 'start'])
  return {
    url: `postgres://muster@127.0.0.1:${port}/postgres`,
    stop: () => void spawnSync(asRoot ? 'runuser' : join(bin, 'pg_ctl'), asRoot ? ['-u', 'postgres', '--', join(bin, 'pg_ctl'), '-D', data, '-m', 'immediate', 'stop'] : ['-D', data, '-m', 'immediate', 'stop']),
  }
}
