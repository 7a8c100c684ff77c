// The cloud_provisions table: every machine this Platform asked a provider
// for, recorded before the provider is called. A live name is unique.
import type { Db } from './db.ts'
import type { ProvisionState } from '../wire/cloud.ts'

export const LIVE_STATES: readonly ProvisionState[] = ['creating', 'booting', 'enrolling', 'ready']
export const STARTING_STATES: readonly ProvisionState[] = ['creating', 'booting', 'enrolling']

export interface ProvisionRow {
  id: string
  request_id: string
  provider: string
  name: string
  region: string
  size: string
  role: 'general' | 'build'
  origin: 'operator' | 'autoscale'
  requested_by: string | null
  state: ProvisionState
  reason: string | null
  machine_id: string | null
  machine_status: string | null
  address: string | null
  created_at: number
  updated_at: number
  ready_at: number | null
  released_at: number | null
  /** The first-boot data, sealed (src/cloud/first-boot.ts); made once, dropped when the provision stops starting. */
  first_boot: Uint8Array | null
  /** JSON {"agentFrom","sshFrom"}: what the machine lets in; null on rows from before openings existed (nothing). */
  inbound: string | null
  /** The provider's asynchronous create (a GCP Operation name). */
  operation: string | null
  /** When the create answered with the machine's id, and when the provider first showed it. */
  ordered_at: number | null
  seen_at: number | null
}

export type NewProvision = Pick<ProvisionRow, 'id' | 'request_id' | 'provider' | 'name' | 'region' | 'size' | 'role' | 'origin' | 'requested_by' | 'created_at' | 'inbound'>

/** Provisions by state (the metrics). */
export async function provisionCounts(db: Db): Promise<Record<string, number>> {
  const rows = await db.all<{ state: string; n: number }>('SELECT state, COUNT(*) AS n FROM cloud_provisions GROUP BY state')
  return Object.fromEntries(rows.map((r) => [r.state, Number(r.n)]))
}

/** Inserts a provision in state creating; false when its request id is already recorded. */
export async function insertProvision(db: Db, p: NewProvision): Promise<boolean> {
  return (
    (await db.run(`INSERT INTO cloud_provisions (id, request_id, provider, name, region, size, role, origin, requested_by, state, created_at, updated_at, inbound)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 'creating', ?10, ?10, ?11) ON CONFLICT(request_id) DO NOTHING`, p.id, p.request_id, p.provider, p.name, p.region, p.size, p.role, p.origin, p.requested_by, p.created_at, p.inbound)) === 1
  )
}

export async function getProvision(db: Db, id: string): Promise<ProvisionRow | null> {
  return await db.get<ProvisionRow>('SELECT * FROM cloud_provisions WHERE id = ?1', id)
}

export async function provisionByRequestId(db: Db, requestId: string): Promise<ProvisionRow | null> {
  return await db.get<ProvisionRow>('SELECT * FROM cloud_provisions WHERE request_id = ?1', requestId)
}

export async function liveProvisionByName(db: Db, name: string): Promise<ProvisionRow | null> {
  return await db.get<ProvisionRow>(`SELECT * FROM cloud_provisions WHERE name = ?1 AND state IN ('creating', 'booting', 'enrolling', 'ready')`, name)
}

export async function listProvisions(db: Db): Promise<ProvisionRow[]> {
  return await db.all<ProvisionRow>('SELECT * FROM cloud_provisions ORDER BY created_at DESC, id')
}

export function provisionsIn(db: Db, states: readonly ProvisionState[]): Promise<ProvisionRow[]> {
  return db.all<ProvisionRow>(`SELECT * FROM cloud_provisions WHERE state IN (${states.map((_, i) => `?${i + 1}`).join(', ')}) ORDER BY created_at`, ...states)
}

/** Machines that exist (or may, while being created) at a provider: not released, and not failed before a machine was made. */
export async function existingMachines(db: Db, provider?: string): Promise<ProvisionRow[]> {
  const rows = await db.all<ProvisionRow>(`SELECT * FROM cloud_provisions WHERE state != 'released' AND (state != 'failed' OR machine_id IS NOT NULL) ORDER BY created_at`)
  return provider ? rows.filter((r) => r.provider === provider) : rows
}

/** Moves a provision on; `from` makes it a compare-and-set so two writers cannot both win. */
export async function updateProvision(db: Db, id: string, fields: Partial<Omit<ProvisionRow, 'id' | 'request_id'>>, from?: readonly ProvisionState[]): Promise<boolean> {
  const keys = Object.keys(fields) as (keyof typeof fields)[]
  if (keys.length === 0) return false
  const sets = keys.map((k, i) => `${k} = ?${i + 2}`).join(', ')
  const values = keys.map((k) => fields[k] as string | number | Uint8Array | null)
  const guard = from ? ` AND state IN (${from.map((_, i) => `?${keys.length + 2 + i}`).join(', ')})` : ''
  return (await db.run(`UPDATE cloud_provisions SET ${sets} WHERE id = ?1${guard}`, id, ...values, ...(from ?? []))) === 1
}
