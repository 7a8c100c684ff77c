// Host-local access to a Platform's data directory for `muster admin …`:
// the store and the services that work without a running server (and while one runs).
import { Auth } from './auth/auth.ts'
import { DataDir } from './datadir.ts'
import { openExistingStore } from './store/open.ts'
import { readMasterKey } from './master-key.ts'
import { StoreVault } from './vault.ts'
import { rekeyTokenDigests } from './store/token-digests.ts'
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
  try {
    const masterKey = readMasterKey(dataDir)
    // Never re-key with a key that is not this store's (that would end every token): the check a Platform makes at start.
    await new StoreVault(db, masterKey).verifyKey()
    // A host command may be the first of this version to open the store: it re-keys older digests as serve would.
    await rekeyTokenDigests(db, masterKey, Date.now())
    return { dataDir, db, auth: new Auth({ store: db, now: Date.now, masterKey }), close: () => db.close() }
  } catch (e) {
    await db.close()
    throw e
  }
}
