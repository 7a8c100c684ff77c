// What the Platform's gauges read at scrape time (src/metrics/platform.ts):
// counts the services already keep, a handful of numbers whatever the size
// of the fleet (docs/monitoring.md).
import type { Context } from '../context/context.ts'
import type { Fabric } from '../fabric/fabric.ts'
import type { PlatformRegistry } from '../ha/live-platforms.ts'
import { watchPlatform } from '../metrics/platform.ts'
import type { Pki } from '../pki/pki.ts'
import type { Projects } from '../projects/service.ts'
import { provisionCounts } from '../store/cloud-provisions.ts'

/** Points the gauges at this Platform's services; the returned function forgets them (the Platform's close). */
export function watchMetrics(p: { ctx: Context; fabric: Fabric; projects: Projects; platforms: PlatformRegistry; pki: Pki; now: () => number }): () => void {
  return watchPlatform({
    census: () => p.fabric.registry.census.read(),
    replicas: () => p.projects.replicaCounts(),
    platformsLive: () => p.platforms.nodeFacing().length,
    leases: () => p.ctx.leases.all,
    provisions: () => provisionCounts(p.ctx.store),
    trustRotationAt: () => p.fabric.trust.rotationAt(),
    caNotAfter: () => p.pki.ca.notAfter.getTime(),
    now: p.now,
  })
}
