// What the Platform's gauges read at scrape time (src/metrics/platform.ts):
// counts the services already keep, a handful of numbers whatever the size
// of the fleet (docs/monitoring.md).
import { watchPlatform } from './metrics/platform.ts'
import type { Platform } from './platform.ts'
import { provisionCounts } from './store/cloud-provisions.ts'

/** Points the gauges at this Platform; the returned function forgets it (the Platform's close). */
export function watchMetrics(p: Platform): () => void {
  return watchPlatform({
    census: () => p.fabric.registry.census.read(),
    replicas: () => p.projects.replicaCounts(),
    platformsLive: () => p.platforms.nodeFacing().length,
    leases: () => p.ctx.leases.all,
    provisions: () => provisionCounts(p.store),
    trustRotationAt: () => p.fabric.trust.rotationAt(),
    caNotAfter: () => p.pki.ca.notAfter.getTime(),
    now: p.now,
  })
}
