// Controller-side tables: offices, each office's one current token (only a
// digest of its secret keyed under master.key, and its fingerprint), break-glass reports and placements. Every write is
// one statement, so concurrent mints and heartbeats cannot interleave badly.
import type { Db } from '../store/db.ts'

export interface OfficeRow {
  office_id: string
  label: string | null
  note: string | null
  created_at: number
  advertise_url: string | null
  version: string | null
  heartbeat_seconds: number | null
  last_seen_at: number | null
  projects_json: string | null
  secret_hash: string | null
  /** tokenFingerprint(office, SHA-256 of the secret): what both sides sign over (formats.ts). */
  fingerprint: string | null
  generation: number | null
  token_created_at: number | null
  revoked_at: number | null
}

const SELECT_OFFICE = `SELECT o.*, t.secret_hash, t.fingerprint, t.generation, t.created_at AS token_created_at, t.revoked_at
  FROM federation_offices o LEFT JOIN federation_tokens t ON t.office_id = o.office_id`

/** The office record comes first, so the controller knows who holds what before a token exists. */
export async function ensureOffice(db: Db, o: { officeId: string; label?: string; note?: string; now: number }): Promise<void> {
  await db.run(`INSERT INTO federation_offices (office_id, label, note, created_at) VALUES (?1, ?2, ?3, ?4)
            ON CONFLICT(office_id) DO UPDATE SET label = coalesce(?2, federation_offices.label), note = coalesce(?3, federation_offices.note)`, o.officeId, o.label ?? null, o.note ?? null, o.now)
}

/** Stores a first token; false when the office already has one. */
export async function insertOfficeToken(db: Db, officeId: string, secretHash: string, fingerprint: string, now: number): Promise<boolean> {
  return (await db.run('INSERT INTO federation_tokens (office_id, secret_hash, created_at, fingerprint) VALUES (?1, ?2, ?3, ?4) ON CONFLICT(office_id) DO NOTHING', officeId, secretHash, now, fingerprint)) === 1
}

/** Replaces the office's token: the old secret stops working at once, and a revoke is lifted. */
export async function rotateOfficeToken(db: Db, officeId: string, secretHash: string, fingerprint: string, now: number): Promise<void> {
  await db.run(`INSERT INTO federation_tokens (office_id, secret_hash, created_at, fingerprint) VALUES (?1, ?2, ?3, ?4)
            ON CONFLICT(office_id) DO UPDATE SET secret_hash = ?2, created_at = ?3, fingerprint = ?4, revoked_at = NULL, generation = federation_tokens.generation + 1`, officeId, secretHash, now, fingerprint)
}

/** Revokes; the record stays. False when the office has no token. */
export async function revokeOfficeToken(db: Db, officeId: string, now: number): Promise<boolean> {
  return (await db.run('UPDATE federation_tokens SET revoked_at = coalesce(revoked_at, ?2) WHERE office_id = ?1', officeId, now)) === 1
}

export async function getOffice(db: Db, officeId: string): Promise<OfficeRow | null> {
  return await db.get<OfficeRow>(`${SELECT_OFFICE} WHERE o.office_id = ?1`, officeId)
}

export async function listOffices(db: Db): Promise<OfficeRow[]> {
  return await db.all<OfficeRow>(`${SELECT_OFFICE} ORDER BY o.office_id`)
}

export async function countOffices(db: Db): Promise<number> {
  return (await db.get<{ n: number }>('SELECT COUNT(*) AS n FROM federation_tokens'))?.n ?? 0
}

/** A heartbeat: where the office is and what it runs; only while the token is the one presented and not revoked. */
export async function recordOfficeSeen(
  db: Db,
  o: { officeId: string; secretHash: string; advertiseUrl: string; version: string | null; heartbeatSeconds: number; projectsJson: string | null; now: number },
): Promise<boolean> {
  return (
    (await db.run(`UPDATE federation_offices SET advertise_url = ?3, version = ?4, heartbeat_seconds = ?5, last_seen_at = ?6, projects_json = coalesce(?7, projects_json)
              WHERE office_id = ?1 AND EXISTS (SELECT 1 FROM federation_tokens t WHERE t.office_id = ?1 AND t.secret_hash = ?2 AND t.revoked_at IS NULL)`, o.officeId, o.secretHash, o.advertiseUrl, o.version, o.heartbeatSeconds, o.now, o.projectsJson)) === 1
  )
}

export interface BreakGlassReportRow {
  office_id: string
  report_id: string
  account: string | null
  at: number
  token_fingerprint: string
  reported_at: number
}

/** Idempotent: an office re-sends until acknowledged, so a repeat keeps the first arrival time. */
export async function insertBreakGlassReport(db: Db, r: { officeId: string; reportId: string; account: string | null; at: number; tokenFingerprint: string; now: number }): Promise<void> {
  await db.run(`INSERT INTO federation_break_glass_reports (office_id, report_id, account, at, token_fingerprint, reported_at)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT(office_id, report_id) DO NOTHING`, r.officeId, r.reportId, r.account, r.at, r.tokenFingerprint, r.now)
}

export async function listBreakGlassReports(db: Db): Promise<BreakGlassReportRow[]> {
  return await db.all<BreakGlassReportRow>('SELECT * FROM federation_break_glass_reports ORDER BY reported_at DESC, at DESC')
}

