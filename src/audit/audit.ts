// One audit of every action: who (an account, or a token's name,
// and its kind), from where, what, on what, and how it ended. An action is
// written before it runs, and does not run when that write fails; its outcome
// is written after. Secrets are never handed to it: targets are names and ids.
import type { Principal } from '../auth/auth.ts'
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

export type Outcome = 'started' | 'ok' | 'denied' | 'refused' | 'failed'

/** The principal of a request as the audit names it: the account, else the token's name. */
export function whoOf(p: Principal): Who {
  if (p.kind === 'api-token') return { principal: p.account ?? p.name, kind: 'api-token', tokenId: p.token?.id ?? null }
  return { principal: p.account ?? p.name, kind: p.vouched ? 'vouched-session' : 'session' }
}

export const HOST = (account: string | null = null): Who => ({ principal: account ?? 'host', kind: 'host' })

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
      await finishAuditEntry(this.db, id, {
        outcome: f.outcome,
        detail: clip(f.detail, 500),
        ...(f.who ? { principal: clip(f.who.principal, 200)!, principalKind: f.who.kind } : {}),
        ...(f.target !== undefined ? { target: clip(f.target, 300) } : {}),
        ...(f.budget ? { budget: f.budget } : {}),
      })
      // An entry moved to another budget: that budget is kept to its size too.
      if (f.budget) await pruneAuditLog(this.db, f.budget, this.now(), this.retention)
    } catch (err) {
      log.error(`audit: cannot finish entry ${id}: ${(err as Error).message}`)
    }
  }

  async search(f: AuditFilter): Promise<AuditEntry[]> {
    return (await listAuditEntries(this.db, f, this.now(), this.retention)).map(entryView)
  }
}
