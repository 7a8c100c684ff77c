// The enrollment authority's background loops, each run by one Platform among
// those sharing the store (src/context/leases.ts): the trust-key schedule's writes
// and audit pruning. Every Platform re-reads the trust keys on its own tick
// (TrustKeys.start) and at once when told they changed.
import type { Context } from '../context/context.ts'
import { log } from '../log.ts'
import { pruneAudit } from '../store/enroll-audit.ts'
import { StoreVault } from '../context/vault.ts'
import type { Fabric } from './fabric.ts'
import type { TrustSchedule } from './trust-keys.ts'

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
    if (!local) void fabric.trust.sync().catch(warn('reloading trust keys'))
  })
  // The new holder applies the schedule at once (a successor may be due).
  trustLease.onChange((held) => (held ? fabric.trust.sync() : undefined))
  const timer = setInterval(() => void pruneLease.run(() => pruneLease.fenced((t) => pruneAudit(t, ctx.now()))).catch(warn('pruning the audit log')), PRUNE_MS)
  timer.unref?.()
  ctx.onClose(() => clearInterval(timer))
}
