// The node registry's load at start (issue 16): every node but without its
// certificate PEM (the registry keeps only its SHA-256; the prober reads the
// PEM row by row), a page of rows at a time, so 100,000 nodes never sit in
// memory as one result of full rows.
import type { Db } from './db.ts'
import type { NodeRow } from './nodes.ts'

const PAGE = 10_000

export async function* registryRows(db: Db): AsyncGenerator<NodeRow[]> {
  let after = ''
  for (;;) {
    const rows = await db.all<NodeRow>(
      `SELECT name, auth, cert_sha256, NULL AS cert_pem, url, token_id, generation, previous_valid_until, version, enrolled_at,
              last_seen_at, cpu_millis, memory_mb, replicas, drained, revoked_at, labels
         FROM nodes WHERE name > ?1 ORDER BY name LIMIT ${PAGE}`,
      after,
    )
    if (rows.length === 0) return
    yield rows
    after = rows[rows.length - 1]!.name
  }
}
