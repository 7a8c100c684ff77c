// The Platform's own tables (range 500–599): its sealed secrets, the
// Platforms sharing this store, and the leases that give each background loop
// one holder.
import type { Migration } from './migration.ts'

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
  {
    // One row per background loop. expires_at is in the database's own clock
    // (milliseconds), so Platforms whose clocks disagree still agree on who holds it;
    // fence grows by one at every change of holder (src/store/leases.ts).
    id: 501,
    name: 'leases: one holder for each background loop, fenced',
    sql: `
      CREATE TABLE leases (
        name TEXT PRIMARY KEY,
        holder TEXT NOT NULL,
        fence INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        acquired_at INTEGER NOT NULL
      );
    `,
  },
  {
    // last_seen_at is in the database's clock, like lease expiry.
    id: 502,
    name: 'platforms sharing the store, with their node-facing URLs',
    sql: `
      CREATE TABLE platforms (
        id TEXT PRIMARY KEY,
        api_url TEXT NOT NULL,
        enrollment_url TEXT,
        fingerprint TEXT,
        version TEXT NOT NULL,
        started_at INTEGER NOT NULL,
        last_seen_at INTEGER NOT NULL
      );
    `,
  },
  {
    id: 503,
    name: 'readiness probe results, written by the probing Platform and read by all',
    sql: `
      CREATE TABLE node_probes (
        name TEXT PRIMARY KEY,
        cert_sha256 TEXT NOT NULL,
        ok INTEGER NOT NULL,
        at INTEGER NOT NULL,
        reason TEXT
      );
      CREATE INDEX node_probes_at ON node_probes (at);
    `,
  },
  {
    // The placing Platform writes each node's replicas with its revision, so
    // every Platform serves the same signed assignments from the store.
    id: 504,
    name: 'node assignments carry their replicas',
    sql: `ALTER TABLE node_assignments ADD COLUMN replicas TEXT;`,
  },
]
