// Rollouts (docs/upgrading.md): an operator names a version; the Platform
// holding the `rollouts` lease tells nodes in the order decided at the start
// (src/rollouts/plan.ts), at most max-unavailable at a time, canaries first,
// and halts on a failed canary or failures past the budget. A node learns it
// is told from its heartbeat answer (`update`), fetches a directive signed
// with the trust keys for it alone and valid ten minutes, and reports each
// step. Every step is audited (budget `rollouts`). One rollout at a time.
import type { Audit } from '../audit/audit.ts'
import type { Context } from '../context/context.ts'
import { randomId } from '../crypto/tokens.ts'
import { MusterError } from '../errors.ts'
import type { Fabric } from '../fabric/fabric.ts'
import { parseLabelArgs } from '../wire/labels.ts'
import { LIVE_MS } from '../ha/live-platforms.ts'
import { log } from '../log.ts'
import type { Releases } from '../releases/service.ts'
import { signedOf } from '../releases/service.ts'
import { DIRECTIVE } from '../signed/documents.ts'
import { signDocument } from '../signed/signed.ts'
import { livePlatforms } from '../store/platforms.ts'
import { nodeAgent, nodeAgents, releasesOfVersion, upsertNodeAgent, type ReleaseRow } from '../store/releases.ts'
import { activeRollout, FINISHED, IN_FLIGHT, insertRollout, latestRollout, moveRolloutNode, recentRollouts, rolloutById, rolloutNode, rolloutGroupCounts, rolloutNodes, rolloutNodesToWatch, rolloutNodesIn, setRolloutState, type RolloutNodeRow, type RolloutNodeState, type RolloutRow } from '../store/rollouts.ts'
import { tunableNumber } from '../tunables.ts'
import { compareVersions } from '../version.ts'
import type { AgentFacts } from '../wire/releases.ts'
import type { RolloutList, RolloutView, SignedDirective, StartRollout, UpdateReport } from '../wire/rollouts.ts'
import { auditStep, DIRECTIVE_TTL_MS, RolloutDriver, selectedNodes } from './driver.ts'
import { planRollout } from './plan.ts'
import { rolloutSummary, rolloutView } from './view.ts'

/** At most this many nodes in a view that lists only those worth a look. */
const WATCH_LIMIT = 1_000
/** Reads of who is told are at least this far apart (every report asks for one). */
const REFRESH_GAP_MS = 100
/** How often the driver looks (MUSTER_ROLLOUT_TICK_MS for tests); a node's report wakes it at once too. */
const tickMs = () => tunableNumber('MUSTER_ROLLOUT_TICK_MS')

export class Rollouts {
  /**
   * Nodes told and not finished: their heartbeat answers say `update`. A node busy with its update
   * ignores it; one whose Agent restarted half way (and undid the step) fetches the directive again.
   */
  private wanting = new Set<string>()
  private timer: ReturnType<typeof setInterval> | undefined
  private refreshing: Promise<void> | undefined
  private refreshAgain = false
  private refreshedAt = -Infinity
  private readonly lease
  private readonly driver: RolloutDriver

  constructor(
    private readonly ctx: Context,
    private readonly deps: { fabric: Fabric; releases: Releases; audit: Audit },
  ) {
    this.lease = ctx.leases.lease('rollouts')
    this.driver = new RolloutDriver(ctx, deps.fabric, deps.audit, this.lease)
  }

  /** One step of the driver, when this Platform holds the lease (tests call it too). */
  tick(): Promise<void> {
    return this.driver.tick()
  }

  /** Serves the heartbeat hint and runs the driver while this Platform holds the lease. */
  async startLoops(): Promise<void> {
    this.deps.fabric.updateWanted = (name) => this.wanting.has(name)
    this.ctx.changes.on('rollouts', () => {
      void this.refreshWanting()
      if (this.lease.held) void this.tick()
    })
    await this.refreshWanting()
    this.timer = setInterval(() => {
      void this.refreshWanting()
      void this.tick()
    }, tickMs())
    this.timer.unref?.()
    this.ctx.onClose(async () => {
      clearInterval(this.timer)
      await this.driver.busy
    })
  }

  /** Reads who is told again; asked while it reads, it reads once more after. */
  private refreshWanting(): Promise<void> {
    if (this.refreshing) {
      this.refreshAgain = true
      return this.refreshing
    }
    this.refreshing = (async () => {
      do {
        this.refreshAgain = false
        const wait = this.refreshedAt + REFRESH_GAP_MS - performance.now()
        if (wait > 0) await new Promise((r) => setTimeout(r, wait))
        this.refreshedAt = performance.now()
        try {
          const r = await activeRollout(this.ctx.store)
          this.wanting = new Set(r ? (await rolloutNodesIn(this.ctx.store, r.id, IN_FLIGHT)).map((n) => n.name) : [])
        } catch (e) {
          log.debug(`rollouts: ${(e as Error).message}`)
        }
      } while (this.refreshAgain)
    })().finally(() => (this.refreshing = undefined))
    return this.refreshing
  }

  // ---- operators --------------------------------------------------------------------

  /** Platforms first: the oldest live Platform must run the target or newer. */
  private async requirePlatformsCurrent(version: string): Promise<void> {
    const behind = (await livePlatforms(this.ctx.store, LIVE_MS)).filter((p) => {
      try {
        return compareVersions(p.version, version) < 0
      } catch {
        return true
      }
    })
    if (behind.length === 0) return
    const list = behind.map((p) => `${p.api_url} (${p.version})`).join(', ')
    throw new MusterError(
      'conflict',
      `Upgrade the Platform${behind.length > 1 ? 's' : ''} first: ${list} ${behind.length > 1 ? 'run' : 'runs'} a version older than ${version}, and nodes must never be newer than their Platform. On ${behind.length > 1 ? 'each' : 'that'} machine: \`sudo ./install.sh --role platform --binary muster-${version}\` (it swaps the running Platform in place with systemctl reload; no request fails)${behind.length > 1 ? ', one Platform at a time' : ''}. Then start the rollout again.`,
      { platforms: behind.map((p) => ({ url: p.api_url, version: p.version })) },
    )
  }

  async start(b: StartRollout, by: string): Promise<RolloutView> {
    const releases = await releasesOfVersion(this.ctx.store, b.version)
    if (releases.length === 0) throw new MusterError('not-found', `No release of ${b.version}: add one first (muster releases add BINARY --key FILE).`)
    await this.requirePlatformsCurrent(b.version)
    const active = await activeRollout(this.ctx.store)
    if (active) throw new MusterError('conflict', `Rollout ${active.id} (${active.version}) is ${active.state}: one rollout at a time. Cancel it first (muster rollouts cancel ${active.id})${active.state === 'halted' ? ' or resume it' : ''}.`)
    let selector: Record<string, string>
    try {
      selector = parseLabelArgs(b.selector ?? [], '--selector')
    } catch (e) {
      throw new MusterError('invalid-request', (e as Error).message)
    }
    const byArch = new Map<string, ReleaseRow>()
    for (const r of releases) byArch.set(r.arch, r) // ordered by sequence: the newest of each arch wins
    const cands = await selectedNodes(this.ctx, this.deps.fabric, selector)
    if (cands.length === 0) throw new MusterError('not-found', `No node matches ${b.selector?.length ? b.selector.join(', ') : 'the rollout'}.`)
    const now = this.ctx.now()
    const id = randomId(12)
    const rows = planRollout(id, b.version, cands, byArch, b.canaries ?? null, now)
    const row: RolloutRow = {
      id, version: b.version, selector: b.selector?.length ? JSON.stringify(b.selector) : null, canaries: b.canaries ?? null, max_unavailable: b.maxUnavailable ?? '1', max_failures: b.maxFailures ?? 0,
      soak_ms: (b.soakSeconds ?? 0) * 1000, health_timeout_ms: (b.healthTimeoutSeconds ?? 60) * 1000, state: 'running', reason: null, active: 1, failures_forgiven: 0, canaries_done_at: null, created_at: now, created_by: by, updated_at: now,
    }
    if (!(await insertRollout(this.ctx.store, row, rows))) {
      const other = await activeRollout(this.ctx.store)
      throw new MusterError('conflict', `Rollout ${other?.id ?? '?'} started meanwhile: one rollout at a time.`)
    }
    await auditStep(this.deps.audit, this.ctx.store, id, 'rollout.plan', b.version, `${rows.length} node(s), ${rows.filter((r) => r.canary).length} canary(ies): ${rows.filter((r) => r.canary).map((r) => r.name).join(', ') || 'none'}`)
    // Deltas for what the nodes run now, made before they ask.
    void this.prepareDeltas(rows, byArch)
    await this.ctx.changes.publish('rollouts', id)
    log.info(`rollout ${id} to ${b.version} started by ${by}: ${rows.length} node(s)`)
    return this.view(id)
  }

  private async prepareDeltas(rows: RolloutNodeRow[], byArch: Map<string, ReleaseRow>): Promise<void> {
    const agents = new Map((await nodeAgents(this.ctx.store)).map((a) => [a.name, a]))
    const pairs = new Set<string>()
    for (const r of rows) {
      const a = agents.get(r.name)
      const rel = r.arch ? byArch.get(r.arch) : undefined
      if (r.state === 'pending' && a && rel && (await this.deps.releases.release(a.binary_sha256))) pairs.add(`${a.binary_sha256}:${rel.sha256}`)
    }
    for (const p of pairs) {
      const [from, to] = p.split(':') as [string, string]
      await this.deps.releases.deltas.get(from, to).catch(() => {})
    }
  }

  /** One rollout (the newest without an id); `nodes: 'watch'` lists only canaries and the nodes updating or failed (a dashboard at 10,000 nodes). */
  async view(id?: string, opts: { nodes?: 'all' | 'watch' } = {}): Promise<RolloutView> {
    const r = id && id !== 'latest' ? await rolloutById(this.ctx.store, id) : await latestRollout(this.ctx.store)
    if (!r) throw new MusterError('not-found', id && id !== 'latest' ? `No rollout ${id}.` : 'No rollout yet: muster rollouts start VERSION.')
    const rows = opts.nodes === 'watch' ? await rolloutNodesToWatch(this.ctx.store, r.id, WATCH_LIMIT) : await rolloutNodes(this.ctx.store, r.id)
    return rolloutView(r, await rolloutGroupCounts(this.ctx.store, r.id), rows)
  }

  async list(): Promise<RolloutList> {
    const rows = await recentRollouts(this.ctx.store, 50)
    return { rollouts: await Promise.all(rows.map(async (r) => rolloutSummary(r, await rolloutGroupCounts(this.ctx.store, r.id)))) }
  }

  /** pause | resume | cancel; refused when the rollout cannot move that way. */
  async steer(id: string, action: 'pause' | 'resume' | 'cancel'): Promise<RolloutView> {
    const r = await rolloutById(this.ctx.store, id)
    if (!r) throw new MusterError('not-found', `No rollout ${id}.`)
    const now = this.ctx.now()
    let ok: boolean
    if (action === 'pause') ok = await setRolloutState(this.ctx.store, id, ['running'], 'paused', { now, reason: 'paused by an operator' })
    else if (action === 'resume') {
      // Resuming a halted rollout accepts the failures that halted it; the next one halts it again.
      const failures = (await rolloutNodes(this.ctx.store, id)).filter((n) => n.state === 'failed' || n.state === 'rolled-back').length
      ok = await setRolloutState(this.ctx.store, id, ['paused', 'halted'], 'running', { now, reason: null, forgiven: r.state === 'halted' ? failures : r.failures_forgiven })
    } else {
      ok = await this.ctx.store.tx(async (t) => {
        if (!(await setRolloutState(t, id, ['running', 'paused', 'halted'], 'cancelled', { now, reason: 'cancelled by an operator' }))) return false
        await t.run(`UPDATE rollout_nodes SET state = 'skipped', error = 'the rollout was cancelled', updated_at = ?2 WHERE rollout_id = ?1 AND state = 'pending'`, id, now)
        return true
      })
    }
    if (!ok) throw new MusterError('conflict', `Rollout ${id} is ${r.state}: it cannot be ${action === 'pause' ? 'paused' : action === 'resume' ? 'resumed' : 'cancelled'}.`)
    await this.ctx.changes.publish('rollouts', id)
    return this.view(id)
  }

  // ---- the driver (the `rollouts` lease holder) -------------------------------------------

  // ---- nodes ----------------------------------------------------------------------

  /** The directive for a node told to update; null when no rollout waits for it. */
  async directive(node: string, arch: string | undefined): Promise<SignedDirective | null> {
    const r = await activeRollout(this.ctx.store)
    if (!r) return null
    const n = await rolloutNode(this.ctx.store, r.id, node)
    if (!n || !IN_FLIGHT.includes(n.state) || !n.release_sha256) return null
    const rel = (await releasesOfVersion(this.ctx.store, r.version)).find((x) => x.sha256 === n.release_sha256)
    if (!rel || (arch && rel.arch !== arch)) return null
    let mirrors: string[] = []
    try {
      mirrors = JSON.parse(rel.mirrors) as string[]
    } catch {}
    const now = this.ctx.now()
    return signDocument(DIRECTIVE, (d, m) => this.deps.fabric.trust.sign(d, m), { node, rollout: r.id, release: signedOf(rel), mirrors, healthTimeoutMs: r.health_timeout_ms, issuedAt: now, expiresAt: now + DIRECTIVE_TTL_MS })
  }

  /** A step or the end of a node's update. Reports for another release than the node's row names are ignored. */
  async report(node: string, rep: UpdateReport): Promise<void> {
    const n = await rolloutNode(this.ctx.store, rep.rollout, node)
    if (!n || n.release_sha256 !== rep.sha256) return
    const from: Record<UpdateReport['state'], RolloutNodeState[]> = {
      downloading: ['downloading'],
      installing: ['downloading'],
      restarting: ['downloading', 'installing'],
      done: ['downloading', 'installing', 'restarting', 'failed'],
      failed: ['downloading', 'installing', 'restarting'],
      'rolled-back': ['downloading', 'installing', 'restarting', 'failed'],
      skipped: ['downloading', 'installing'],
    }
    const now = this.ctx.now()
    if (rep.state === n.state) return
    const error = rep.state === 'done' ? null : (rep.error ?? null)
    const moved = await this.ctx.store.tx(async (t) => {
      if (!(await moveRolloutNode(t, rep.rollout, node, from[rep.state], rep.state, { now, error, toVersion: rep.state === 'done' ? (rep.version ?? null) : null }))) return false
      if (FINISHED.includes(rep.state)) await auditStep(this.deps.audit, t, rep.rollout, `rollout.node.${rep.state}`, node, error, rep.state === 'done' || rep.state === 'skipped' ? 'ok' : 'failed')
      return true
    }, { group: true })
    if (moved) await this.ctx.changes.publish('rollouts', rep.rollout)
  }

  async agentFacts(node: string, f: AgentFacts): Promise<void> {
    await upsertNodeAgent(this.ctx.store, { name: node, arch: f.arch, version: f.version, binary_sha256: f.binarySha256, sequence: f.sequence, skipped: JSON.stringify(f.skipped), reported_at: this.ctx.now() })
  }

  nodeAgent(node: string) {
    return nodeAgent(this.ctx.store, node)
  }
}
