// Host-local access to a Platform's data directory for `muster admin …`:
// the store and the services that work without a running server (and while one runs).
import { existsSync } from 'node:fs'
import { Auth } from './auth/auth.ts'
import { DataDir } from './datadir.ts'
import { MusterError } from './errors.ts'
import { openDb, type Db } from './store/db.ts'

export interface HostStore {
  dataDir: DataDir
  db: Db
  auth: Auth
  close(): void
}

export function openHostStore(root: string): HostStore {
  const dataDir = new DataDir(root)
  if (!existsSync(dataDir.path('muster.db'))) {
    throw new MusterError('not-configured', `${root} holds no Platform (no muster.db); start \`muster serve --data-dir ${root}\` once first, or pass the right --data-dir.`)
  }
  const db = openDb(dataDir.path('muster.db'))
  return { dataDir, db, auth: new Auth(db, Date.now), close: () => db.close() }
}
