// The enrollment authority's background loops, each run by one Platform among
// those sharing the store (src/ha/leases.ts): the trust-key schedule and
// audit pruning. Every Platform reloads the trust keys when told they changed.
import type { Context } from '../context.ts'
import { log } from '../log.ts'
import { pruneAudit } from '../store/enroll-audit.ts'
import { StoreVault } from '../vault.ts'
import type { Fabric } from './fabric.ts'
import type { TrustSchedule } from './trust-keys.ts'

const TRUST_TICK_MS = 10_000
/** Followers read the keys again this often, in case a notice was lost. */
const TRUST_RELOAD_MS = 60_000
const PRUNE_MS = 60_000

/** The trust-key schedule's writes: only under the `trust-keys` lease, fenced in the same transaction. */
export function trustSchedule(ctx: Context): TrustSchedule {
  const lease = ctx.leases.lease('trust-keys')
  return {
    held: () => lease.held,
    fenced: (fn) => lease.fenced((t) => fn(new StoreVault(t, ctx.masterKey, ctx.now))),
    changed: () => ctx.changes.publish('trust-keys'),
  }
}

export function startFabricLoops(ctx: Context, fabric: Fabric): void {
  const warn = (what: string) => (e: unknown) => log.warn(`${what}: ${(e as Error).message}`)
  const trustLease = ctx.leases.lease('trust-keys')
  const pruneLease = ctx.leases.lease('audit-prune')
  ctx.changes.on('trust-keys', (_key, local) => {
    if (!local) void fabric.trust.refresh().catch(warn('reloading trust keys'))
  })
  const timers = [
    setInterval(() => void trustLease.run(() => fabric.trust.ensure()).catch(warn('trust keys')), TRUST_TICK_MS),
    setInterval(() => {
      if (!trustLease.held) void fabric.trust.refresh().catch(warn('reloading trust keys'))
    }, TRUST_RELOAD_MS),
    setInterval(() => void pruneLease.run(() => pruneLease.fenced((t) => pruneAudit(t, ctx.now()))).catch(warn('pruning the audit log')), PRUNE_MS),
  ]
  for (const t of timers) t.unref?.()
  ctx.onClose(() => {
    for (const t of timers) clearInterval(t)
  })
}
