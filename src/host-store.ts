// Host-local access to a Platform's data directory for `muster admin …`:
// the store and the services that work without a running server (and while one runs).
import { Auth } from './auth/auth.ts'
import { DataDir } from './datadir.ts'
import { openExistingStore } from './store/open.ts'
import type { Store } from './store/db.ts'

export interface HostStore {
  dataDir: DataDir
  db: Store
  auth: Auth
  close(): Promise<void>
}

export async function openHostStore(root: string): Promise<HostStore> {
  const dataDir = new DataDir(root)
  const db = await openExistingStore(dataDir)
  return { dataDir, db, auth: new Auth({ store: db, now: Date.now }), close: () => db.close() }
}
