// doctor's line about who a worker's replicas run as, from
// what the Agent recorded at its last start (worker/isolation.json).
import type { DataDir } from '../datadir.ts'
import { readIsolation } from '../replicas/isolation.ts'

type Add = (name: string, status: 'ok' | 'warn' | 'fail', message: string) => void

export function checkIsolation(dataDir: DataDir, add: Add): void {
  const i = readIsolation(dataDir)
  if (!i) return add('replica-isolation', 'warn', 'the Agent has not recorded who replicas run as yet (it does at each start)')
  if (i.isolated) return add('replica-isolation', 'ok', `replicas run as ${i.user} (uid ${i.uid}), which cannot read this node's key or credential`)
  add('replica-isolation', 'warn', `replicas run as ${i.user}, the Agent's own user, and can read this node's key and credential: ${i.reason ?? 'no separate account'}`)
}
