// platform/master.key: 32 random bytes, the root of every key the Platform
// derives (node credentials, sealed secrets). Created on first start, 0600;
// it never enters the store.
import { randomBytes } from '../crypto/tokens.ts'
import type { DataDir } from '../datadir.ts'
import { MusterError } from '../errors.ts'

export const MASTER_KEY_FILE = 'platform/master.key'

export function loadMasterKey(dataDir: DataDir): Uint8Array {
  dataDir.createSecretExclusive(MASTER_KEY_FILE, randomBytes(32))
  return readMasterKey(dataDir)
}

/** The master key of a data directory a Platform already made (host-side commands never make one). */
export function readMasterKey(dataDir: DataDir): Uint8Array {
  const key = dataDir.readSecret(MASTER_KEY_FILE)
  if (!key) throw new MusterError('not-configured', `${dataDir.path(MASTER_KEY_FILE)} is missing: run this as the account that runs muster serve, with that Platform's --data-dir (every Platform on one store has a copy).`)
  if (!key || key.length !== 32) throw new MusterError('insecure-permissions', `${dataDir.path(MASTER_KEY_FILE)} is not 32 bytes; restore it from backup.`)
  return new Uint8Array(key)
}
