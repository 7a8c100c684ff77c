// The Platform's vault opened from the host (`muster admin ca …`, doctor),
// with or without a running serve.
import { existsSync } from 'node:fs'
import { DataDir, resolveDataDir } from '../datadir.ts'
import { MusterError } from '../errors.ts'
import { FileVault, type Vault } from '../vault.ts'

export function openPlatformVault(dataDirFlag?: string): Vault {
  const dataDir = new DataDir(resolveDataDir(dataDirFlag))
  if (!existsSync(dataDir.path('platform', 'master.key'))) {
    throw new MusterError('not-configured', `${dataDir.root} holds no Platform: start \`muster serve --data-dir ${dataDir.root}\` once first, or pass the right --data-dir.`)
  }
  return new FileVault(dataDir)
}
