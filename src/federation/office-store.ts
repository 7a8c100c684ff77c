// Office-side tables: where the controller is, the break-glass and detach acts
// (kept forever: they are the office's own record), spent nonces (pruned once
// they could no longer verify anyway), identity writes and placed projects.
import type { Db } from '../store/db.ts'

export async function getMembership(db: Db): Promise<{ controller_url: string | null; advertise_url: string | null } | null> {
  return await db.get<{ controller_url: string | null; advertise_url: string | null }>('SELECT controller_url, advertise_url FROM office_membership WHERE id = 1')
}

export async function saveMembership(db: Db, controllerUrl: string, advertiseUrl: string, now: number): Promise<void> {
  await db.run(`INSERT INTO office_membership (id, controller_url, advertise_url, updated_at) VALUES (1, ?1, ?2, ?3)
            ON CONFLICT(id) DO UPDATE SET controller_url = ?1, advertise_url = ?2, updated_at = ?3`, controllerUrl, advertiseUrl, now)
}

export interface BreakGlassRow {
  id: string
  office_id: string
  account: string | null
  at: number
  token_fingerprint: string
  reported_at: number | null
}

export async function insertBreakGlass(db: Db, r: { id: string; officeId: string; account: string | null; at: number; tokenFingerprint: string }): Promise<void> {
  await db.run('INSERT INTO office_break_glass (id, office_id, account, at, token_fingerprint) VALUES (?1, ?2, ?3, ?4, ?5)', r.id, r.officeId, r.account, r.at, r.tokenFingerprint)
}

/** The newest break-glass performed under this membership, if any: the act in force. */
export async function breakGlassInForce(db: Db, tokenFingerprint: string): Promise<BreakGlassRow | null> {
  return await db.get<BreakGlassRow>('SELECT * FROM office_break_glass WHERE token_fingerprint = ?1 ORDER BY at DESC, id DESC LIMIT 1', tokenFingerprint)
}

export async function unreportedBreakGlass(db: Db): Promise<BreakGlassRow[]> {
  return await db.all<BreakGlassRow>('SELECT * FROM office_break_glass WHERE reported_at IS NULL ORDER BY at')
}

export async function markBreakGlassReported(db: Db, ids: string[], now: number): Promise<void> {
  await db.tx(async (t) => {
    for (const id of ids) await t.run('UPDATE office_break_glass SET reported_at = ?2 WHERE id = ?1 AND reported_at IS NULL', id, now)
  })
}

/**
 * A membership the controller answered is over: `federation-token-revoked`, or `federation-refused` (its secret
 * superseded by a rotate). Sessions vouched under it end, and no vouch is redeemed under it, until a signed
 * answer of the controller accepts the membership again.
 */
export async function markMembershipEnded(db: Db, tokenFingerprint: string, reason: string, now: number): Promise<void> {
  await db.run('INSERT INTO office_membership_ends (token_fingerprint, reason, at) VALUES (?1, ?2, ?3) ON CONFLICT(token_fingerprint) DO NOTHING', tokenFingerprint, reason, now)
}

export async function clearMembershipEnded(db: Db, tokenFingerprint: string): Promise<void> {
  await db.run('DELETE FROM office_membership_ends WHERE token_fingerprint = ?1', tokenFingerprint)
}

/** Why the controller ended this membership, or null while it stands. */
export async function membershipEnded(db: Db, tokenFingerprint: string): Promise<string | null> {
  return (await db.get<{ reason: string }>('SELECT reason FROM office_membership_ends WHERE token_fingerprint = ?1', tokenFingerprint))?.reason ?? null
}

export async function insertDetach(db: Db, officeId: string, tokenFingerprint: string, now: number): Promise<void> {
  await db.run('INSERT INTO office_detaches (office_id, token_fingerprint, at) VALUES (?1, ?2, ?3)', officeId, tokenFingerprint, now)
}

export async function lastDetach(db: Db): Promise<{ office_id: string; at: number } | null> {
  return await db.get<{ office_id: string; at: number }>('SELECT office_id, at FROM office_detaches ORDER BY id DESC LIMIT 1')
}

/** Spends a nonce exactly once (the primary key is the compare-and-set); prunes the expired first. */
export async function spendNonce(db: Db, nonce: string, kind: 'vouch' | 'call', expiresAt: number, now: number): Promise<boolean> {
  await db.run('DELETE FROM office_spent_nonces WHERE expires_at <= ?1', now)
  return (await db.run('INSERT INTO office_spent_nonces (nonce, kind, expires_at) VALUES (?1, ?2, ?3) ON CONFLICT(nonce) DO NOTHING', `${kind}:${nonce}`, kind, expiresAt)) === 1
}

export interface IdentityWriteRow {
  id: number
  at: number
  owner: string
  action: 'created' | 'linked'
  role: string
  reason: string
}

export async function insertIdentityWrite(db: Db, w: { owner: string; action: 'created' | 'linked'; role: string; reason: string; now: number }): Promise<void> {
  await db.run('INSERT INTO office_identity_writes (at, owner, action, role, reason) VALUES (?1, ?2, ?3, ?4, ?5)', w.now, w.owner, w.action, w.role, w.reason)
}

export async function hasIdentityWrite(db: Db, owner: string): Promise<boolean> {
  return (await db.get('SELECT 1 FROM office_identity_writes WHERE owner = ?1 LIMIT 1', owner)) !== null
}

export async function listIdentityWrites(db: Db): Promise<IdentityWriteRow[]> {
  return await db.all<IdentityWriteRow>('SELECT * FROM office_identity_writes ORDER BY id DESC')
}

export async function upsertPlacedProject(db: Db, name: string, specJson: string, now: number): Promise<void> {
  await db.run(`INSERT INTO office_placed_projects (name, spec_json, placed_at) VALUES (?1, ?2, ?3)
            ON CONFLICT(name) DO UPDATE SET spec_json = ?2, placed_at = ?3`, name, specJson, now)
}

export async function listPlacedProjects(db: Db): Promise<{ name: string; spec_json: string; placed_at: number }[]> {
  return await db.all<{ name: string; spec_json: string; placed_at: number }>('SELECT * FROM office_placed_projects ORDER BY name')
}
