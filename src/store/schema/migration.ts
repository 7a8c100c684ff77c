// One schema change: its number (each area owns a range, src/store/migrations.ts),
// a name, its SQL, and the engine it is for when it is for one only.
export interface Migration {
  id: number
  name: string
  sql: string
  /** Run on this engine only (recorded as applied on both, so the ids stay one list). */
  only?: 'sqlite' | 'postgres'
}
