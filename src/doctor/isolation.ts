// doctor's lines about a worker's replicas, from what the Agent recorded at its
// last start (worker/isolation.json): who they run as (a node whose replicas
// can read its key fails), and how they are contained (their own cgroups, and
// whether --cpu and --memory are enforced). docs/security.md.
import type { DataDir } from '../datadir.ts'
import { readIsolation } from '../replicas/isolation.ts'

type Add = (name: string, status: 'ok' | 'warn' | 'fail', message: string) => void

export function checkIsolation(dataDir: DataDir, add: Add): void {
  const i = readIsolation(dataDir)
  if (!i) return add('replica-isolation', 'warn', 'the Agent has not recorded who replicas run as yet (it does at each start)')
  if (!i.isolated) {
    add('replica-isolation', 'fail', `replicas run as ${i.user} and can read this node's key and credential: ${i.reason ?? 'no separate account'}`)
  } else if (i.user === 'per-project') {
    add('replica-isolation', 'ok', `each project's replicas run as a uid of its own (from ${i.uid}), which cannot read this node's key or credential nor touch another project`)
  } else {
    add('replica-isolation', 'ok', `replicas run as ${i.user} (uid ${i.uid}), which cannot read this node's key or credential`)
  }
  if (i.containment === undefined) return
  if (i.containment !== 'cgroup') return add('replica-containment', 'warn', `replicas have no cgroup of their own (${i.containmentReason ?? 'none'}): a stop reaches their process group${i.user === 'per-project' ? " and every process of their project's uid" : ', and a process that left it survives'}`)
  if (!i.limits) return add('replica-containment', 'warn', `each replica runs in its own cgroup under ${i.cgroup}, but --cpu and --memory are not enforced: ${i.containmentReason ?? 'no controllers'}`)
  add('replica-containment', 'ok', `each replica runs in its own cgroup under ${i.cgroup}, with --cpu and --memory as its limits (${i.limits === 'cgroup2' ? 'cpu.max, memory.max' : 'cgroup v1: cpu.cfs_quota_us, memory.limit_in_bytes'})`)
}
