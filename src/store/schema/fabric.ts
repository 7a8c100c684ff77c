import type { Migration } from './migration.ts'

export const FABRIC_MIGRATIONS: Migration[] = [
  {
    id: 100,
    name: 'join tokens, nodes, tombstones, enrollment audit',
    sql: `
      CREATE TABLE join_tokens (
        id TEXT PRIMARY KEY,
        secret_hash TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('enrollment', 'fleet')),
        node_id TEXT,
        name_pattern TEXT,
        label TEXT,
        max_uses INTEGER NOT NULL,
        uses INTEGER NOT NULL DEFAULT 0,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        revoked_at INTEGER
      );
      CREATE INDEX join_tokens_node ON join_tokens (node_id) WHERE kind = 'enrollment';
      CREATE TABLE nodes (
        name TEXT PRIMARY KEY,
        auth TEXT NOT NULL CHECK (auth IN ('enrolled', 'legacy')),
        cert_sha256 TEXT UNIQUE,
        cert_pem TEXT,
        url TEXT,
        token_id TEXT,
        generation INTEGER NOT NULL DEFAULT 1,
        previous_valid_until INTEGER NOT NULL DEFAULT 0,
        version TEXT,
        enrolled_at INTEGER NOT NULL,
        last_seen_at INTEGER,
        cpu_millis INTEGER,
        memory_mb INTEGER,
        replicas TEXT,
        drained INTEGER NOT NULL DEFAULT 0,
        revoked_at INTEGER
      );
      CREATE TABLE node_tombstones (name TEXT PRIMARY KEY, removed_at INTEGER NOT NULL);
      CREATE TABLE enroll_audit (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        at INTEGER NOT NULL,
        outcome TEXT NOT NULL,
        reason TEXT,
        node_id TEXT,
        version TEXT
      );
    `,
  },
  {
    id: 101,
    name: 'nodes by heartbeat time (Platforms sharing a store read each other\'s heartbeats)',
    sql: `CREATE INDEX nodes_last_seen ON nodes (last_seen_at);`,
  },
  {
    id: 110,
    name: 'node labels (KEY=VALUE pairs as a JSON object)',
    sql: `ALTER TABLE nodes ADD COLUMN labels TEXT;`,
  },
  {
    id: 120,
    name: 'enrollment audit in two budgets: refusals never push enrollment records out',
    sql: `
      ALTER TABLE enroll_audit ADD COLUMN budget TEXT NOT NULL DEFAULT 'refusals';
      UPDATE enroll_audit SET budget = 'enrollments' WHERE outcome IN ('enrolled', 'node-exists', 'worker-newer');
      CREATE INDEX enroll_audit_budget ON enroll_audit (budget, id);
    `,
  },
  {
    id: 150,
    name: 'heartbeats in a narrow table of their own (a flush rewrites small rows, not whole node rows with their certificates)',
    sql: `
      CREATE TABLE node_heartbeats (
        name TEXT PRIMARY KEY REFERENCES nodes (name) ON DELETE CASCADE,
        last_seen_at INTEGER NOT NULL,
        version TEXT,
        cpu_millis INTEGER,
        memory_mb INTEGER,
        replicas TEXT
      ) WITHOUT ROWID;
      INSERT INTO node_heartbeats (name, last_seen_at, version, cpu_millis, memory_mb, replicas)
        SELECT name, last_seen_at, version, cpu_millis, memory_mb, replicas FROM nodes WHERE last_seen_at IS NOT NULL;
      DROP INDEX nodes_last_seen;
    `,
  },
  {
    id: 151,
    name: 'heartbeats by time, for the Platforms sharing a PostgreSQL store to read each other\'s (SQLite has one Platform: no index to keep)',
    only: 'postgres',
    sql: `CREATE INDEX node_heartbeats_seen ON node_heartbeats (last_seen_at);`,
  },
  {
    id: 152,
    name: 'which Platform wrote each heartbeat (the others read only theirs: src/fabric/registry.ts)',
    sql: `ALTER TABLE node_heartbeats ADD COLUMN platform TEXT;`,
  },
]
