// SDK: the fleet at a glance (issue 24 #5), as the dashboard's Overview shows it.
import type { Transport } from './http.ts'
import { queryString, type PageOptions } from './paging.ts'
import type { FleetOverview, OverviewNode } from '../overview/fleet.ts'

export type { FleetOverview, OverviewNode, HeartbeatAges, Resources } from '../overview/fleet.ts'
export type { ProjectHealth } from '../overview/usage.ts'

export function overviewApi(call: Transport) {
  return {
    /** Nodes by state, capacity, replicas, heartbeat ages, projects needing attention, the Platforms and their loops. */
    get: () => call<FleetOverview>('GET', '/api/v1/overview'),
    /** One page of nodes in name order with capacity, requests, replicas and heartbeat age (`state`, `q` name prefix, `label` KEY=VALUE). */
    nodes: (opts: PageOptions & { state?: string; q?: string; label?: string } = {}) =>
      call<{ nodes: OverviewNode[]; nextCursor: string | null }>('GET', `/api/v1/overview/nodes${queryString({ ...opts })}`),
  }
}
