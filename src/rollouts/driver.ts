// The rollout driver (docs/upgrading.md "Rollouts"): run by the Platform that
// holds the `rollouts` lease, on a short tick and whenever a node reports. Each
// tick reads a summary of the active rollout (counts by state, the canaries,
// the last failure; never every node), decides the next step
// (src/rollouts/plan.ts) and takes it in one transaction fenced by the lease,
// each node's move with its audit entry: tell the next nodes in order, halt,
// finish. Every few seconds it also adds selected nodes that joined since the
// start, and fails told nodes that went silent.
import type { Audit, Who } from '../audit/audit.ts'
import type { Context } from '../context/context.ts'
import type { Fabric } from '../fabric/fabric.ts'
import { parseLabelArgs } from '../wire/labels.ts'
import type { Lease } from '../context/leases.ts'
import { log } from '../log.ts'
import type { Db } from '../store/db.ts'
import { nodeAgents, releasesOfVersion, type ReleaseRow } from '../store/releases.ts'
import {
  activeRollout, IN_FLIGHT, insertRolloutNode, markCanariesDone, moveRolloutNode, nextPosition, pendingInOrder, rolloutNodes, rolloutNodesIn, rolloutSummaryRows, setRolloutState,
  type RolloutNodeRow, type RolloutRow,
} from '../store/rollouts.ts'
import { groupOf, initialState, nextStep, type Candidate } from './plan.ts'
import { selectorOf } from './view.ts'

/** A directive is good for this long. */
export const DIRECTIVE_TTL_MS = 10 * 60_000
/** How often the driver looks for selected nodes that joined after the start. */
const NEWCOMERS_MS = 3_000
/** Steps of the driver are at least this far apart (a burst of reports makes one step). */
const MIN_GAP_MS = 50
/** How often told nodes are checked for silence (they have minutes). */
const SILENCE_CHECK_MS = 2_000
/** How often the rollouts budget of the audit is trimmed. */
const PRUNE_MS = 5_000
/** A told node that reports nothing for this long has failed. */
const SILENT_MS = 2 * DIRECTIVE_TTL_MS

const PLATFORM_WHO = (id: string): Who => ({ principal: `rollout ${id}`, kind: 'platform' })

/** The selected nodes as the plan sees them (labels the nodes file may override). */
export async function selectedNodes(ctx: Context, fabric: Fabric, selector: Record<string, string>): Promise<Candidate[]> {
  const agents = new Map((await nodeAgents(ctx.store)).map((a) => [a.name, a]))
  const out: Candidate[] = []
  for (const n of fabric.registry.nodes.values()) {
    if (n.revokedAt !== null || n.auth !== 'enrolled') continue
    const { labels } = fabric.nodeSettings(n)
    if (!Object.entries(selector).every(([k, v]) => labels[k] === v)) continue
    out.push({ name: n.name, labels, agent: agents.get(n.name) ?? null })
  }
  return out
}

/** An audit entry for a step of rollout `id` the Platform took, in the step's own transaction `t`. */
export function auditStep(audit: Audit, t: Db, id: string, action: string, target: string, detail: string | null, outcome: 'ok' | 'failed' = 'ok'): Promise<void> {
  return audit.recordStep(t, PLATFORM_WHO(id), { action, target, detail, outcome, budget: 'rollouts' })
}

export class RolloutDriver {
  private ticking: Promise<void> | undefined
  /** performance.now() of the last look for nodes that joined since the start (every few seconds, not every tick). */
  private lookedForNewcomers = -Infinity
  /** The fleet's size and the node_agents count at that look. */
  private newcomersMark = ''
  private prunedAt = -Infinity
  private again = false
  private lastDrive = -Infinity
  private lookedForSilence = -Infinity

  constructor(
    private readonly ctx: Context,
    private readonly fabric: Fabric,
    private readonly audit_: Audit,
    private readonly lease: Lease,
  ) {}

  get busy(): Promise<void> | undefined {
    return this.ticking
  }

  /** One step; asked during a step, one more runs right after it (a report that came meanwhile is acted on). */
  tick(): Promise<void> {
    if (!this.lease.held) return Promise.resolve()
    if (this.ticking) {
      this.again = true
      return this.ticking
    }
    this.ticking = (async () => {
      do {
        this.again = false
        // Reports that come in a burst (hundreds of nodes at once) are taken together: one step per gap at most.
        const wait = this.lastDrive + MIN_GAP_MS - performance.now()
        if (wait > 0) await new Promise((r) => setTimeout(r, wait))
        this.lastDrive = performance.now()
        await this.lease.run(() => this.drive()).catch((e) => log.warn(`rollouts: ${(e as Error).message}`))
      } while (this.again && this.lease.held)
    })().finally(() => (this.ticking = undefined))
    return this.ticking
  }

  private async drive(): Promise<void> {
    const r = await activeRollout(this.ctx.store)
    if (!r) return
    const now = this.ctx.now()
    if (performance.now() - this.lookedForNewcomers >= NEWCOMERS_MS) {
      this.lookedForNewcomers = performance.now()
      await this.addNewcomers(r, now)
    }
    if (performance.now() - this.lookedForSilence >= SILENCE_CHECK_MS) {
      this.lookedForSilence = performance.now()
      await this.expireSilent(r, now)
    }
    // Counts, canaries and the last failure: a tick reads a handful of rows, however large the rollout.
    const summary = await rolloutSummaryRows(this.ctx.store, r.id)
    const step = nextStep(r, summary, now)
    if (step.kind !== 'halt' && step.kind !== 'done' && step.canariesDone && r.canaries_done_at === null && summary.canaries.length > 0) {
      await this.lease.fenced(async (t) => {
        await markCanariesDone(t, r.id, now)
        await this.step(t, r.id, 'rollout.canaries-done', r.version, r.soak_ms > 0 ? `soaking ${Math.round(r.soak_ms / 1000)} s` : null)
      })
    }
    if (step.kind === 'halt' && r.state === 'running') {
      const halted = await this.lease.fenced(async (t) => (await setRolloutState(t, r.id, ['running'], 'halted', { now, reason: step.reason })) && (await this.step(t, r.id, 'rollout.halted', r.version, step.reason, 'failed'), true))
      if (halted) {
        log.warn(`rollout ${r.id} halted: ${step.reason}`)
        await this.ctx.changes.publish('rollouts', r.id)
      }
    } else if (step.kind === 'done') {
      const done = await this.lease.fenced(async (t) => (await setRolloutState(t, r.id, ['running', 'paused', 'halted'], 'done', { now, reason: step.reason })) && (await this.step(t, r.id, 'rollout.done', r.version, step.reason), true))
      if (done) {
        log.info(`rollout ${r.id} to ${r.version} done${step.reason ? `: ${step.reason}` : ''}`)
        await this.ctx.changes.publish('rollouts', r.id)
      }
    } else if (step.kind === 'tell') {
      const rows = step.names ? summary.canaries.filter((n) => step.names!.includes(n.name)) : await pendingInOrder(this.ctx.store, r.id, step.room)
      const live = (name: string) => {
        const n = this.fabric.registry.get(name)
        return !!n && n.revokedAt === null && n.lastSeenAt !== null && now - n.lastSeenAt <= this.fabric.options.staleAfterMs
      }
      // One transaction for the wave: each node moved (compare-and-set) with its audit entry.
      const moved = await this.lease.fenced(async (t) => {
        let n = 0
        for (const row of rows) {
          if (!live(row.name)) {
            if (await moveRolloutNode(t, r.id, row.name, ['pending'], 'skipped', { now, error: 'not heartbeating when its turn came: it keeps its version' })) await this.step(t, r.id, 'rollout.node.skipped', row.name, 'not heartbeating')
          } else if (await moveRolloutNode(t, r.id, row.name, ['pending'], 'downloading', { now, told: true })) {
            n++
            await this.step(t, r.id, 'rollout.node.told', row.name, `${row.from_version ?? '?'} → ${r.version}${row.canary ? ' (canary)' : ''}`)
          }
        }
        return n + rows.length
      })
      if (moved > 0) await this.ctx.changes.publish('rollouts', r.id)
    }
    await this.pruneAudit()
  }

  /** The rollouts budget of the audit, trimmed at most every few seconds (each step is written without a prune). */
  private async pruneAudit(): Promise<void> {
    if (performance.now() - this.prunedAt < PRUNE_MS) return
    this.prunedAt = performance.now()
    await this.audit_.pruneBudget('rollouts').catch((e) => log.warn(`rollouts: audit prune: ${(e as Error).message}`))
  }

  /** Selected nodes that joined (or first told what their Agent runs) after the start get the target too. */
  private async addNewcomers(r: RolloutRow, now: number): Promise<void> {
    // Nothing new unless the fleet or what its Agents said changed since the last look.
    const agents = Number((await this.ctx.store.get<{ n: number }>('SELECT COUNT(*) AS n FROM node_agents'))?.n ?? 0)
    const mark = `${r.id} ${this.fabric.registry.nodes.size} ${agents}`
    if (mark === this.newcomersMark) return
    this.newcomersMark = mark
    const have = new Set((await rolloutNodes(this.ctx.store, r.id)).map((n) => n.name))
    const selector = parseLabelArgs(selectorOf(r), '--selector')
    const fresh = (await selectedNodes(this.ctx, this.fabric, selector)).filter((c) => !have.has(c.name) && c.agent !== null).sort((a, b) => (a.name < b.name ? -1 : 1))
    if (fresh.length === 0) return
    const byArch = new Map<string, ReleaseRow>()
    for (const rel of await releasesOfVersion(this.ctx.store, r.version)) byArch.set(rel.arch, rel)
    let pos = await nextPosition(this.ctx.store, r.id)
    for (const c of fresh) {
      const s = initialState(c, r.version, byArch)
      const row: RolloutNodeRow = { rollout_id: r.id, name: c.name, position: pos++, canary: 0, grp: groupOf(c.agent?.arch ?? null, c.labels), arch: c.agent?.arch ?? null, state: s.state, from_version: c.agent?.version ?? null, to_version: s.state === 'done' ? r.version : null, release_sha256: s.release?.sha256 ?? null, error: s.error, told_at: null, updated_at: now }
      await this.lease.fenced(async (t) => {
        await insertRolloutNode(t, row)
        await this.step(t, r.id, 'rollout.node.joined', c.name, s.state === 'pending' ? 'joined during the rollout' : `${s.state}: ${s.error ?? ''}`)
      })
    }
  }

  /** A told node that stopped reporting has failed. */
  private async expireSilent(r: RolloutRow, now: number): Promise<void> {
    for (const n of await rolloutNodesIn(this.ctx.store, r.id, IN_FLIGHT)) {
      const limit = n.state === 'restarting' ? r.health_timeout_ms + 3 * 60_000 : SILENT_MS
      if (now - (n.updated_at ?? now) <= limit) continue
      const error = n.state === 'restarting' ? `no report within ${Math.round(limit / 1000)} s of restarting` : `no report from the node for ${Math.round(limit / 60_000)} min`
      await this.lease.fenced(async (t) => (await moveRolloutNode(t, r.id, n.name, [n.state], 'failed', { now, error })) && this.step(t, r.id, 'rollout.node.failed', n.name, error, 'failed'))
    }
  }

  private step(t: Db, id: string, action: string, target: string, detail: string | null, outcome: 'ok' | 'failed' = 'ok'): Promise<void> {
    return auditStep(this.audit_, t, id, action, target, detail, outcome)
  }
}
