// SDK: the fleet at a glance, as the dashboard's Overview shows it. Every
// type is the route's own (src/wire/overview.ts).
import type { Transport } from './http.ts'
import { queryString, type PageOptions } from './paging.ts'
import type { FleetOverview, OverviewNodePage } from '../wire/overview.ts'

export type { FleetOverview, HeartbeatAges, OverviewNode, OverviewNodePage, ProjectHealth, Resources } from '../wire/overview.ts'

export function overviewApi(call: Transport) {
  return {
    /** Nodes by state, capacity, replicas, heartbeat ages, projects needing attention, the Platforms and their loops. */
    get: () => call<FleetOverview>('GET', '/api/v1/overview'),
    /** One page of nodes in name order with capacity, requests, replicas and heartbeat age (`state`, `q` name prefix, `label` KEY=VALUE). */
    nodes: (opts: PageOptions & { state?: string; q?: string; label?: string } = {}) => call<OverviewNodePage>('GET', `/api/v1/overview/nodes${queryString({ ...opts })}`),
  }
}
