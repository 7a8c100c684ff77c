// What the projects take of each node: the CPU and memory their placed
// replicas request, how many are placed there and how many the node reports
// running. One pass over the projects as placed, on the Platform:
// the dashboard never sees more than the totals and one page of nodes.
import type { ProjectHealth } from '../wire/overview.ts'
import type { ProjectView } from '../wire/projects.ts'

export interface NodeUsage {
  /** Millicores and MB requested by the replicas placed on the node. */
  cpuMillis: number
  memoryMB: number
  /** Replicas placed on the node, and those of them it reports running. */
  placed: number
  running: number
}

export const NO_USAGE: Readonly<NodeUsage> = Object.freeze({ cpuMillis: 0, memoryMB: 0, placed: 0, running: 0 })

/** Per node: requests, placed and running replicas; per project: desired, placed, running, shortfall. */
export function usageOf(projects: readonly ProjectView[]): { byNode: Map<string, NodeUsage>; projects: ProjectHealth[] } {
  const byNode = new Map<string, NodeUsage>()
  const health: ProjectHealth[] = []
  for (const p of projects) {
    let placed = 0
    let running = 0
    for (const x of p.placements) {
      if (x.node === null) continue
      placed++
      const on = x.state === 'running'
      if (on) running++
      let u = byNode.get(x.node)
      if (!u) byNode.set(x.node, (u = { cpuMillis: 0, memoryMB: 0, placed: 0, running: 0 }))
      u.cpuMillis += p.cpu
      u.memoryMB += p.memory
      u.placed++
      if (on) u.running++
    }
    health.push({ name: p.name, desired: p.replicas, placed, running, shortfall: p.shortfall, reason: p.reason })
  }
  return { byNode, projects: health }
}

/** Projects that do not run all they ask for, the furthest behind first (then by name). */
export function needingAttention(projects: readonly ProjectHealth[]): ProjectHealth[] {
  return projects.filter((p) => p.running < p.desired).sort((a, b) => b.desired - b.running - (a.desired - a.running) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
}
