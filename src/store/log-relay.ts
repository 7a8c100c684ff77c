// The log relay's tables (src/projects/logs.ts): log_requests waiting for (or
// picked up by) their node, and log_chunks, what the node sent for each,
// sealed. Every Platform on the store reads and writes them, so the one an
// operator asked and the one the node talks to need not be the same.
import type { Db } from './db.ts'

export interface LogRequestRow {
  id: string
  node: string
  project: string
  replica: number
  tail: number
  follow: number
  requested_by: string
  created_at: number
  expires_at: number
  picked_at: number | null
}

export async function insertLogRequest(db: Db, r: Omit<LogRequestRow, 'picked_at'>): Promise<void> {
  await db.run(
    'INSERT INTO log_requests (id, node, project, replica, tail, follow, requested_by, created_at, expires_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)',
    r.id, r.node, r.project, r.replica, r.tail, r.follow, r.requested_by, r.created_at, r.expires_at,
  )
}

export async function logRequest(db: Db, id: string): Promise<LogRequestRow | null> {
  return db.get<LogRequestRow>('SELECT * FROM log_requests WHERE id = ?1', id)
}

/** The node's requests nobody has picked up yet; they are marked picked in the same transaction. */
export async function pickLogRequests(db: Db, node: string, now: number): Promise<LogRequestRow[]> {
  return db.tx(async (t) => {
    const rows = await t.all<LogRequestRow>('SELECT * FROM log_requests WHERE node = ?1 AND picked_at IS NULL AND expires_at > ?2 ORDER BY created_at LIMIT 64', node, now)
    for (const r of rows) await t.run('UPDATE log_requests SET picked_at = ?2 WHERE id = ?1', r.id, now)
    return rows
  })
}

/** Nodes with a request waiting to be picked up. */
export async function nodesWithLogRequests(db: Db, now: number): Promise<string[]> {
  return (await db.all<{ node: string }>('SELECT DISTINCT node FROM log_requests WHERE picked_at IS NULL AND expires_at > ?1', now)).map((r) => r.node)
}

export async function countLogRequests(db: Db, node: string, now: number): Promise<number> {
  return Number((await db.get<{ n: number }>('SELECT COUNT(*) AS n FROM log_requests WHERE node = ?1 AND expires_at > ?2', node, now))?.n ?? 0)
}

export async function renewLogRequest(db: Db, id: string, expiresAt: number): Promise<boolean> {
  return (await db.run('UPDATE log_requests SET expires_at = ?2 WHERE id = ?1', id, expiresAt)) === 1
}

export async function deleteLogRequest(db: Db, id: string): Promise<void> {
  await db.tx(async (t) => {
    await t.run('DELETE FROM log_chunks WHERE request = ?1', id)
    await t.run('DELETE FROM log_requests WHERE id = ?1', id)
  })
}

/**
 * How much unread output the store keeps for a node (src/projects/logs.ts): per log request and per project,
 * whatever the node sends. Read chunks are deleted as the reader moves on, and an ended request's go with it.
 */
export interface LogChunkCaps {
  bytesPerRequest: number
  chunksPerRequest: number
  bytesPerProject: number
}

/**
 * Stores a chunk unless that would put its request or its project past their caps (one statement: the check and
 * the insert cannot be split by another upload). 'duplicate': that chunk was stored already (a retried upload).
 */
export async function insertLogChunk(db: Db, request: string, project: string, seq: number, sealed: Uint8Array, now: number, caps: LogChunkCaps): Promise<'stored' | 'duplicate' | 'full'> {
  const stored = await db.run(
    `INSERT INTO log_chunks (request, seq, sealed, created_at)
       SELECT ?1, ?2, ?3, ?4
        WHERE (SELECT COALESCE(SUM(LENGTH(sealed)), 0) FROM log_chunks WHERE request = ?1) + ?5 <= ?6
          AND (SELECT COUNT(*) FROM log_chunks WHERE request = ?1) < ?7
          AND (SELECT COALESCE(SUM(LENGTH(c.sealed)), 0) FROM log_chunks c JOIN log_requests r ON r.id = c.request WHERE r.project = ?8) + ?5 <= ?9
     ON CONFLICT (request, seq) DO NOTHING`,
    request, seq, sealed, now, sealed.length, caps.bytesPerRequest, caps.chunksPerRequest, project, caps.bytesPerProject,
  )
  if (stored === 1) return 'stored'
  return (await db.get('SELECT 1 FROM log_chunks WHERE request = ?1 AND seq = ?2', request, seq)) ? 'duplicate' : 'full'
}

/** The unread output kept for one request: its chunks and their sealed bytes. */
export async function pendingLogChunks(db: Db, request: string): Promise<{ chunks: number; bytes: number }> {
  const r = await db.get<{ chunks: number; bytes: number }>('SELECT COUNT(*) AS chunks, COALESCE(SUM(LENGTH(sealed)), 0) AS bytes FROM log_chunks WHERE request = ?1', request)
  return { chunks: Number(r?.chunks ?? 0), bytes: Number(r?.bytes ?? 0) }
}

export async function logChunksAfter(db: Db, request: string, after: number): Promise<{ seq: number; sealed: Uint8Array }[]> {
  return db.all<{ seq: number; sealed: Uint8Array }>('SELECT seq, sealed FROM log_chunks WHERE request = ?1 AND seq > ?2 ORDER BY seq LIMIT 100', request, after)
}

export async function deleteLogChunksUpTo(db: Db, request: string, seq: number): Promise<void> {
  await db.run('DELETE FROM log_chunks WHERE request = ?1 AND seq <= ?2', request, seq)
}

/** Removes expired requests and any chunk whose request is gone; the number of requests removed. */
export async function sweepLogRelay(db: Db, now: number): Promise<number> {
  return db.tx(async (t) => {
    const n = await t.run('DELETE FROM log_requests WHERE expires_at <= ?1', now)
    await t.run('DELETE FROM log_chunks WHERE request NOT IN (SELECT id FROM log_requests)')
    return n
  })
}
