// How `muster serve` is given a PostgreSQL URL without its password on any
// process's argv (docs/security.md): from $MUSTER_DATABASE_URL or
// `--database-file F` (mode 0600). `--database URL` still works, but serve
// warns, hides the password in its own command line as well as it can, and
// gives its engines the URL in their environment (which only this account and
// root can read), never on their argv.
import { readFileSync } from 'node:fs'
import { assertPrivate } from '../datadir.ts'
import { MusterError } from '../errors.ts'
import { tunable, type TunableName } from '../tunables.ts'

/** Where an engine finds the URL its serve process was given (read once, then removed from its environment). */
export const DATABASE_URL_ENV: TunableName = 'MUSTER_DATABASE_URL'

// Both live with the other secrets kept off argv (src/own-argv.ts).
import { databasePassword } from '../own-argv.ts'
export { databasePassword, hideInOwnArgv } from '../own-argv.ts'

/** The URL in `--database-file F`: the file must be readable by its owner only, like every secret muster reads. */
export function readDatabaseFile(path: string): string {
  assertPrivate(path)
  const url = readFileSync(path, 'utf8').trim()
  if (!url) throw new MusterError('not-configured', `${path} is empty: it should hold the store's URL (postgres://USER:PASSWORD@HOST/DB) on one line.`)
  return url
}

/** The command line an engine runs: serve's own, without `--database URL` (the engine gets the URL in its environment). */
export function withoutDatabaseArg(args: string[]): string[] {
  const out: string[] = []
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!
    if (a === '--') {
      out.push(...args.slice(i))
      break
    }
    if (a === '--database') i++
    else if (!a.startsWith('--database=')) out.push(a)
  }
  return out
}

/** The URL with its password shown as `***`, for any message that repeats a command line. */
export function redactPassword(url: string): string {
  const pw = databasePassword(url)
  if (!pw) return url
  try {
    const u = new URL(url)
    if (u.password) u.password = '***'
    if (u.searchParams.has('password')) u.searchParams.set('password', '***')
    return u.toString()
  } catch {
    return '***'
  }
}

/** serve's arguments with the password of a `--database URL` shown as `***` (a refusal may suggest the command line again). */
export function withoutDatabasePassword(args: string[]): string[] {
  return args.map((a, i) => (args[i - 1] === '--database' ? redactPassword(a) : a.startsWith('--database=') ? `--database=${redactPassword(a.slice('--database='.length))}` : a))
}

/**
 * The store URL `muster serve` was given, in the order it is looked for:
 * `--database-file F`, `--database URL`, $MUSTER_DATABASE_URL. The variable is
 * removed from this process's environment once read, so nothing it starts
 * (an engine's replicas) inherits it.
 */
export function serveDatabaseUrl(flags: { database?: string; databaseFile?: string }): string | undefined {
  const url = flags.databaseFile ? readDatabaseFile(flags.databaseFile) : (flags.database ?? tunable(DATABASE_URL_ENV))
  delete process.env[DATABASE_URL_ENV]
  return url
}

