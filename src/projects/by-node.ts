// What each node should run, as a pure function of the projects, their
// placements and the replica states nodes report: the current revision of
// every placed replica, plus an old revision's replica while its successor is
// not running yet (a rolling redeploy).
import { canonicalJson } from '../crypto/ed25519.ts'
import { createHmac } from 'node:crypto'
import { deriveKey } from '../crypto/tokens.ts'
import type { AssignedReplica } from '../wire/projects.ts'
import type { Placement } from './placement.ts'
import type { ReplicaStatus } from '../wire/nodes.ts'

export interface RollingPrevious {
  revision: number
  command: string[]
  env: Record<string, string>
  cpu: number
  memory: number
  placements: { replica: number; node: string | null }[]
  since: number
}

export interface PlacedProject {
  name: string
  command: string[]
  env: Record<string, string>
  cpu: number
  memory: number
  revision: number
  previous: RollingPrevious | null
}

/** True when the replica of `project` at `revision` runs on `node`. */
export type RunsCheck = (node: string, project: string, replica: number, revision: number) => boolean

export function runsCheck(states: (node: string) => ReplicaStatus[]): RunsCheck {
  return (node, project, replica, revision) => states(node).some((r) => r.project === project && r.replica === replica && r.revision === revision && r.state === 'running')
}

/** Each node's replicas, sorted, for the projects as placed. */
export function assignmentsByNode(projects: Iterable<PlacedProject>, placements: Placement[], runs: RunsCheck): Map<string, AssignedReplica[]> {
  const byNode = new Map<string, AssignedReplica[]>()
  const add = (node: string | null, r: AssignedReplica) => {
    if (!node) return
    const list = byNode.get(node) ?? []
    list.push(r)
    byNode.set(node, list)
  }
  for (const p of projects) {
    const spec = { command: p.command, env: p.env, cpu: p.cpu, memory: p.memory }
    for (const x of placements) if (x.project === p.name) add(x.node, { project: p.name, replica: x.replica, revision: p.revision, ...spec })
    if (!p.previous) continue
    const prev = p.previous
    for (const x of prev.placements) {
      const newOne = placements.find((y) => y.project === p.name && y.replica === x.replica)
      const replaced = newOne?.node && runs(newOne.node, p.name, x.replica, p.revision)
      if (!replaced) add(x.node, { project: p.name, replica: x.replica, revision: prev.revision, command: prev.command, env: prev.env, cpu: prev.cpu, memory: prev.memory })
    }
  }
  for (const list of byNode.values()) list.sort((a, b) => a.project.localeCompare(b.project) || a.replica - b.replica || a.revision - b.revision)
  return byNode
}

/** A node's assignments' digest: keyed under master.key, since the replicas carry env values (a plain hash would let a reader of the store confirm a guessed value). */
export function assignmentDigest(masterKey: Uint8Array): (replicas: AssignedReplica[]) => string {
  const key = deriveKey(masterKey, 'muster assignment digest v1')
  return (replicas) => createHmac('sha256', key).update(canonicalJson(replicas)).digest('hex')
}
