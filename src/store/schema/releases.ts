// Releases and rollouts (range 600–649; docs/upgrading.md): the release
// public keys (never a private one), each release's signed manifest, the
// compressed binaries and deltas in parts, what each node's Agent said it runs,
// and the rollouts with one row per node in their order.
import type { Migration } from './migration.ts'

export const RELEASES_MIGRATIONS: Migration[] = [
  {
    id: 600,
    name: 'release keys (public), releases, their binaries in parts, node agents, rollouts',
    sql: `
      CREATE TABLE release_keys (
        kid TEXT PRIMARY KEY,
        public_key TEXT NOT NULL,
        endorsed_by TEXT,
        signature TEXT,
        added_at INTEGER NOT NULL,
        added_by TEXT NOT NULL
      );
      CREATE TABLE releases (
        sha256 TEXT PRIMARY KEY,
        version TEXT NOT NULL,
        arch TEXT NOT NULL,
        size INTEGER NOT NULL,
        sequence INTEGER NOT NULL UNIQUE,
        kid TEXT NOT NULL,
        signature TEXT NOT NULL,
        mirrors TEXT NOT NULL,
        compressed_size INTEGER NOT NULL,
        added_at INTEGER NOT NULL,
        added_by TEXT NOT NULL
      );
      CREATE INDEX releases_version ON releases (version, arch, sequence);
      CREATE TABLE release_blobs (
        id TEXT NOT NULL,
        part INTEGER NOT NULL,
        data BLOB NOT NULL,
        PRIMARY KEY (id, part)
      );
      CREATE TABLE release_blob_info (
        id TEXT PRIMARY KEY,
        size INTEGER NOT NULL,
        parts INTEGER NOT NULL,
        complete INTEGER NOT NULL,
        created_at INTEGER NOT NULL
      );
      CREATE TABLE node_agents (
        name TEXT PRIMARY KEY,
        arch TEXT NOT NULL,
        version TEXT NOT NULL,
        binary_sha256 TEXT NOT NULL,
        sequence INTEGER NOT NULL,
        skipped TEXT NOT NULL,
        reported_at INTEGER NOT NULL
      );
      CREATE TABLE rollouts (
        id TEXT PRIMARY KEY,
        version TEXT NOT NULL,
        selector TEXT,
        canaries INTEGER,
        max_unavailable TEXT NOT NULL,
        max_failures INTEGER NOT NULL,
        soak_ms INTEGER NOT NULL,
        health_timeout_ms INTEGER NOT NULL,
        state TEXT NOT NULL,
        reason TEXT,
        active INTEGER UNIQUE,
        failures_forgiven INTEGER NOT NULL,
        canaries_done_at INTEGER,
        created_at INTEGER NOT NULL,
        created_by TEXT NOT NULL,
        updated_at INTEGER NOT NULL
      );
      CREATE INDEX rollouts_created ON rollouts (created_at);
      CREATE TABLE rollout_nodes (
        rollout_id TEXT NOT NULL,
        name TEXT NOT NULL,
        position INTEGER NOT NULL,
        canary INTEGER NOT NULL,
        grp TEXT NOT NULL,
        arch TEXT,
        state TEXT NOT NULL,
        from_version TEXT,
        to_version TEXT,
        release_sha256 TEXT,
        error TEXT,
        told_at INTEGER,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (rollout_id, name)
      );
      CREATE INDEX rollout_nodes_order ON rollout_nodes (rollout_id, position);
      CREATE INDEX rollout_nodes_state ON rollout_nodes (rollout_id, state, position);
    `,
  },
]
