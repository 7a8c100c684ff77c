// Join tokens: single-use enrollments bound to a name, and fleet tokens with
// max uses, a name pattern and a lifetime. Shown once; only a digest keyed
// under master.key is kept (src/crypto/token-digest.ts).
import { randomId, randomSecret } from '../crypto/tokens.ts'
import type { TokenDigest } from '../crypto/token-digest.ts'
import { MusterError } from '../errors.ts'
import type { Db } from '../store/db.ts'
import {
  insertJoinToken,
  listFleetTokens,
  pendingEnrollments,
  revokeJoinToken,
  revokePendingEnrollments,
  type JoinTokenRow,
} from '../store/join-tokens.ts'
import { clearTombstone, getNode, isTombstoned } from '../store/nodes.ts'
import type { Fabric } from './fabric.ts'
import type { EnrollmentToken, FleetTokenInfo, FleetTokenMinted, JoinTokenRevoked } from '../wire/nodes.ts'

export async function mintJoinToken(db: Db, digest: TokenDigest, row: Omit<JoinTokenRow, 'id' | 'secret_hash' | 'uses' | 'revoked_at'>): Promise<{ id: string; token: string; row: JoinTokenRow }> {
  const id = randomId(16)
  const secret = randomSecret()
  const full = { ...row, id, secret_hash: digest(secret) }
  await insertJoinToken(db, full)
  return { id, token: `mjt_${id}.${secret}`, row: { ...full, uses: 0, revoked_at: null } }
}


/** A single-use enrollment for one name; `provisionId` binds it to the server that provision creates (cloud first boot). */
export async function issueEnrollment(fabric: Fabric, nodeId: string, ttlMinutes = 60, replace = false, provisionId?: string): Promise<EnrollmentToken> {
  fabric.requireEnrollment()
  const now = fabric.now()
  if (nodeId === 'local') throw new MusterError('name-taken', 'The name local belongs to the Platform’s own node and cannot be enrolled.')
  if (await getNode(fabric.db, nodeId)) throw new MusterError('name-taken', `A node named ${nodeId} is already registered; use \`muster nodes rebind ${nodeId}\` to move it to a new machine.`)
  if ((await isTombstoned(fabric.db, nodeId)) && !replace) throw new MusterError('name-taken', `The name ${nodeId} belonged to a removed node; pass replace (--replace) to reuse it on purpose.`)
  if ((await pendingEnrollments(fabric.db, now, nodeId)).length > 0 && !replace) {
    throw new MusterError('enrollment-pending', `${nodeId} already has an unused enrollment; pass replace (--replace) to issue a new one instead.`)
  }
  const expiresAt = now + ttlMinutes * 60_000
  const token = await fabric.db.tx(async (db) => {
    await revokePendingEnrollments(db, nodeId, now)
    await clearTombstone(db, nodeId)
    return mintJoinToken(db, fabric.digest, { kind: 'enrollment', node_id: nodeId, name_pattern: null, label: null, max_uses: 1, created_at: now, expires_at: expiresAt, provision_id: provisionId ?? null })
  })
  return { nodeId, token: token.token, expiresAt: new Date(expiresAt).toISOString() }
}

export async function createFleetToken(fabric: Fabric, opts: { maxUses?: number; namePattern?: string; ttlMinutes?: number; label?: string }): Promise<FleetTokenMinted> {
  fabric.requireEnrollment()
  const now = fabric.now()
  const expiresAt = now + (opts.ttlMinutes ?? 24 * 60) * 60_000
  const t = await mintJoinToken(fabric.db, fabric.digest, {
    kind: 'fleet',
    node_id: null,
    name_pattern: opts.namePattern ?? null,
    label: opts.label ?? null,
    max_uses: opts.maxUses ?? 1,
    created_at: now,
    expires_at: expiresAt,
  })
  return { id: t.id, token: t.token, maxUses: t.row.max_uses, namePattern: t.row.name_pattern, label: t.row.label, expiresAt: new Date(expiresAt).toISOString() }
}

export async function listFleetTokenViews(fabric: Fabric): Promise<{ tokens: FleetTokenInfo[] }> {
  const now = fabric.now()
  return {
    tokens: (await listFleetTokens(fabric.db)).map((t) => ({
      id: t.id,
      label: t.label,
      maxUses: t.max_uses,
      uses: t.uses,
      namePattern: t.name_pattern,
      createdAt: new Date(t.created_at).toISOString(),
      expiresAt: new Date(t.expires_at).toISOString(),
      status: t.revoked_at !== null ? 'revoked' : t.expires_at <= now ? 'expired' : t.uses >= t.max_uses ? 'used' : 'active',
    })),
  }
}

export async function revokeJoinTokenById(fabric: Fabric, id: string): Promise<JoinTokenRevoked> {
  if (!/^[a-z2-7]{16}$/.test(id) || !(await revokeJoinToken(fabric.db, id, fabric.now()))) throw new MusterError('not-found', `No active join token ${id}.`)
  await fabric.ctx.changes.publish('join-token', id)
  return { id, revoked: true }
}
