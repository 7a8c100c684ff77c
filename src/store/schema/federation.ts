// Federation tables. Controller side: offices, their one current join token,
// the break-glass reports offices sent, what was placed where. Office side:
// where its controller is, break-glass and detach acts, spent vouch and call
// nonces, identity writes, and the projects its controller placed here.
import type { Migration } from './migration.ts'

export const FEDERATION_MIGRATIONS: Migration[] = [
  {
    id: 300,
    name: 'federation: controller offices, tokens, reports, placements',
    sql: `
      CREATE TABLE federation_offices (
        office_id TEXT PRIMARY KEY,
        label TEXT,
        note TEXT,
        created_at INTEGER NOT NULL,
        advertise_url TEXT,
        version TEXT,
        heartbeat_seconds REAL,
        last_seen_at INTEGER,
        projects_json TEXT
      );
      CREATE TABLE federation_tokens (
        office_id TEXT PRIMARY KEY REFERENCES federation_offices(office_id),
        secret_hash TEXT NOT NULL,
        generation INTEGER NOT NULL DEFAULT 1,
        created_at INTEGER NOT NULL,
        revoked_at INTEGER
      );
      CREATE TABLE federation_break_glass_reports (
        office_id TEXT NOT NULL,
        report_id TEXT NOT NULL,
        account TEXT,
        at INTEGER NOT NULL,
        token_fingerprint TEXT NOT NULL,
        reported_at INTEGER NOT NULL,
        PRIMARY KEY (office_id, report_id)
      );
      CREATE TABLE federation_placements (
        office_id TEXT NOT NULL,
        name TEXT NOT NULL,
        spec_json TEXT NOT NULL,
        placed_at INTEGER NOT NULL,
        PRIMARY KEY (office_id, name)
      );
    `,
  },
  {
    id: 301,
    name: 'federation: office membership, acts, nonces, identity writes, placed projects',
    sql: `
      CREATE TABLE office_membership (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        controller_url TEXT,
        advertise_url TEXT,
        updated_at INTEGER NOT NULL
      );
      CREATE TABLE office_break_glass (
        id TEXT PRIMARY KEY,
        office_id TEXT NOT NULL,
        account TEXT,
        at INTEGER NOT NULL,
        token_fingerprint TEXT NOT NULL,
        reported_at INTEGER
      );
      CREATE TABLE office_detaches (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        office_id TEXT NOT NULL,
        token_fingerprint TEXT NOT NULL,
        at INTEGER NOT NULL
      );
      CREATE TABLE office_spent_nonces (
        nonce TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        expires_at INTEGER NOT NULL
      );
      CREATE INDEX office_spent_nonces_expiry ON office_spent_nonces(expires_at);
      CREATE TABLE office_identity_writes (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        at INTEGER NOT NULL,
        owner TEXT NOT NULL,
        action TEXT NOT NULL CHECK (action IN ('created', 'linked')),
        role TEXT NOT NULL,
        reason TEXT NOT NULL
      );
      CREATE TABLE office_placed_projects (
        name TEXT PRIMARY KEY,
        spec_json TEXT NOT NULL,
        placed_at INTEGER NOT NULL
      );
    `,
  },
  {
    id: 310,
    name: 'federation: the office token fingerprint kept beside its keyed digest',
    sql: `
      ALTER TABLE federation_tokens ADD COLUMN fingerprint TEXT;
    `,
  },
  {
    // A vouched session is bound to the membership it was vouched under: when the controller answers that the
    // membership is over (revoked, or its token rotated away), the office records it here and those sessions end.
    id: 320,
    name: 'federation: memberships the controller ended',
    sql: `
      CREATE TABLE office_membership_ends (
        token_fingerprint TEXT PRIMARY KEY,
        reason TEXT NOT NULL,
        at INTEGER NOT NULL
      );
    `,
  },
]
