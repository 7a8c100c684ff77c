// The cloud_scaling row: consent to create machines without a person, its
// limits, what to order, and when the last request was recorded.
import type { Db } from './db.ts'

export interface ScalingRow {
  enabled: number
  max_machines: number
  cooldown_minutes: number
  provider: string | null
  region: string | null
  size: string | null
  role: 'general' | 'build'
  last_request_at: number | null
  updated_at: number
}

export async function getScaling(db: Db): Promise<ScalingRow> {
  const row = await db.get<ScalingRow>('SELECT * FROM cloud_scaling WHERE id = 1')
  if (!row) throw new Error('cloud_scaling has no row: the store was not migrated')
  return row!
}

export async function updateScaling(db: Db, fields: Partial<ScalingRow>): Promise<void> {
  const keys = Object.keys(fields) as (keyof ScalingRow)[]
  if (keys.length === 0) return
  const sets = keys.map((k, i) => `${k} = ?${i + 1}`).join(', ')
  await db.run(`UPDATE cloud_scaling SET ${sets} WHERE id = 1`, ...keys.map((k) => fields[k] as string | number | null))
}
