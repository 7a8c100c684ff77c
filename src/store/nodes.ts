// The nodes, node_heartbeats and node_tombstones tables. Heartbeat fields are
// written in batches by the registry, never one synchronous write per
// heartbeat, into node_heartbeats (one narrow row a node, src/store/heartbeats.ts);
// a node is read with its heartbeat row joined, so NodeRow keeps its shape.
import type { Db } from './db.ts'

/**
 * A node row with its heartbeat: the heartbeat table's fields win; a node without one reads the
 * node row's own (never written by heartbeats since migration 150; set by seeding and older stores).
 */
export const NODE_COLUMNS = `n.name, n.auth, n.cert_sha256, n.cert_pem, n.url, n.token_id, n.generation, n.previous_valid_until,
  CASE WHEN h.name IS NULL THEN n.version ELSE h.version END AS version, n.enrolled_at,
  CASE WHEN h.name IS NULL THEN n.last_seen_at ELSE h.last_seen_at END AS last_seen_at,
  CASE WHEN h.name IS NULL THEN n.cpu_millis ELSE h.cpu_millis END AS cpu_millis,
  CASE WHEN h.name IS NULL THEN n.memory_mb ELSE h.memory_mb END AS memory_mb,
  CASE WHEN h.name IS NULL THEN n.replicas ELSE h.replicas END AS replicas,
  n.drained, n.revoked_at, n.labels`
export const NODES_WITH_HEARTBEATS = 'nodes n LEFT JOIN node_heartbeats h ON h.name = n.name'

export interface NodeRow {
  name: string
  auth: 'enrolled' | 'legacy'
  cert_sha256: string | null
  cert_pem: string | null
  url: string | null
  token_id: string | null
  generation: number
  previous_valid_until: number
  version: string | null
  enrolled_at: number
  last_seen_at: number | null
  cpu_millis: number | null
  memory_mb: number | null
  replicas: string | null
  drained: number
  revoked_at: number | null
  /** Labels the node reported at enroll, a JSON object (null: none). */
  labels: string | null
}

export async function allNodes(db: Db): Promise<NodeRow[]> {
  return await db.all<NodeRow>(`SELECT ${NODE_COLUMNS} FROM ${NODES_WITH_HEARTBEATS} ORDER BY n.name`)
}

export async function getNode(db: Db, name: string): Promise<NodeRow | null> {
  return await db.get<NodeRow>(`SELECT ${NODE_COLUMNS} FROM ${NODES_WITH_HEARTBEATS} WHERE n.name = ?1`, name)
}

/** The node named `name` and the node holding the certificate (the same row, or none), in one statement. */
export async function nodesByNameOrCert(db: Db, name: string, certSha256: string): Promise<{ named: NodeRow | null; holder: NodeRow | null }> {
  const rows = await db.all<NodeRow>(`SELECT ${NODE_COLUMNS} FROM ${NODES_WITH_HEARTBEATS} WHERE n.name = ?1 OR n.cert_sha256 = ?2`, name, certSha256)
  return { named: rows.find((r) => r.name === name) ?? null, holder: rows.find((r) => r.cert_sha256 === certSha256) ?? null }
}

type NewNode = Pick<NodeRow, 'name' | 'auth' | 'cert_sha256' | 'cert_pem' | 'url' | 'token_id' | 'version' | 'enrolled_at'> & { labels?: string | null }

/** Inserts a node; the row as stored, or null when its name or certificate is taken (a racing insert won). */
export async function insertNodeRow(db: Db, n: NewNode): Promise<NodeRow | null> {
  return await db.get<NodeRow>(
    `INSERT INTO nodes (name, auth, cert_sha256, cert_pem, url, token_id, version, enrolled_at, labels)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT DO NOTHING RETURNING *`,
    n.name, n.auth, n.cert_sha256, n.cert_pem, n.url, n.token_id, n.version, n.enrolled_at, n.labels ?? null,
  )
}

/** Inserts a node; false when its name or certificate is taken (a racing insert won). */
export async function insertNode(db: Db, n: NewNode): Promise<boolean> {
  return (await insertNodeRow(db, n)) !== null
}

/** Binds a new certificate to a name being rebound (its cert was cleared by rebind). */
export async function bindCertificate(db: Db, name: string, n: Pick<NodeRow, 'cert_sha256' | 'cert_pem' | 'url' | 'token_id' | 'version'> & { labels?: string | null }, now: number): Promise<boolean> {
  const bound =
    (await db.run(`UPDATE nodes SET cert_sha256 = ?2, cert_pem = ?3, url = ?4, token_id = ?5, version = ?6, enrolled_at = ?7, revoked_at = NULL, last_seen_at = NULL, labels = ?8
          WHERE name = ?1 AND cert_sha256 IS NULL`, name, n.cert_sha256, n.cert_pem, n.url, n.token_id, n.version, now, n.labels ?? null)) === 1
  // The new certificate starts unseen: the old machine's last heartbeat is not its.
  if (bound) await db.run('DELETE FROM node_heartbeats WHERE name = ?1', name)
  return bound
}

export async function updateNodeFields(db: Db, name: string, fields: Partial<Omit<NodeRow, 'name'>>): Promise<void> {
  const keys = Object.keys(fields) as (keyof typeof fields)[]
  if (keys.length === 0) return
  const sets = keys.map((k, i) => `${k} = ?${i + 2}`).join(', ')
  await db.run(`UPDATE nodes SET ${sets} WHERE name = ?1`, name, ...keys.map((k) => fields[k] as string | number | null))
}

/**
 * Writes heartbeats one statement a row, in one transaction: the reference the batched write
 * (src/store/heartbeats.ts) is compared with. A node's last heartbeat never moves back.
 */
export async function writeHeartbeats(db: Db, beats: HeartbeatRow[]): Promise<void> {
  if (beats.length === 0) return
  await db.tx(async (t) => {
    for (const b of beats) {
      if (!(await t.get('SELECT 1 AS one FROM nodes WHERE name = ?1', b.name))) continue
      await t.run(
        `INSERT INTO node_heartbeats (name, last_seen_at, version, cpu_millis, memory_mb, replicas) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (name) DO UPDATE SET last_seen_at = ?2, version = ?3, cpu_millis = ?4, memory_mb = ?5, replicas = ?6 WHERE node_heartbeats.last_seen_at < ?2`,
        b.name, b.last_seen_at, b.version, b.cpu_millis, b.memory_mb, b.replicas,
      )
    }
  })
}

/**
 * The heartbeats other Platforms wrote (`except`: this one's id) at or after `since`, with the node fields a
 * reader checks, a page at a time in (last_seen_at, name) order: at most `limit` rows after `after` (the last
 * row of the previous page), so a read of many rows is decoded a page at a time too.
 */
export async function heartbeatsPage(db: Db, since: number, except: string | null, limit: number, after?: { at: number; name: string }): Promise<(HeartbeatRow & Pick<NodeRow, 'generation' | 'revoked_at' | 'drained' | 'cert_sha256'>)[]> {
  const from = after === undefined ? 'h.last_seen_at >= ?1' : 'h.last_seen_at >= ?1 AND (h.last_seen_at > ?1 OR h.name > ?3)'
  return db.all(
    `SELECT h.name, h.last_seen_at, h.version, h.cpu_millis, h.memory_mb, h.replicas, n.generation, n.revoked_at, n.drained, n.cert_sha256
       FROM node_heartbeats h JOIN nodes n ON n.name = h.name WHERE ${from} AND (h.platform IS NULL OR h.platform <> ?2)
       ORDER BY h.last_seen_at, h.name LIMIT ${Math.floor(limit)}`,
    after === undefined ? since : after.at,
    except ?? '',
    ...(after === undefined ? [] : [after.name]),
  )
}

export interface HeartbeatRow {
  name: string
  last_seen_at: number
  version: string | null
  cpu_millis: number | null
  memory_mb: number | null
  replicas: string | null
}

export async function deleteNodeWithTombstone(db: Db, name: string, now: number): Promise<boolean> {
  return db.tx(async (t) => {
    const gone = (await t.run('DELETE FROM nodes WHERE name = ?1', name)) === 1
    if (gone) await t.run('INSERT INTO node_tombstones (name, removed_at) VALUES (?1, ?2) ON CONFLICT(name) DO UPDATE SET removed_at = ?2', name, now)
    return gone
  })
}

export async function isTombstoned(db: Db, name: string): Promise<boolean> {
  return (await db.get('SELECT 1 FROM node_tombstones WHERE name = ?1', name)) !== null
}

export async function clearTombstone(db: Db, name: string): Promise<void> {
  await db.run('DELETE FROM node_tombstones WHERE name = ?1', name)
}
