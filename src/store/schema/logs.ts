import type { Migration } from './migration.ts'

/** The log relay: requests waiting for their node, and what nodes sent back (sealed). */
export const LOGS_MIGRATIONS: Migration[] = [
  {
    id: 230,
    name: 'log relay: requests for a replica\'s log and the chunks its node sent',
    sql: `
      CREATE TABLE log_requests (
        id TEXT PRIMARY KEY,
        node TEXT NOT NULL,
        project TEXT NOT NULL,
        replica INTEGER NOT NULL,
        tail INTEGER NOT NULL,
        follow INTEGER NOT NULL,
        requested_by TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        picked_at INTEGER
      );
      CREATE INDEX log_requests_node ON log_requests (node, picked_at);
      CREATE TABLE log_chunks (
        request TEXT NOT NULL,
        seq INTEGER NOT NULL,
        sealed BLOB NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (request, seq)
      );
    `,
  },
]
