// The release tables (docs/upgrading.md): release public keys, releases with
// their signed manifests, binaries and deltas kept in parts (so every Platform
// sharing the store serves them), and what each node's Agent runs.
import type { Db } from './db.ts'

export interface ReleaseKeyRow {
  kid: string
  public_key: string
  endorsed_by: string | null
  signature: string | null
  added_at: number
  added_by: string
}

export interface ReleaseRow {
  sha256: string
  version: string
  arch: string
  size: number
  sequence: number
  kid: string
  signature: string
  mirrors: string
  compressed_size: number
  added_at: number
  added_by: string
}

export interface NodeAgentRow {
  name: string
  arch: string
  version: string
  binary_sha256: string
  sequence: number
  skipped: string
  reported_at: number
}

export async function releaseKeys(db: Db): Promise<ReleaseKeyRow[]> {
  return db.all<ReleaseKeyRow>('SELECT * FROM release_keys ORDER BY added_at, kid')
}

/** Adds a public key; false when it was there already. */
export async function insertReleaseKey(db: Db, k: ReleaseKeyRow): Promise<boolean> {
  return (await db.run('INSERT INTO release_keys (kid, public_key, endorsed_by, signature, added_at, added_by) VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (kid) DO NOTHING', k.kid, k.public_key, k.endorsed_by, k.signature, k.added_at, k.added_by)) === 1
}

export async function listReleases(db: Db): Promise<ReleaseRow[]> {
  return db.all<ReleaseRow>('SELECT * FROM releases ORDER BY sequence')
}

export async function releaseBySha(db: Db, sha256: string): Promise<ReleaseRow | null> {
  return db.get<ReleaseRow>('SELECT * FROM releases WHERE sha256 = ?1', sha256)
}

/** The newest release (highest sequence) of `version` for `arch`. */
export async function releaseFor(db: Db, version: string, arch: string): Promise<ReleaseRow | null> {
  return db.get<ReleaseRow>('SELECT * FROM releases WHERE version = ?1 AND arch = ?2 ORDER BY sequence DESC LIMIT 1', version, arch)
}

export async function releasesOfVersion(db: Db, version: string): Promise<ReleaseRow[]> {
  return db.all<ReleaseRow>('SELECT * FROM releases WHERE version = ?1 ORDER BY sequence', version)
}

export async function maxSequence(db: Db): Promise<number> {
  return Number((await db.get<{ m: number | null }>('SELECT MAX(sequence) AS m FROM releases'))?.m ?? 0)
}

export async function insertRelease(db: Db, r: ReleaseRow): Promise<void> {
  await db.run(
    `INSERT INTO releases (sha256, version, arch, size, sequence, kid, signature, mirrors, compressed_size, added_at, added_by)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)`,
    r.sha256, r.version, r.arch, r.size, r.sequence, r.kid, r.signature, r.mirrors, r.compressed_size, r.added_at, r.added_by,
  )
}

// ---- blobs in parts --------------------------------------------------------------

export interface BlobInfo {
  id: string
  size: number
  parts: number
  complete: number
  created_at: number
}

export async function blobInfo(db: Db, id: string): Promise<BlobInfo | null> {
  return db.get<BlobInfo>('SELECT * FROM release_blob_info WHERE id = ?1', id)
}

/** Starts a blob (an upload, a delta being written); replaces an unfinished one of the same id. */
export async function beginBlob(db: Db, id: string, now: number): Promise<void> {
  await db.tx(async (t) => {
    await t.run('DELETE FROM release_blobs WHERE id = ?1', id)
    await t.run('DELETE FROM release_blob_info WHERE id = ?1', id)
    await t.run('INSERT INTO release_blob_info (id, size, parts, complete, created_at) VALUES (?1, 0, 0, 0, ?2)', id, now)
  })
}

/** Appends part `part` (0, 1, …) of an unfinished blob; false when that part is not the next one. */
export async function appendBlobPart(db: Db, id: string, part: number, data: Uint8Array): Promise<boolean> {
  return db.tx(async (t) => {
    const moved = await t.run('UPDATE release_blob_info SET parts = parts + 1, size = size + ?3 WHERE id = ?1 AND parts = ?2 AND complete = 0', id, part, data.byteLength)
    if (moved !== 1) return false
    await t.run('INSERT INTO release_blobs (id, part, data) VALUES (?1, ?2, ?3)', id, part, data)
    return true
  })
}

export async function completeBlob(db: Db, id: string): Promise<boolean> {
  return (await db.run('UPDATE release_blob_info SET complete = 1 WHERE id = ?1 AND complete = 0', id)) === 1
}

/** Gives an upload's parts the blob's own id (one transaction). */
export async function renameBlob(db: Db, from: string, to: string): Promise<void> {
  await db.tx(async (t) => {
    await t.run('DELETE FROM release_blobs WHERE id = ?1', to)
    await t.run('DELETE FROM release_blob_info WHERE id = ?1', to)
    await t.run('UPDATE release_blobs SET id = ?2 WHERE id = ?1', from, to)
    await t.run('UPDATE release_blob_info SET id = ?2 WHERE id = ?1', from, to)
  })
}

export async function blobPart(db: Db, id: string, part: number): Promise<Uint8Array | null> {
  const r = await db.get<{ data: Uint8Array }>('SELECT data FROM release_blobs WHERE id = ?1 AND part = ?2', id, part)
  return r ? new Uint8Array(r.data) : null
}

export async function deleteBlob(db: Db, id: string): Promise<void> {
  await db.tx(async (t) => {
    await t.run('DELETE FROM release_blobs WHERE id = ?1', id)
    await t.run('DELETE FROM release_blob_info WHERE id = ?1', id)
  })
}

/** Unfinished uploads older than `before` (an operator's `releases add` that stopped half way). */
export async function dropStaleUploads(db: Db, before: number): Promise<number> {
  const stale = await db.all<{ id: string }>("SELECT id FROM release_blob_info WHERE id LIKE 'upload:%' AND created_at < ?1", before)
  for (const s of stale) await deleteBlob(db, s.id)
  return stale.length
}

// ---- what each node's Agent runs ---------------------------------------------------

export async function upsertNodeAgent(db: Db, r: NodeAgentRow): Promise<void> {
  await db.run(
    `INSERT INTO node_agents (name, arch, version, binary_sha256, sequence, skipped, reported_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
     ON CONFLICT (name) DO UPDATE SET arch = ?2, version = ?3, binary_sha256 = ?4, sequence = ?5, skipped = ?6, reported_at = ?7`,
    r.name, r.arch, r.version, r.binary_sha256, r.sequence, r.skipped, r.reported_at,
  )
}

export async function nodeAgents(db: Db): Promise<NodeAgentRow[]> {
  return db.all<NodeAgentRow>('SELECT * FROM node_agents')
}

export async function nodeAgent(db: Db, name: string): Promise<NodeAgentRow | null> {
  return db.get<NodeAgentRow>('SELECT * FROM node_agents WHERE name = ?1', name)
}
