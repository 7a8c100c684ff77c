// The cloud audit: every action that spends money or changes who may (connect,
// disconnect, provision, release, scaling, autoscale-order) with the principal
// that acted. The record is written before the action runs; when it cannot be
// written the action does not run (503 audit-unavailable).
import { type Principal, principalName } from '../auth/auth.ts'
import { MusterError } from '../errors.ts'
import { log } from '../log.ts'
import type { Db } from '../store/db.ts'
import { finishCloudAudit, insertCloudAudit, listCloudAudit } from '../store/cloud-audit.ts'
import type { CloudAudit } from '../wire/cloud.ts'

export type CloudAction = 'connect' | 'disconnect' | 'provision' | 'release' | 'scaling' | 'autoscale-order'

/** Who acted: an account (session), an API token's account or name, or the autoscaler. */
export interface Actor {
  principal: string
  via: 'session' | 'api-token' | 'autoscaler'
}

export const AUTOSCALER: Actor = { principal: 'autoscaler', via: 'autoscaler' }

export function actorFrom(p: Principal): Actor {
  return { principal: principalName(p), via: p.kind }
}

export interface AuditTarget {
  provider?: string | null
  target?: string | null
  detail?: string | null
}

/**
 * 1. write the record (started)  2. run the action  3. finish the record with
 * its outcome. A failure at 1 refuses the action; one at 3 is logged (the
 * action has happened and its started record stays).
 */
export async function audited<T>(db: Db, now: () => number, actor: Actor, action: CloudAction, what: AuditTarget, run: () => Promise<T> | T, describe?: (r: T) => string | null): Promise<T> {
  let id: number
  try {
    id = await insertCloudAudit(db, { at: now(), action, principal: actor.principal, via: actor.via, provider: what.provider ?? null, target: what.target ?? null, outcome: 'started', detail: what.detail ?? null })
  } catch (e) {
    log.error(`cloud audit: cannot record ${action} by ${actor.principal}: ${(e as Error).message}`)
    throw new MusterError('audit-unavailable', `The cloud audit log cannot be written, so ${action} was not carried out.`)
  }
  const finish = async (outcome: 'ok' | 'failed', detail: string | null) => {
    try {
      await finishCloudAudit(db, id, outcome, detail?.slice(0, 1000) ?? null)
    } catch (e) {
      log.error(`cloud audit: cannot finish record ${id} (${action}): ${(e as Error).message}`)
    }
  }
  try {
    const r = await run()
    await finish('ok', describe ? describe(r) : (what.detail ?? null))
    return r
  } catch (e) {
    await finish('failed', (e as Error).message)
    throw e
  }
}

export async function auditView(db: Db, limit?: number): Promise<CloudAudit> {
  return {
    entries: (await listCloudAudit(db, limit)).map((r) => ({
      at: new Date(r.at).toISOString(),
      action: r.action,
      principal: r.principal,
      via: r.via,
      provider: r.provider,
      target: r.target,
      outcome: r.outcome,
      detail: r.detail,
    })),
  }
}
