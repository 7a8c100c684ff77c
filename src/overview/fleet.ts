// The fleet at a glance: GET /api/v1/overview answers "is my
// fleet healthy" in one small document whatever the fleet's size — nodes by
// state, capacity reported and requested, replicas placed and running,
// heartbeat ages in buckets, the projects that do not run all they ask for,
// the Platforms alive and the loops each runs, and which Platform answered.
// GET /api/v1/overview/nodes pages the nodes with what runs on each.
//
// Nodes come from the registry (the store's nodes in memory, with the
// heartbeats and probe results not flushed yet: the same truth the node list
// shows), the loops from the store's leases. Nothing here is O(nodes) more
// than once per request.
import { hostname } from 'node:os'
import { roleCan, type Role } from '../wire/permissions.ts'
import { nodeQuery } from '../fabric/listing.ts'
import type { NodeEntry } from '../fabric/registry.ts'
import { encodeCursor, indexAfter, indexFrom } from '../wire/paging.ts'
import type { Context } from '../context/context.ts'
import type { Fabric } from '../fabric/fabric.ts'
import type { Projects } from '../projects/service.ts'
import { allLeases } from '../store/leases.ts'
import { VERSION } from '../version.ts'
import { needingAttention, NO_USAGE, usageOf, type NodeUsage } from './usage.ts'
import type { FleetOverview, HeartbeatAges, OverviewNode, OverviewNodePage, ProjectHealth, Resources } from '../wire/overview.ts'
import type { NodeStateName, StateCounts } from '../wire/nodes.ts'

/** How many projects needing attention the overview names (the Projects page has them all). */
export const ATTENTION_SHOWN = 10

interface Row {
  name: string
  state: NodeStateName
  reason?: string
  drained: boolean
  lastSeenAt: number | null
  capacity: Resources | null
}

/** The registry's nodes, and the Platform's own node when it runs one. */
/** What the overview reads (the routes pass the Platform's services). */
export interface FleetSources {
  readonly ctx: Context
  readonly fabric: Fabric
  readonly projects: Projects
  readonly now: () => number
  /** The URL operators and nodes use to reach the API. */
  readonly publicUrl: string
}

function rowOf(s: FleetSources, n: NodeEntry): Row {
  const st = s.fabric.registry.state(n)
  return {
    name: n.name,
    state: st.state,
    ...(st.reason ? { reason: st.reason } : {}),
    drained: s.fabric.nodeSettings(n).drained,
    lastSeenAt: n.lastSeenAt,
    capacity: n.cpuMillis !== null && n.memoryMB !== null ? { cpuMillis: n.cpuMillis, memoryMB: n.memoryMB } : null,
  }
}

function localRow(s: FleetSources): Row | null {
  const local = s.fabric.localNode?.()
  if (!local) return null
  const c = local.capacity
  return { name: local.name, state: local.state as NodeStateName, drained: local.drained, lastSeenAt: s.now(), capacity: c && c.memoryMB !== null ? { cpuMillis: c.cpuMillis, memoryMB: c.memoryMB } : null }
}

export async function fleetOverview(s: FleetSources, role: Role): Promise<FleetOverview> {
  const now = s.now()
  const [platforms, leases] = await Promise.all([s.fabric.platformsView(), allLeases(s.ctx.store)])
  const views = s.projects.list().projects
  const { byNode, projects } = usageOf(views)

  const counts: StateCounts = { total: 0, enrolled: 0, ready: 0, unreachable: 0, revoked: 0 }
  const capacity: Resources = { cpuMillis: 0, memoryMB: 0 }
  const used: Resources = { cpuMillis: 0, memoryMB: 0 }
  const heartbeats: HeartbeatAges = { within15s: 0, within1m: 0, within5m: 0, older: 0, never: 0 }
  let drained = 0
  const count = (r: Row) => {
    counts.total++
    counts[r.state]++
    if (r.drained) drained++
    if (r.state === 'ready' && r.capacity) {
      const u = byNode.get(r.name) ?? NO_USAGE
      capacity.cpuMillis += r.capacity.cpuMillis
      capacity.memoryMB += r.capacity.memoryMB
      used.cpuMillis += u.cpuMillis
      used.memoryMB += u.memoryMB
    }
    if (r.state === 'revoked') return
    if (r.lastSeenAt === null) heartbeats.never++
    else {
      const age = now - r.lastSeenAt
      if (age <= 15_000) heartbeats.within15s++
      else if (age <= 60_000) heartbeats.within1m++
      else if (age <= 300_000) heartbeats.within5m++
      else heartbeats.older++
    }
  }
  const local = localRow(s)
  if (local) count(local)
  for (const n of s.fabric.registry.nodes.values()) count(rowOf(s, n))

  const live = new Set(platforms.map((p) => p.id))
  const loops = leases.map((l) => ({ name: l.name, platform: l.live === 1 && live.has(l.holder) ? l.holder : null }))
  const attention = needingAttention(projects)
  const sum = (f: (p: ProjectHealth) => number) => projects.reduce((a, p) => a + f(p), 0)
  return {
    at: new Date(now).toISOString(),
    self: { id: s.ctx.changes.origin, hostname: hostname(), url: s.publicUrl, version: VERSION },
    platforms,
    loops,
    nodes: { counts, drained, capacity, used, heartbeats },
    replicas: { desired: sum((p) => p.desired), placed: sum((p) => p.placed), running: sum((p) => p.running), shortfall: sum((p) => p.shortfall) },
    projects: roleCan(role, 'server.projects.view') ? { total: projects.length, needingAttention: attention.length, attention: attention.slice(0, ATTENTION_SHOWN) } : null,
  }
}

const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString())

function overviewNode(r: Row, u: NodeUsage, now: number): OverviewNode {
  return {
    name: r.name,
    state: r.state,
    ...(r.reason ? { reason: r.reason } : {}),
    drained: r.drained,
    lastSeenAt: iso(r.lastSeenAt),
    heartbeatAgeMs: r.lastSeenAt === null ? null : Math.max(0, now - r.lastSeenAt),
    capacity: r.capacity,
    used: { cpuMillis: u.cpuMillis, memoryMB: u.memoryMB },
    replicas: { placed: u.placed, running: u.running },
  }
}

/**
 * One page of nodes in name order (the Platform's own node first), with what
 * runs on each: `limit`, `cursor`, `state`, `q` (name prefix), `label` as in
 * GET /api/v1/nodes.
 */
export function overviewNodes(s: FleetSources, query: Record<string, unknown>): OverviewNodePage {
  const q = nodeQuery(query)
  const now = s.now()
  const { byNode } = usageOf(s.projects.list().projects)
  const usage = (name: string) => byNode.get(name) ?? NO_USAGE
  const registry = s.fabric.registry
  const wanted = (r: Row, labels: Record<string, string>) =>
    (q.state === undefined || r.state === q.state) && (q.q === undefined || r.name.startsWith(q.q)) && (q.label === undefined || labels[q.label.key] === q.label.value)

  const nodes: OverviewNode[] = []
  const local = localRow(s)
  // A cursor at `local` (it leads, out of name order) means "from the first name".
  if (local && q.after === undefined && wanted(local, {})) nodes.push(overviewNode(local, usage(local.name), now))
  const names = registry.sortedNames()
  const from = Math.max(q.q === undefined ? 0 : indexFrom(names, q.q), q.after === undefined || q.after === 'local' ? 0 : indexAfter(names, q.after))
  let nextCursor: string | null = null
  for (let i = from; i < names.length; i++) {
    const n = registry.get(names.at(i)!)
    if (!n) continue
    if (q.q !== undefined && !n.name.startsWith(q.q)) break
    const r = rowOf(s, n)
    if (!wanted(r, s.fabric.nodeSettings(n).labels)) continue
    if (nodes.length === q.limit) {
      nextCursor = encodeCursor(nodes[nodes.length - 1]!.name)
      break
    }
    nodes.push(overviewNode(r, usage(r.name), now))
  }
  return { nodes, nextCursor }
}
