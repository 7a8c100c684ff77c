// One audit of every action: who (an account, or `token:<id>` for a token of no
// account, and its kind), from where, what, on what, and how it ended. An action is
// written before it runs, and does not run when that write fails; its outcome
// is written after. Secrets are never handed to it: targets are names and ids.
import { principalName, type Principal } from '../auth/auth.ts'
import { MusterError } from '../errors.ts'
import { log } from '../log.ts'
import type { Db } from '../store/db.ts'
import { DEFAULT_AUDIT_RETENTION, finishAuditEntry, insertAuditEntry, insertAuditRow, listAuditEntries, pruneAuditLog, type AuditBudget, type AuditFilter, type AuditLogRow, type AuditRetention } from '../store/audit-log.ts'
import type { AuditEntry } from '../wire/accounts.ts'

export type { AuditRetention }
export { DEFAULT_AUDIT_RETENTION }

/** How a principal acted: a password session, a vouched session, an API token, the host's CLI, the controller, or nobody known. */
export type PrincipalKind = 'session' | 'vouched-session' | 'api-token' | 'host' | 'controller' | 'anonymous' | 'platform'

export interface Who {
  principal: string
  kind: PrincipalKind
  tokenId?: string | null
}

/** `unchanged`: the write was allowed and found nothing to change (a logout without a session); it is no action. */
export type Outcome = 'started' | 'ok' | 'unchanged' | 'denied' | 'refused' | 'failed'

/**
 * The principals of the audit (docs/accounts-audit.md): forms no account name can take (an account name has
 * no `:`, `(` or space), so no one can appear as someone else.
 *   <account>     a person: a password or vouched session, or an API token tied to the account (the kind says which)
 *   token:<id>    an API token tied to no account (its name is a label its minter chose, never the principal)
 *   (host)        someone with the data directory on the Platform's host (`muster admin …`)
 *   (controller)  the controller, by a signed call to an office
 *   (unknown)     no credential that verified: a failed login, a refused vouch, an unknown or suspended token
 *                 (a presented token's id is in tokenId; it proves nothing)
 */
export const HOST_PRINCIPAL = '(host)'
export const CONTROLLER_PRINCIPAL = '(controller)'
export const UNKNOWN_PRINCIPAL = '(unknown)'

/** The principal of a request as the audit names it. */
export function whoOf(p: Principal): Who {
  if (p.kind === 'api-token') return { principal: principalName(p), kind: 'api-token', tokenId: p.token?.id ?? null }
  return { principal: principalName(p), kind: p.vouched ? 'vouched-session' : 'session' }
}

/** A host act: by whoever holds the data directory, whichever account it acts for (that account is in the target). */
export const HOST = (): Who => ({ principal: HOST_PRINCIPAL, kind: 'host' })

export function entryView(r: AuditLogRow): AuditEntry {
  return { id: Number(r.id), at: new Date(Number(r.at)).toISOString(), principal: r.principal, principalKind: r.principal_kind, tokenId: r.token_id, source: r.source, action: r.action, target: r.target, outcome: r.outcome, detail: r.detail }
}

const clip = (s: string | null | undefined, n: number) => (s === null || s === undefined ? null : s.length > n ? `${s.slice(0, n - 1)}…` : s)

export class Audit {
  constructor(
    private readonly db: Db,
    private readonly now: () => number,
    readonly retention: AuditRetention = DEFAULT_AUDIT_RETENTION,
  ) {}

  /** Writes an entry before its action runs; refuses the action (503 audit-unavailable) when it cannot. */
  async begin(who: Who, e: { source: string; action: string; target?: string | null; budget?: AuditBudget; outcome?: Outcome; detail?: string | null }): Promise<number> {
    try {
      return await insertAuditEntry(
        this.db,
        {
          at: this.now(),
          budget: e.budget ?? 'actions',
          principal: clip(who.principal, 200)!,
          principal_kind: who.kind,
          token_id: who.tokenId ?? null,
          source: clip(e.source, 100)!,
          action: e.action,
          target: clip(e.target, 300),
          outcome: e.outcome ?? 'started',
          detail: clip(e.detail, 500),
        },
        this.retention,
        // An entry whose outcome is still to come is counted in the budget it ends in (finish).
        (e.outcome ?? 'started') !== 'started',
      )
    } catch (err) {
      log.error(`audit: cannot record ${e.action} by ${who.principal}: ${(err as Error).message}`)
      throw new MusterError('audit-unavailable', `The audit log cannot be written, so ${e.action} was not carried out; see the Platform log.`)
    }
  }

  /** A whole entry at once (what has already been decided: a refusal, a host act about to run). */
  record(who: Who, e: { source: string; action: string; target?: string | null; budget?: AuditBudget; outcome: Outcome; detail?: string | null }): Promise<number> {
    return this.begin(who, e)
  }

  /**
   * A step the Platform itself took (a rollout telling a node), written in `db` — the transaction of the
   * step, so the step and its entry are kept together — without trimming its budget; `prune` does that,
   * once for many entries (a rollout over ten thousand nodes writes twenty thousand).
   */
  async recordStep(db: Db, who: Who, e: { action: string; target?: string | null; budget: AuditBudget; outcome: Outcome; detail?: string | null }): Promise<void> {
    await insertAuditRow(db, { at: this.now(), budget: e.budget, principal: clip(who.principal, 200)!, principal_kind: who.kind, token_id: null, source: 'platform', action: e.action, target: clip(e.target, 300), outcome: e.outcome, detail: clip(e.detail, 500) })
  }

  /** Keeps `budget` within the retention. */
  async pruneBudget(budget: AuditBudget): Promise<void> {
    await pruneAuditLog(this.db, budget, this.now(), this.retention)
  }

  /** The outcome of an entry written by begin; a failure is logged (the action has happened, its started entry stays). */
  async finish(id: number, f: { outcome: Outcome; detail?: string | null; who?: Who; target?: string | null; budget?: AuditBudget }): Promise<void> {
    try {
      const ended = await finishAuditEntry(this.db, id, {
        outcome: f.outcome,
        detail: clip(f.detail, 500),
        ...(f.who ? { principal: clip(f.who.principal, 200)!, principalKind: f.who.kind } : {}),
        ...(f.target !== undefined ? { target: clip(f.target, 300) } : {}),
        ...(f.budget ? { budget: f.budget } : {}),
      })
      // Counted now, in the budget it ended in: the writer's own entries beyond its share go first.
      if (ended) await pruneAuditLog(this.db, ended.budget, this.now(), this.retention, ended.principal)
    } catch (err) {
      log.error(`audit: cannot finish entry ${id}: ${(err as Error).message}`)
    }
  }

  async search(f: AuditFilter): Promise<AuditEntry[]> {
    return (await listAuditEntries(this.db, f, this.now(), this.retention)).map(entryView)
  }
}
