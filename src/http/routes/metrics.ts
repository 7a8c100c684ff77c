// GET /metrics (docs/monitoring.md): the Platform's metric families for a
// Prometheus scrape, as text or OpenMetrics (Accept). Any API token may read
// them, a `metrics` token only them; anonymous callers, sessions and node
// credentials may not. The enrollment listener does not forward this path.
import { Elysia } from 'elysia'
import { MusterError } from '../../errors.ts'
import { expose } from '../../metrics/exposition.ts'
import { platformRegistry } from '../../metrics/platform.ts'
import type { Services } from '../services.ts'

export const metricsRoutes = (platform: Services) =>
  new Elysia({ name: 'routes/metrics' }).get('/metrics', async ({ request }) => {
    const p = await platform.auth.authenticate(request.headers)
    if (!p) {
      if (/^Bearer\s+mn[cj]_/i.test(request.headers.get('authorization') ?? '')) throw new MusterError('forbidden', 'Node credentials and join tokens are not accepted here; scrape with an API token (`muster admin api-token --role metrics`).')
      throw new MusterError('unauthorized', 'Authentication required: scrape with an API token (Authorization: Bearer mat_…; `muster admin api-token --role metrics` mints one that reads nothing else).')
    }
    if (p.kind !== 'api-token') throw new MusterError('forbidden', 'Scrape with an API token (Authorization: Bearer mat_…), not a session.')
    const { body, contentType } = await expose(platformRegistry, request.headers.get('accept'))
    return new Response(body, { headers: { 'content-type': contentType, 'cache-control': 'no-store' } })
  })
