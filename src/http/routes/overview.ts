// The fleet at a glance: the overview and its page of nodes
// with what runs on each. Aggregated on the Platform: the answer's size does
// not grow with the fleet.
import { Elysia } from 'elysia'
import type { Services } from '../services.ts'
import { fleetOverview, overviewNodes } from '../../overview/fleet.ts'

export const overviewRoutes = (platform: Services) =>
  new Elysia({ name: 'routes/overview', prefix: '/api/v1' })
    .get('/overview', async ({ request }) => {
      const { role } = await platform.auth.require(request.headers, 'server.nodes.view')
      return fleetOverview(platform, role)
    })
    .get('/overview/nodes', async ({ request, query }) => {
      await platform.auth.require(request.headers, 'server.nodes.view')
      return overviewNodes(platform, query)
    })
