// Automatic scale-out. Consent is off until an operator gives it. With it, a
// shortfall of replicas that fit nowhere, held for two minutes, requests one
// machine: never while another is starting, never past the maximum, never
// inside the cooldown. The request id is derived from the cooldown window and
// recorded before the provider is called, so a restart cannot order twice.
import { MusterError } from '../errors.ts'
import { log } from '../log.ts'
import { existingMachines, provisionByRequestId, provisionsIn, STARTING_STATES } from '../store/cloud-provisions.ts'
import { getScaling, updateScaling, type ScalingRow } from '../store/cloud-scaling.ts'
import { audited, AUTOSCALER, type Actor } from './audit.ts'
import type { Cloud } from './service.ts'
import type { CloudScaling, ProviderName } from '../wire/cloud.ts'
import { autoscaleRequests } from '../metrics/platform.ts'

export const HOLD_MS = 2 * 60_000

export interface ScalingInput {
  enabled?: boolean
  maxMachines?: number
  cooldownMinutes?: number
  provider?: ProviderName
  region?: string
  size?: string
  role?: 'general' | 'build'
}

export type Decision =
  | { action: 'none'; why: 'disabled' | 'no-shortfall' | 'holding' | 'machine-starting' | 'at-max' | 'cooldown' | 'already-requested' | 'unavailable' | 'audit-unavailable'; detail?: string }
  | { action: 'requested'; provisionId: string; requestId: string }

/** One id per cooldown window: a second decision in the same window maps to the same request. */
export function requestIdFor(now: number, cooldownMinutes: number): { requestId: string; name: string } {
  const window = Math.floor(now / (cooldownMinutes * 60_000))
  return { requestId: `auto-${cooldownMinutes}m-${window}`, name: `auto-${cooldownMinutes}m-${window.toString(36)}` }
}

export class Autoscaler {
  private shortfallSince: number | null = null
  private ticking: Promise<Decision> | null = null

  constructor(private readonly cloud: Cloud) {}

  async view(): Promise<CloudScaling> {
    const s = await getScaling(this.cloud.db)
    return {
      enabled: s.enabled === 1,
      maxMachines: s.max_machines,
      cooldownMinutes: s.cooldown_minutes,
      provider: s.provider,
      region: s.region,
      size: s.size,
      role: s.role,
      lastRequestAt: s.last_request_at === null ? null : new Date(s.last_request_at).toISOString(),
      shortfallSince: this.shortfallSince === null ? null : new Date(this.shortfallSince).toISOString(),
    }
  }

  /** Changes consent or limits; audited (an unwritable audit refuses the change). */
  async configure(input: ScalingInput, actor: Actor): Promise<CloudScaling> {
    const s = await getScaling(this.cloud.db)
    const next: Partial<ScalingRow> = { updated_at: this.cloud.now() }
    if (input.maxMachines !== undefined) next.max_machines = input.maxMachines
    if (input.cooldownMinutes !== undefined) next.cooldown_minutes = input.cooldownMinutes
    if (input.provider !== undefined) next.provider = input.provider
    if (input.region !== undefined) next.region = input.region
    if (input.size !== undefined) next.size = input.size
    if (input.role !== undefined) next.role = input.role
    if (input.enabled !== undefined) next.enabled = input.enabled ? 1 : 0
    const after = { ...s, ...next }
    if (after.enabled === 1) {
      if (!after.provider || !after.region || !after.size) {
        throw new MusterError('invalid-request', 'Enabling scale-out needs what to order: give provider, region and size (--provider, --region, --size).', { field: after.provider ? (after.region ? 'size' : 'region') : 'provider' })
      }
      await this.cloud.provider(after.provider as ProviderName)
    }
    const changes = Object.entries(input).filter(([, v]) => v !== undefined).map(([k, v]) => `${k}=${v}`).join(' ')
    await audited(this.cloud.db, () => this.cloud.now(), actor, 'scaling', { provider: after.provider, detail: changes || 'no change' }, () => updateScaling(this.cloud.db, next))
    if (after.enabled !== s.enabled) log.info(`cloud: automatic scale-out ${after.enabled ? 'enabled' : 'disabled'} by ${actor.principal}`)
    if (!after.enabled) this.shortfallSince = null
    return this.view()
  }

  /** One decision; runs on a timer, and tests call it after moving the clock. */
  tick(): Promise<Decision> {
    this.ticking ??= this.decide().finally(() => (this.ticking = null))
    return this.ticking
  }

  private async decide(): Promise<Decision> {
    const now = this.cloud.now()
    const db = this.cloud.db
    const s = await getScaling(db)
    if (!s.enabled || !s.provider || !s.region || !s.size) {
      this.shortfallSince = null
      return { action: 'none', why: 'disabled' }
    }
    // 1. The signal: replicas that fit nowhere although nodes were eligible, held for two minutes.
    if (this.cloud.deps.projects.shortfall().total === 0) {
      this.shortfallSince = null
      return { action: 'none', why: 'no-shortfall' }
    }
    this.shortfallSince ??= now
    if (now - this.shortfallSince < HOLD_MS) return { action: 'none', why: 'holding' }
    // 2. The limits: nothing starting, under the maximum, outside the cooldown.
    if ((await provisionsIn(db, STARTING_STATES)).length > 0) return { action: 'none', why: 'machine-starting' }
    if ((await existingMachines(db)).length >= s.max_machines) return { action: 'none', why: 'at-max' }
    const cooldownMs = s.cooldown_minutes * 60_000
    if (s.last_request_at !== null && now - s.last_request_at < cooldownMs) return { action: 'none', why: 'cooldown' }
    // 3. The decision is recorded (request id from the window, and the time) before the provider is asked.
    const { requestId, name } = requestIdFor(now, s.cooldown_minutes)
    const input = { provider: s.provider as ProviderName, name, region: s.region, size: s.size, role: s.role }
    try {
      await this.cloud.provisioner.check(input)
    } catch (e) {
      log.warn(`cloud: scale-out wanted a machine but cannot order one: ${(e as Error).message}`)
      return { action: 'none', why: 'unavailable', detail: (e as Error).message }
    }
    if (await provisionByRequestId(db, requestId)) return { action: 'none', why: 'already-requested' }
    let row
    try {
      const order = () =>
        db.tx(async (t) => {
          const r = await this.cloud.provisioner.record(input, 'autoscale', AUTOSCALER.principal, requestId, t)
          if (r) await updateScaling(t, { last_request_at: now })
          return r
        })
      row = await audited(db, () => now, AUTOSCALER, 'autoscale-order', { provider: input.provider, target: name, detail: `${requestId}: ${input.region} ${input.size} role=${input.role}` }, order, (r) => (r ? `${r.id} (${requestId})` : `already ordered in this window (${requestId})`))
    } catch (e) {
      if (!(e instanceof MusterError && e.code === 'audit-unavailable')) throw e
      log.warn(`cloud: scale-out wanted a machine but ${e.message}`)
      return { action: 'none', why: 'audit-unavailable', detail: e.message }
    }
    if (!row) return { action: 'none', why: 'already-requested' }
    autoscaleRequests.inc()
    log.info(`cloud: scale-out requested ${row.id} (${name}) for a shortfall held since ${new Date(this.shortfallSince).toISOString()}`)
    // 4. Only now the provider.
    await this.cloud.provisioner.create(row)
    return { action: 'requested', provisionId: row.id, requestId }
  }
}
