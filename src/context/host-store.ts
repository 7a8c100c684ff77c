// Host-local access to a Platform's data directory for `muster admin …`:
// the store and the services that work without a running server (and while one runs).
import { Auth } from '../auth/auth.ts'
import { Audit, type Outcome, type Who } from '../audit/audit.ts'
import { userInfo } from 'node:os'
import { MusterError } from '../errors.ts'
import { DataDir } from '../datadir.ts'
import { openExistingStore } from '../store/open.ts'
import { readMasterKey } from './master-key.ts'
import { StoreVault } from './vault.ts'
import { rekeyTokenDigests } from '../store/token-digests.ts'
import type { Store } from '../store/db.ts'

export interface HostStore {
  dataDir: DataDir
  db: Store
  auth: Auth
  audit: Audit
  close(): Promise<void>
}

/** Host acts trim nothing: the serving Platform keeps the audit to its configured budget. */
const KEEP_ALL = { maxEntries: Number.MAX_SAFE_INTEGER, maxAgeMs: Number.MAX_SAFE_INTEGER }

/** Where a host act comes from: this machine's user, as the audit's source. */
export function hostSource(): string {
  let user = String(process.getuid?.() ?? '?')
  try {
    user = userInfo().username
  } catch {
    // no passwd entry for this uid: the number stands
  }
  return `host (user ${user})`
}

/**
 * Runs a host act with its audit entry written first (the act does not run
 * when that fails) and its outcome after.
 */
export async function auditedHostAct<T>(host: HostStore, who: Who, action: string, target: string | null, act: () => Promise<T>, detail?: (r: T) => string | null): Promise<T> {
  const id = await host.audit.begin(who, { source: hostSource(), action, target })
  try {
    const r = await act()
    await host.audit.finish(id, { outcome: 'ok', detail: detail?.(r) ?? null })
    return r
  } catch (e) {
    // A refusal (the closed door, a missing account) is 'refused'; anything else 'failed'.
    const outcome: Outcome = e instanceof MusterError && e.status < 500 ? 'refused' : 'failed'
    await host.audit.finish(id, { outcome, detail: e instanceof MusterError ? e.code : 'error' })
    throw e
  }
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
    return { dataDir, db, auth: new Auth({ store: db, now: Date.now, masterKey }), audit: new Audit(db, Date.now, KEEP_ALL), close: () => db.close() }
  } catch (e) {
    await db.close()
    throw e
  }
}
