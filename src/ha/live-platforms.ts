// The Platforms sharing a store (docs/storage-ha.md): each records itself every few
// seconds with the URLs nodes use (the API for heartbeats and assignments, the
// enrollment listener for joins and trust), and reads which others are live.
// Enroll and heartbeat answers carry that list as `platforms`, so Agents fail
// over between Platforms by themselves, with no load balancer in front.
import type { Context } from '../context/context.ts'
import { log } from '../log.ts'
import { forgetPlatform, livePlatforms, recordPlatform, type PlatformRow } from '../store/platforms.ts'
import { allLeases } from '../store/leases.ts'
import { VERSION } from '../version.ts'
import type { NodeFacingPlatform, PlatformView } from '../wire/nodes.ts'

/** How often a Platform records itself; it is live while seen within LIVE_MS (database clock). */
export const RECORD_MS = 2_000
export const LIVE_MS = 10_000
const SELF_RECHECK_MS = 1_000

export class PlatformRegistry {
  private live: PlatformRow[] = []
  private timer: ReturnType<typeof setInterval> | undefined
  private warned = false

  constructor(
    private readonly ctx: Context,
    /** What this Platform offers nodes now (read at each record). */
    private readonly self: () => { apiUrl: string; enrollmentUrl: string | null; fingerprint: string | null; localNode: boolean },
  ) {}

  get id(): string {
    return this.ctx.changes.origin
  }

  /** Records this Platform now and every RECORD_MS; reads the live list each time. */
  async start(): Promise<void> {
    await this.tick()
    this.timer = setInterval(() => void this.tick().catch((e) => log.warn(`recording this Platform: ${(e as Error).message}`)), RECORD_MS)
    this.timer.unref?.()
    this.ctx.changes.on('platforms', (_key, local) => {
      if (!local) void this.refresh().catch(() => {})
    })
    await this.ctx.changes.publish('platforms', this.id)
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer)
    await forgetPlatform(this.ctx.store, this.id).catch(() => {})
    await this.ctx.changes.publish('platforms', this.id)
  }

  private async tick(): Promise<void> {
    const s = this.self()
    await recordPlatform(this.ctx.store, { id: this.id, api_url: s.apiUrl, enrollment_url: s.enrollmentUrl, fingerprint: s.fingerprint, version: VERSION })
    await this.refresh()
    if (s.localNode && this.live.length > 1 && !this.warned) {
      this.warned = true
      log.warn('several Platforms share this store and this one runs the local node: `local` names each Platform\'s own in-process node, so start every Platform of a group with --no-local-node')
    }
  }

  private async refresh(): Promise<void> {
    this.live = await livePlatforms(this.ctx.store, LIVE_MS)
  }

  /** The live Platforms' node-facing URLs (this one always included). */
  nodeFacing(): NodeFacingPlatform[] {
    // Every heartbeat answer carries this list: it is rebuilt only when the live rows or this Platform's URLs change
    // (the URLs, which take a few getters to read, are looked at again at most once a second).
    const c = this.facing
    const now = Date.now()
    if (c && c.live === this.live && now - c.at < SELF_RECHECK_MS && now >= c.at) return c.list
    const s = this.self()
    if (c && c.live === this.live && c.apiUrl === s.apiUrl && c.enrollmentUrl === s.enrollmentUrl) {
      c.at = now
      return c.list
    }
    const rows = this.live.some((r) => r.id === this.id) ? this.live : [...this.live, { id: this.id, api_url: s.apiUrl, enrollment_url: s.enrollmentUrl } as PlatformRow]
    let list = rows.map((r) => ({ id: r.id, url: r.api_url, ...(r.enrollment_url ? { enrollmentUrl: r.enrollment_url } : {}) }))
    // The same list as before keeps its identity: heartbeat answers are cached per list (src/fabric/heartbeat.ts).
    if (c && JSON.stringify(c.list) === JSON.stringify(list)) list = c.list
    this.facing = { live: this.live, apiUrl: s.apiUrl, enrollmentUrl: s.enrollmentUrl, list, at: now }
    return list
  }
  private facing: { live: PlatformRow[]; apiUrl: string; enrollmentUrl: string | null | undefined; list: NodeFacingPlatform[]; at: number } | undefined

  /** For operators (`muster nodes platform`): the live Platforms and the loops each runs. */
  async view(): Promise<PlatformView[]> {
    const [rows, leases] = await Promise.all([livePlatforms(this.ctx.store, LIVE_MS), allLeases(this.ctx.store)])
    const iso = (t: number) => new Date(t).toISOString()
    return rows.map((r) => ({
      id: r.id,
      url: r.api_url,
      enrollmentUrl: r.enrollment_url,
      fingerprint: r.fingerprint,
      version: r.version,
      startedAt: iso(r.started_at),
      lastSeenAt: iso(r.last_seen_at),
      self: r.id === this.id,
      runs: leases.filter((l) => l.live === 1 && l.holder === r.id).map((l) => l.name),
    }))
  }
}
