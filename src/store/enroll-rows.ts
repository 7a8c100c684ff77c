// An enroll's statements, as few as the engine allows (docs/storage-ha.md):
// what it reads (the join token, the nodes holding the name or the
// certificate, the name's tombstone) in one statement on both engines, and
// what it writes for a new node (the token's use, the node, its audit entry)
// in one statement on PostgreSQL, where each statement is a round trip to
// another process; SQLite runs the three in its transaction (no data-changing
// WITH there, and a statement costs microseconds in-process).
import type { Db } from './db.ts'
import { auditBudget } from './enroll-audit.ts'
import type { JoinTokenRow } from './join-tokens.ts'
import { insertAudit } from './enroll-audit.ts'
import { insertNodeRow, NODE_COLUMNS, type NodeRow } from './nodes.ts'
import { takeTokenUse } from './join-tokens.ts'

export interface EnrollReads {
  token: JoinTokenRow | null
  /** The node named as asked, and the node holding the certificate (the same row, or none). */
  named: NodeRow | null
  holder: NodeRow | null
  tombstoned: boolean
}

// Every column of join_tokens (test/store/enroll-rows.test.ts holds the list to the table's).
export const TOKEN_COLUMNS = ['id', 'secret_hash', 'kind', 'node_id', 'name_pattern', 'label', 'max_uses', 'uses', 'created_at', 'expires_at', 'revoked_at', 'provision_id'] as const

const readsText = (nodes: string) => `SELECT ${TOKEN_COLUMNS.map((c) => `t.${c} AS jt_${c}`).join(', ')},
    CASE WHEN EXISTS (SELECT 1 FROM node_tombstones WHERE name = ?2) THEN 1 ELSE 0 END AS tombstoned, ${NODE_COLUMNS}
  FROM (SELECT 1 AS one) AS o
  LEFT JOIN join_tokens t ON t.id = ?1
  LEFT JOIN ${nodes}
  LEFT JOIN node_heartbeats h ON h.name = n.name`
const READS = readsText('nodes n ON n.name = ?2 OR n.cert_sha256 = ?3')
/**
 * PostgreSQL: a prepared statement comes to keep one generic plan, costed from the tables' sizes when it was
 * made. Made on a small nodes table, the OR's plan is a scan of every node until the table is next analysed
 * (measured ~1 ms an enroll at 10,000 nodes); two lookups by a unique key each are index scans at any size.
 */
const READS_PG = readsText('(SELECT * FROM nodes WHERE name = ?2 UNION ALL SELECT * FROM nodes WHERE cert_sha256 = ?3 AND name <> ?2) AS n ON true')

/** The join token `tokenId`, the nodes holding `name` or `certSha256`, and whether `name` is tombstoned: one statement. */
export async function enrollReads(db: Db, tokenId: string, name: string, certSha256: string): Promise<EnrollReads> {
  const rows = await db.all<Record<string, unknown>>(db.engine === 'postgres' ? READS_PG : READS, tokenId, name, certSha256)
  const first = rows[0]!
  const token = first.jt_id === null ? null : (Object.fromEntries(TOKEN_COLUMNS.map((c) => [c, first[`jt_${c}`]])) as unknown as JoinTokenRow)
  const nodes = rows.filter((r) => r.name !== null).map((r) => Object.fromEntries(Object.entries(r).filter(([k]) => !k.startsWith('jt_') && k !== 'tombstoned')) as unknown as NodeRow)
  return {
    token,
    named: nodes.find((r) => r.name === name) ?? null,
    holder: nodes.find((r) => r.cert_sha256 === certSha256) ?? null,
    tombstoned: Number(first.tombstoned) === 1,
  }
}

export interface NewEnrolledNode {
  name: string
  cert_sha256: string
  cert_pem: string
  url: string | null
  token_id: string
  version: string | null
  labels: string | null
  enrolled_at: number
  /** The audit entry's reason and version, shape-checked by the caller (Fabric.audit's rules). */
  auditReason: string | null
  auditVersion: string | null
}

/**
 * The token's row is locked and checked (unrevoked, unexpired, a use left), the node inserted unless its
 * name or certificate is taken, and only then the use taken and the audit entry written: nothing is written
 * when the token has no use left, and a name or certificate taken meanwhile spends no use.
 */
const WRITES = `WITH tok AS (
    SELECT id FROM join_tokens WHERE id = $1 AND revoked_at IS NULL AND expires_at > $2 AND uses < max_uses FOR UPDATE
  ), ins AS (
    INSERT INTO nodes (name, auth, cert_sha256, cert_pem, url, token_id, version, enrolled_at, labels)
      SELECT $3, 'enrolled', $4, $5, $6, tok.id, $7, $2, $8 FROM tok
      ON CONFLICT DO NOTHING RETURNING *
  ), used AS (
    UPDATE join_tokens SET uses = uses + 1 WHERE id = $1 AND EXISTS (SELECT 1 FROM ins) RETURNING uses
  ), audit AS (
    INSERT INTO enroll_audit (at, outcome, reason, node_id, version, budget) SELECT $2, 'enrolled', $9, ins.name, $10, $11 FROM ins RETURNING id
  )
  SELECT (SELECT count(*) FROM tok) AS took, (SELECT count(*) FROM used) AS used, (SELECT count(*) FROM audit) AS audited, ins.*
    FROM (SELECT 1 AS one) AS o LEFT JOIN ins ON true`

/**
 * Takes a use of the token, inserts the node and writes its audit entry, inside the caller's transaction:
 * 'used-up' (nothing written), 'taken' (the name or certificate is another node's: nothing written), or the row.
 */
export async function writeEnrolledNode(t: Db, n: NewEnrolledNode, now: number): Promise<'used-up' | 'taken' | NodeRow> {
  if (t.engine === 'postgres') {
    const r = (await t.all<Record<string, unknown>>(WRITES, n.token_id, now, n.name, n.cert_sha256, n.cert_pem, n.url, n.version, n.labels, n.auditReason, n.auditVersion, auditBudget('enrolled')))[0]!
    if (Number(r.took) === 0) return 'used-up'
    if (r.name === null || r.name === undefined) return 'taken'
    if (Number(r.used) !== 1 || Number(r.audited) !== 1) throw new Error('enroll: the token use or the audit entry was not written with the node')
    const { took: _took, used: _used, audited: _audited, ...row } = r
    return row as unknown as NodeRow
  }
  if (!(await takeTokenUse(t, n.token_id, now))) return 'used-up'
  const row = await insertNodeRow(t, { name: n.name, auth: 'enrolled', cert_sha256: n.cert_sha256, cert_pem: n.cert_pem, url: n.url, token_id: n.token_id, version: n.version, enrolled_at: now, labels: n.labels })
  if (row === null) return 'taken'
  await insertAudit(t, { at: now, outcome: 'enrolled', reason: n.auditReason, node_id: n.name, version: n.auditVersion })
  return row
}
