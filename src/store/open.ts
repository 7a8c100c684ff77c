// Which store a data directory uses, and opening it. SQLite muster.db in the
// data directory is the default. A PostgreSQL URL comes from `serve
// --database`, else MUSTER_DATABASE_URL, else platform/database-url (written
// when serve first ran with a URL, or by `admin migrate-store`), so host-side
// commands such as `admin api-token` find the same store; it is 0600 because
// a URL may hold a password. With PostgreSQL no SQLite file is made.
import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import type { DataDir } from '../datadir.ts'
import { MusterError } from '../errors.ts'
import { openStore, type Store } from './db.ts'
import { isPostgresUrl } from './sql-postgres.ts'
import { tunable } from '../tunables.ts'

export const DATABASE_URL_FILE = 'platform/database-url'
export const SQLITE_FILE = 'muster.db'

/** The store URL for a data directory: a postgres:// URL, or the path of its SQLite file. */
export function storeUrlFor(dataDir: DataDir, given?: string): string {
  const url = given?.trim() || tunable('MUSTER_DATABASE_URL')?.trim() || dataDir.readSecretText(DATABASE_URL_FILE)?.trim()
  if (!url) return dataDir.path(SQLITE_FILE)
  if (isPostgresUrl(url)) return url
  const file = resolve(url.replace(/^sqlite:(\/\/)?/, ''))
  if (file !== resolve(dataDir.path(SQLITE_FILE))) {
    throw new MusterError('not-configured', `The store is either postgres://… or the data directory's own SQLite file (sqlite://${dataDir.path(SQLITE_FILE)}); got ${url.startsWith('sqlite:') ? url : 'something else'}.`)
  }
  return file
}

/** Opens (and migrates) a Platform's store, remembering a PostgreSQL URL for host-side commands. */
export async function openPlatformStore(dataDir: DataDir, given?: string): Promise<Store> {
  const url = storeUrlFor(dataDir, given)
  const store = await openStore(url)
  if (isPostgresUrl(url) && dataDir.readSecretText(DATABASE_URL_FILE)?.trim() !== url) dataDir.writeSecret(DATABASE_URL_FILE, `${url}\n`)
  return store
}

/** Opens the store of a data directory that a Platform has used (host-side commands). */
export async function openExistingStore(dataDir: DataDir): Promise<Store> {
  const url = storeUrlFor(dataDir)
  if (!isPostgresUrl(url) && !existsSync(url)) {
    throw new MusterError('not-configured', `${dataDir.root} holds no Platform (no ${SQLITE_FILE}); start \`muster serve --data-dir ${dataDir.root}\` once first, or pass the right --data-dir.`)
  }
  return openStore(url)
}
