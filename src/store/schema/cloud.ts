import type { Migration } from './migration.ts'

export const CLOUD_MIGRATIONS: Migration[] = [
  {
    id: 400,
    name: 'cloud connections (sealed), provisions, scaling consent',
    sql: `
      CREATE TABLE cloud_connections (
        provider TEXT PRIMARY KEY,
        sealed BLOB NOT NULL,
        account TEXT,
        connected_at INTEGER NOT NULL,
        connected_by TEXT
      );
      CREATE TABLE cloud_provisions (
        id TEXT PRIMARY KEY,
        request_id TEXT NOT NULL UNIQUE,
        provider TEXT NOT NULL,
        name TEXT NOT NULL,
        region TEXT NOT NULL,
        size TEXT NOT NULL,
        role TEXT NOT NULL CHECK (role IN ('general', 'build')),
        origin TEXT NOT NULL CHECK (origin IN ('operator', 'autoscale')),
        requested_by TEXT,
        state TEXT NOT NULL CHECK (state IN ('creating', 'booting', 'enrolling', 'ready', 'failed', 'released')),
        reason TEXT,
        machine_id TEXT,
        machine_status TEXT,
        address TEXT,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        ready_at INTEGER,
        released_at INTEGER
      );
      CREATE UNIQUE INDEX cloud_provisions_live_name ON cloud_provisions (name) WHERE state IN ('creating', 'booting', 'enrolling', 'ready');
      CREATE TABLE cloud_scaling (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        enabled INTEGER NOT NULL DEFAULT 0,
        max_machines INTEGER NOT NULL DEFAULT 1,
        cooldown_minutes INTEGER NOT NULL DEFAULT 15,
        provider TEXT,
        region TEXT,
        size TEXT,
        role TEXT NOT NULL DEFAULT 'general',
        last_request_at INTEGER,
        updated_at INTEGER NOT NULL DEFAULT 0
      );
      INSERT INTO cloud_scaling (id) VALUES (1);
    `,
  },
  {
    id: 401,
    name: 'cloud provisions: sealed first-boot data made once, inbound openings, the create operation, when the machine was ordered and first seen',
    sql: `
      ALTER TABLE cloud_provisions ADD COLUMN first_boot BLOB;
      ALTER TABLE cloud_provisions ADD COLUMN inbound TEXT;
      ALTER TABLE cloud_provisions ADD COLUMN operation TEXT;
      ALTER TABLE cloud_provisions ADD COLUMN ordered_at INTEGER;
      ALTER TABLE cloud_provisions ADD COLUMN seen_at INTEGER;
    `,
  },
  {
    id: 402,
    name: 'cloud audit: every cloud action with its acting principal',
    sql: `
      CREATE TABLE cloud_audit (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        at INTEGER NOT NULL,
        action TEXT NOT NULL,
        principal TEXT NOT NULL,
        via TEXT NOT NULL,
        provider TEXT,
        target TEXT,
        outcome TEXT NOT NULL CHECK (outcome IN ('started', 'ok', 'failed')),
        detail TEXT
      );
    `,
  },
  {
    id: 420,
    name: 'cloud identity joins: the machines the Platform expects (what each cloud will attest), the challenges Azure nonces carry, the server a first-boot token is bound to',
    sql: `
      CREATE TABLE cloud_expected_machines (
        id TEXT PRIMARY KEY,
        provision_id TEXT NOT NULL,
        node_name TEXT NOT NULL,
        provider TEXT NOT NULL,
        account TEXT,
        region TEXT NOT NULL,
        machine_name TEXT NOT NULL,
        attested_id TEXT,
        request_id TEXT NOT NULL,
        window_start INTEGER NOT NULL,
        window_end INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        consumed_at INTEGER,
        consumed_by TEXT,
        revoked_at INTEGER
      );
      CREATE INDEX cloud_expected_machines_name ON cloud_expected_machines (node_name);
      CREATE TABLE cloud_identity_challenges (
        nonce TEXT PRIMARY KEY,
        node_name TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        used_at INTEGER
      );
      ALTER TABLE join_tokens ADD COLUMN provision_id TEXT;
    `,
  },
]
