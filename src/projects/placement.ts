// Placement: which node runs each replica. A pure function of the projects,
// the nodes and the previous placement, so the same inputs always give the
// same answer. Replicas stay where they are while their node can keep them;
// new ones go where they fit, spread across nodes. A replica goes only to a
// node that may run its project (labels; the local node only for a superadmin's).
import { labelsAdmit, type Labels } from '../wire/labels.ts'
import type { ShortfallReason } from '../wire/projects.ts'

/** What placement needs of a project. */
export interface PlacementSpec {
  name: string
  replicas: number
  cpu: number
  memory: number
  /** Labels a node must carry, every one of them. */
  nodeLabels?: Labels
  /** May run on the Platform's own node `local` (with the Platform's privileges): a superadmin deployed it here. */
  allowLocal?: boolean
}

export interface PlacementNode {
  name: string
  cpuMillis: number
  memoryMB: number
  /** May receive new replicas (ready, not drained). */
  schedulable: boolean
  /** May keep the replicas it has (ready, or unreachable within the grace period, and not drained). */
  keeps: boolean
  labels?: Labels
}

/** Whether `node` may run replicas of `spec` at all (docs/security.md, docs/cloud.md). */
export function eligible(spec: PlacementSpec, node: PlacementNode): boolean {
  if (node.name === 'local' && !spec.allowLocal) return false
  return labelsAdmit(node.labels ?? {}, spec.nodeLabels ?? {})
}

export interface Placement {
  project: string
  replica: number
  node: string | null
}

export interface PlacementResult {
  placements: Placement[]
  /** Per project: replicas that fit nowhere although nodes were eligible. */
  shortfall: Map<string, number>
  /** Per project: why replicas are unplaced, when any are. */
  reasons: Map<string, ShortfallReason>
}

const key = (project: string, replica: number) => `${project}/${replica}`

export function place(projects: PlacementSpec[], nodes: PlacementNode[], previous: Placement[]): PlacementResult {
  const byName = new Map(nodes.map((n) => [n.name, n]))
  const free = new Map(nodes.map((n) => [n.name, { cpu: n.cpuMillis, memory: n.memoryMB }]))
  const count = new Map<string, number>() // replicas per node, all projects
  const prev = new Map(previous.filter((p) => p.node !== null).map((p) => [key(p.project, p.replica), p.node!]))
  const sorted = [...projects].sort((a, b) => a.name.localeCompare(b.name))
  const result: PlacementResult = { placements: [], shortfall: new Map(), reasons: new Map() }
  const take = (node: string, spec: PlacementSpec) => {
    const f = free.get(node)!
    f.cpu -= spec.cpu
    f.memory -= spec.memory
    count.set(node, (count.get(node) ?? 0) + 1)
  }
  const fits = (node: string, spec: PlacementSpec) => {
    const f = free.get(node)
    return f !== undefined && f.cpu >= spec.cpu && f.memory >= spec.memory
  }

  // 1. Keep every replica whose node can still hold it (first come in name order).
  const kept = new Map<string, string>()
  for (const spec of sorted) {
    for (let r = 0; r < spec.replicas; r++) {
      const node = prev.get(key(spec.name, r))
      const n = node ? byName.get(node) : undefined
      if (n?.keeps && eligible(spec, n) && fits(n.name, spec)) {
        take(n.name, spec)
        kept.set(key(spec.name, r), n.name)
      }
    }
  }
  // 2. Place the rest: fewest replicas of this project, then fewest overall, then most free CPU, then name.
  const schedulable = nodes.filter((n) => n.schedulable)
  for (const spec of sorted) {
    const allowed = schedulable.filter((n) => eligible(spec, n)).map((n) => n.name)
    const mine = new Map<string, number>()
    for (let r = 0; r < spec.replicas; r++) {
      const k = kept.get(key(spec.name, r))
      if (k) mine.set(k, (mine.get(k) ?? 0) + 1)
    }
    for (let r = 0; r < spec.replicas; r++) {
      let node = kept.get(key(spec.name, r)) ?? null
      if (!node) {
        // The first of the fitting nodes in this order (one pass, not a sort: 100,000 nodes are many).
        const before = (a: string, b: string) =>
          (mine.get(a) ?? 0) - (mine.get(b) ?? 0) ||
          (count.get(a) ?? 0) - (count.get(b) ?? 0) ||
          free.get(b)!.cpu - free.get(a)!.cpu ||
          a.localeCompare(b)
        for (const n of allowed) if (fits(n, spec) && (node === null || before(n, node) < 0)) node = n
        if (node) {
          take(node, spec)
          mine.set(node, (mine.get(node) ?? 0) + 1)
        } else if (allowed.length === 0) {
          result.reasons.set(spec.name, 'no-eligible-node')
        } else {
          result.reasons.set(spec.name, 'insufficient-capacity')
          result.shortfall.set(spec.name, (result.shortfall.get(spec.name) ?? 0) + 1)
        }
      }
      result.placements.push({ project: spec.name, replica: r, node })
    }
  }
  return result
}
