// doctor's lines about a runner's replicas, from what it recorded at its last
// start (worker/isolation.json for an Agent, platform/local-node/isolation.json
// for the Platform's own node): who they run as (replicas that can read the
// node's key, or the Platform's master key, fail), and how they are contained
// (their own cgroups, and whether --cpu and --memory are enforced).
// docs/security.md.
import type { DataDir } from '../datadir.ts'
import { ISOLATION_FILE, readIsolation } from '../replicas/isolation.ts'

type Add = (name: string, status: 'ok' | 'warn' | 'fail', message: string) => void

/** Whose replicas: names of the lines, the file, what they must not read, and who records it. */
export interface IsolationSubject {
  prefix: string
  file: string
  secrets: string
  recorder: string
}

const AGENT: IsolationSubject = { prefix: 'replica', file: ISOLATION_FILE, secrets: "this node's key and credential", recorder: 'the Agent' }

export function checkIsolation(dataDir: DataDir, add: Add, subject: IsolationSubject = AGENT): void {
  const { prefix, secrets } = subject
  const i = readIsolation(dataDir, subject.file)
  if (!i) return add(`${prefix}-isolation`, 'warn', `${subject.recorder} has not recorded who replicas run as yet (it does at each start)`)
  if (!i.isolated) {
    add(`${prefix}-isolation`, 'fail', `replicas run as ${i.user} and can read ${secrets}: ${i.reason ?? 'no separate account'}`)
  } else if (i.user === 'per-project') {
    add(`${prefix}-isolation`, 'ok', `each project's replicas run as a uid of its own (from ${i.uid}), which cannot read ${secrets} nor touch another project`)
  } else {
    add(`${prefix}-isolation`, 'ok', `replicas run as ${i.user} (uid ${i.uid}), which cannot read ${secrets}`)
  }
  if (i.containment === undefined) return
  if (i.containment !== 'cgroup') return add(`${prefix}-containment`, 'warn', `replicas have no cgroup of their own (${i.containmentReason ?? 'none'}): a stop reaches their process group${i.user === 'per-project' ? " and every process of their project's uid" : ', and a process that left it survives'}`)
  if (!i.limits) return add(`${prefix}-containment`, 'warn', `each replica runs in its own cgroup under ${i.cgroup}, but --cpu and --memory are not enforced: ${i.containmentReason ?? 'no controllers'}`)
  add(`${prefix}-containment`, 'ok', `each replica runs in its own cgroup under ${i.cgroup}, with --cpu and --memory as its limits (${i.limits === 'cgroup2' ? 'cpu.max, memory.max' : 'cgroup v1: cpu.cfs_quota_us, memory.limit_in_bytes'})`)
}
