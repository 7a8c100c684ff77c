// The nodes and node_tombstones tables. Heartbeat fields are written in
// batches by the registry, never one synchronous write per heartbeat.
import type { Db } from './db.ts'

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
}

export function allNodes(db: Db): NodeRow[] {
  return db.query<NodeRow, []>('SELECT * FROM nodes ORDER BY name').all()
}

export function getNode(db: Db, name: string): NodeRow | null {
  return db.query<NodeRow, [string]>('SELECT * FROM nodes WHERE name = ?1').get(name)
}

export function nodeByCert(db: Db, certSha256: string): NodeRow | null {
  return db.query<NodeRow, [string]>('SELECT * FROM nodes WHERE cert_sha256 = ?1').get(certSha256)
}

export function insertNode(db: Db, n: Pick<NodeRow, 'name' | 'auth' | 'cert_sha256' | 'cert_pem' | 'url' | 'token_id' | 'version' | 'enrolled_at'>): void {
  db.query(
    `INSERT INTO nodes (name, auth, cert_sha256, cert_pem, url, token_id, version, enrolled_at)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)`,
  ).run(n.name, n.auth, n.cert_sha256, n.cert_pem, n.url, n.token_id, n.version, n.enrolled_at)
}

/** Binds a new certificate to a name being rebound (its cert was cleared by rebind). */
export function bindCertificate(db: Db, name: string, n: Pick<NodeRow, 'cert_sha256' | 'cert_pem' | 'url' | 'token_id' | 'version'>, now: number): boolean {
  return (
    db
      .query(
        `UPDATE nodes SET cert_sha256 = ?2, cert_pem = ?3, url = ?4, token_id = ?5, version = ?6, enrolled_at = ?7, revoked_at = NULL, last_seen_at = NULL
          WHERE name = ?1 AND cert_sha256 IS NULL`,
      )
      .run(name, n.cert_sha256, n.cert_pem, n.url, n.token_id, n.version, now).changes === 1
  )
}

export function updateNodeFields(db: Db, name: string, fields: Partial<Omit<NodeRow, 'name'>>): void {
  const keys = Object.keys(fields) as (keyof typeof fields)[]
  if (keys.length === 0) return
  const sets = keys.map((k, i) => `${k} = ?${i + 2}`).join(', ')
  db.query(`UPDATE nodes SET ${sets} WHERE name = ?1`).run(name, ...keys.map((k) => fields[k] as string | number | null))
}

/** Writes many heartbeats in one transaction. */
export function writeHeartbeats(db: Db, beats: { name: string; last_seen_at: number; version: string | null; cpu_millis: number | null; memory_mb: number | null; replicas: string | null }[]): void {
  const q = db.query('UPDATE nodes SET last_seen_at = ?2, version = ?3, cpu_millis = ?4, memory_mb = ?5, replicas = ?6 WHERE name = ?1')
  db.transaction(() => {
    for (const b of beats) q.run(b.name, b.last_seen_at, b.version, b.cpu_millis, b.memory_mb, b.replicas)
  })()
}

export function deleteNodeWithTombstone(db: Db, name: string, now: number): boolean {
  return db.transaction(() => {
    const gone = db.query('DELETE FROM nodes WHERE name = ?1').run(name).changes === 1
    if (gone) db.query('INSERT INTO node_tombstones (name, removed_at) VALUES (?1, ?2) ON CONFLICT(name) DO UPDATE SET removed_at = ?2').run(name, now)
    return gone
  })()
}

export function isTombstoned(db: Db, name: string): boolean {
  return db.query('SELECT 1 FROM node_tombstones WHERE name = ?1').get(name) !== null
}

export function clearTombstone(db: Db, name: string): void {
  db.query('DELETE FROM node_tombstones WHERE name = ?1').run(name)
}
