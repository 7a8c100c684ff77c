// The cloud_expected_machines table: what a cloud will attest for each machine
// the Platform created (provider, account, region, the id the cloud gives it,
// or the request's idempotency token and creation window), kept until one
// identity join consumes it — in the transaction that registers the node — and
// cloud_identity_challenges: the nonces Azure's attested data must carry, each
// used once. Both are compare-and-set statements, never read-then-write.
import type { Db } from './db.ts'

export interface ExpectedRow {
  id: string
  provision_id: string
  node_name: string
  provider: string
  /** AWS account id, GCP project id, Azure subscription id; null until known. */
  account: string | null
  /** AWS region, GCP zone, Azure location. */
  region: string
  /** The name the provider knows the machine by (GCP's instance_name). */
  machine_name: string
  /** What the cloud attests as the machine's id (EC2 instance id, GCE numeric id, Azure vmId); null until the create answered. */
  attested_id: string | null
  /** The create's idempotency token (EC2 ClientToken, the muster-request tag or label). */
  request_id: string
  /** When the machine may have been created (ms): from just before the create to the provision's deadline. */
  window_start: number
  window_end: number
  created_at: number
  expires_at: number
  consumed_at: number | null
  consumed_by: string | null
  revoked_at: number | null
}

export async function insertExpected(db: Db, r: Omit<ExpectedRow, 'consumed_at' | 'consumed_by' | 'revoked_at'>): Promise<void> {
  await db.run(
    `INSERT INTO cloud_expected_machines (id, provision_id, node_name, provider, account, region, machine_name, attested_id, request_id, window_start, window_end, created_at, expires_at)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)`,
    r.id, r.provision_id, r.node_name, r.provider, r.account, r.region, r.machine_name, r.attested_id, r.request_id, r.window_start, r.window_end, r.created_at, r.expires_at,
  )
}

/** The open record for a name: not consumed, not revoked, not expired (at most one: a new one revokes the others). */
export async function openExpected(db: Db, nodeName: string, now: number): Promise<ExpectedRow | null> {
  return await db.get<ExpectedRow>(
    `SELECT * FROM cloud_expected_machines WHERE node_name = ?1 AND consumed_at IS NULL AND revoked_at IS NULL AND expires_at > ?2 ORDER BY created_at DESC LIMIT 1`,
    nodeName, now,
  )
}

/** The newest record of a name, whatever its state (to say why a join was refused, and to copy on a rebind). */
export async function latestExpected(db: Db, nodeName: string): Promise<ExpectedRow | null> {
  return await db.get<ExpectedRow>(`SELECT * FROM cloud_expected_machines WHERE node_name = ?1 ORDER BY created_at DESC LIMIT 1`, nodeName)
}

export async function expectedOfProvision(db: Db, provisionId: string): Promise<ExpectedRow | null> {
  return await db.get<ExpectedRow>(`SELECT * FROM cloud_expected_machines WHERE provision_id = ?1 ORDER BY created_at DESC LIMIT 1`, provisionId)
}

/** Records what the create answered: the attested id (once; never replaced) and the account. */
export async function noteAttested(db: Db, provisionId: string, attestedId: string | null, account: string | null): Promise<void> {
  await db.run(
    `UPDATE cloud_expected_machines SET attested_id = COALESCE(attested_id, ?2), account = COALESCE(account, ?3) WHERE provision_id = ?1 AND consumed_at IS NULL`,
    provisionId, attestedId, account,
  )
}

/** Consumes the record exactly once; false when another join (or a revoke, or its expiry) came first. */
export async function consumeExpected(db: Db, id: string, certSha256: string, now: number): Promise<boolean> {
  return (await db.get(`UPDATE cloud_expected_machines SET consumed_at = ?2, consumed_by = ?3 WHERE id = ?1 AND consumed_at IS NULL AND revoked_at IS NULL AND expires_at > ?2 RETURNING id`, id, now, certSha256)) !== null
}

/** Revokes a name's open records (a release, a failed provision, a new record for the name). */
export async function revokeExpected(db: Db, nodeName: string, now: number): Promise<void> {
  await db.run(`UPDATE cloud_expected_machines SET revoked_at = ?2 WHERE node_name = ?1 AND consumed_at IS NULL AND revoked_at IS NULL`, nodeName, now)
}

export async function insertChallenge(db: Db, nonce: string, nodeName: string, now: number, expiresAt: number): Promise<void> {
  await db.run(`DELETE FROM cloud_identity_challenges WHERE expires_at < ?1`, now - 3600_000)
  await db.run(`INSERT INTO cloud_identity_challenges (nonce, node_name, created_at, expires_at) VALUES (?1, ?2, ?3, ?4)`, nonce, nodeName, now, expiresAt)
}

/** Takes the challenge for this name once; false when unknown, for another name, used or expired. */
export async function takeChallenge(db: Db, nonce: string, nodeName: string, now: number): Promise<boolean> {
  return (await db.get(`UPDATE cloud_identity_challenges SET used_at = ?3 WHERE nonce = ?1 AND node_name = ?2 AND used_at IS NULL AND expires_at > ?3 RETURNING nonce`, nonce, nodeName, now)) !== null
}

export async function getChallenge(db: Db, nonce: string): Promise<{ nonce: string; node_name: string; expires_at: number; used_at: number | null } | null> {
  return await db.get(`SELECT nonce, node_name, expires_at, used_at FROM cloud_identity_challenges WHERE nonce = ?1`, nonce)
}
