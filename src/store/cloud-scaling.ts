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

export function getScaling(db: Db): ScalingRow {
  return db.query<ScalingRow, []>('SELECT * FROM cloud_scaling WHERE id = 1').get()!
}

export function updateScaling(db: Db, fields: Partial<ScalingRow>): void {
  const keys = Object.keys(fields) as (keyof ScalingRow)[]
  if (keys.length === 0) return
  const sets = keys.map((k, i) => `${k} = ?${i + 1}`).join(', ')
  db.query(`UPDATE cloud_scaling SET ${sets} WHERE id = 1`).run(...keys.map((k) => fields[k] as string | number | null))
}
