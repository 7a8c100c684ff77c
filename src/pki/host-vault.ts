// The Platform's vault opened from the host (`muster admin ca …`, doctor),
// with or without a running serve: its store, opened with its master key.
import { existsSync } from 'node:fs'
import type { DataDir } from '../datadir.ts'
import { MusterError } from '../errors.ts'
import { loadMasterKey } from '../context/master-key.ts'
import { openExistingStore } from '../store/open.ts'
import { openVault, type Vault } from '../context/vault.ts'

export interface HostVault {
  vault: Vault
  close(): Promise<void>
}

export async function openPlatformVault(dataDir: DataDir): Promise<HostVault> {
  if (!existsSync(dataDir.path('platform', 'master.key'))) {
    throw new MusterError('not-configured', `${dataDir.root} holds no Platform: start \`muster serve --data-dir ${dataDir.root}\` once first, or pass the right --data-dir.`)
  }
  const masterKey = loadMasterKey(dataDir)
  const store = await openExistingStore(dataDir)
  try {
    return { vault: await openVault(store, dataDir, masterKey), close: () => store.close() }
  } catch (e) {
    await store.close()
    throw e
  }
}
