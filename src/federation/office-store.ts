// Office-side tables: where the controller is, the break-glass and detach acts
// (kept forever: they are the office's own record), spent nonces (pruned once
// they could no longer verify anyway), identity writes and placed projects.
import type { Db } from '../store/db.ts'

export function getMembership(db: Db): { controller_url: string | null; advertise_url: string | null } | null {
  return db.query<{ controller_url: string | null; advertise_url: string | null }, []>('SELECT controller_url, advertise_url FROM office_membership WHERE id = 1').get()
}

export function saveMembership(db: Db, controllerUrl: string, advertiseUrl: string, now: number): void {
  db.query(`INSERT INTO office_membership (id, controller_url, advertise_url, updated_at) VALUES (1, ?1, ?2, ?3)
            ON CONFLICT(id) DO UPDATE SET controller_url = ?1, advertise_url = ?2, updated_at = ?3`).run(controllerUrl, advertiseUrl, now)
}

export interface BreakGlassRow {
  id: string
  office_id: string
  account: string | null
  at: number
  token_fingerprint: string
  reported_at: number | null
}

export function insertBreakGlass(db: Db, r: { id: string; officeId: string; account: string | null; at: number; tokenFingerprint: string }): void {
  db.query('INSERT INTO office_break_glass (id, office_id, account, at, token_fingerprint) VALUES (?1, ?2, ?3, ?4, ?5)').run(r.id, r.officeId, r.account, r.at, r.tokenFingerprint)
}

/** The newest break-glass performed under this membership, if any: the act in force. */
export function breakGlassInForce(db: Db, tokenFingerprint: string): BreakGlassRow | null {
  return db.query<BreakGlassRow, [string]>('SELECT * FROM office_break_glass WHERE token_fingerprint = ?1 ORDER BY at DESC, rowid DESC LIMIT 1').get(tokenFingerprint)
}

export function unreportedBreakGlass(db: Db): BreakGlassRow[] {
  return db.query<BreakGlassRow, []>('SELECT * FROM office_break_glass WHERE reported_at IS NULL ORDER BY at').all()
}

export function markBreakGlassReported(db: Db, ids: string[], now: number): void {
  const q = db.query('UPDATE office_break_glass SET reported_at = ?2 WHERE id = ?1 AND reported_at IS NULL')
  db.transaction(() => {
    for (const id of ids) q.run(id, now)
  })()
}

export function insertDetach(db: Db, officeId: string, tokenFingerprint: string, now: number): void {
  db.query('INSERT INTO office_detaches (office_id, token_fingerprint, at) VALUES (?1, ?2, ?3)').run(officeId, tokenFingerprint, now)
}

export function lastDetach(db: Db): { office_id: string; at: number } | null {
  return db.query<{ office_id: string; at: number }, []>('SELECT office_id, at FROM office_detaches ORDER BY id DESC LIMIT 1').get()
}

/** Spends a nonce exactly once (the primary key is the compare-and-set); prunes the expired first. */
export function spendNonce(db: Db, nonce: string, kind: 'vouch' | 'call', expiresAt: number, now: number): boolean {
  db.query('DELETE FROM office_spent_nonces WHERE expires_at <= ?1').run(now)
  return db.query('INSERT INTO office_spent_nonces (nonce, kind, expires_at) VALUES (?1, ?2, ?3) ON CONFLICT(nonce) DO NOTHING').run(`${kind}:${nonce}`, kind, expiresAt).changes === 1
}

export interface IdentityWriteRow {
  id: number
  at: number
  owner: string
  action: 'created' | 'linked'
  role: string
  reason: string
}

export function insertIdentityWrite(db: Db, w: { owner: string; action: 'created' | 'linked'; role: string; reason: string; now: number }): void {
  db.query('INSERT INTO office_identity_writes (at, owner, action, role, reason) VALUES (?1, ?2, ?3, ?4, ?5)').run(w.now, w.owner, w.action, w.role, w.reason)
}

export function hasIdentityWrite(db: Db, owner: string): boolean {
  return db.query('SELECT 1 FROM office_identity_writes WHERE owner = ?1 LIMIT 1').get(owner) !== null
}

export function listIdentityWrites(db: Db): IdentityWriteRow[] {
  return db.query<IdentityWriteRow, []>('SELECT * FROM office_identity_writes ORDER BY id DESC').all()
}

export function upsertPlacedProject(db: Db, name: string, specJson: string, now: number): void {
  db.query(`INSERT INTO office_placed_projects (name, spec_json, placed_at) VALUES (?1, ?2, ?3)
            ON CONFLICT(name) DO UPDATE SET spec_json = ?2, placed_at = ?3`).run(name, specJson, now)
}

export function listPlacedProjects(db: Db): { name: string; spec_json: string; placed_at: number }[] {
  return db.query<{ name: string; spec_json: string; placed_at: number }, []>('SELECT * FROM office_placed_projects ORDER BY name').all()
}
