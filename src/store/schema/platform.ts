// The Platform's own tables (range 500–599): its sealed secrets, the
// Platforms sharing this store, and the leases that give each background loop
// one holder.
import type { Migration } from '../migrations.ts'

export const PLATFORM_MIGRATIONS: Migration[] = [
  {
    id: 500,
    name: 'sealed secrets',
    sql: `
      CREATE TABLE secrets (
        name TEXT PRIMARY KEY,
        sealed BLOB NOT NULL,
        updated_at INTEGER NOT NULL
      );
    `,
  },
]
