// The controller: mints one token per office, answers each office's
// registration and heartbeat with a signature over that office's own nonce,
// keeps the directory, vouches for its operators, collects break-glass
// reports, and places projects on offices with signed calls.
import type { Principal } from '../auth/auth.ts'
import type { SigningKey } from '../crypto/ed25519.ts'
import { randomSecret, safeEqual, sha256Hex } from '../crypto/tokens.ts'
import { tokenDigester, type TokenDigest } from '../crypto/token-digest.ts'
import { MusterError } from '../errors.ts'
import { log } from '../log.ts'
import type { Context } from '../context/context.ts'
import * as store from './controller-store.ts'
import { DOMAINS, formatOfficeToken, parseOfficeToken, tokenFingerprint } from '../wire/federation-formats.ts'
import { loadClusterKey, signProof } from './proofs.ts'
import { mintVouch } from './vouch.ts'
import { getAccount } from '../store/accounts.ts'
import { isRole, lowerRole } from '../wire/permissions.ts'
import type { OfficeHeartbeatBody, OfficeRegisterBody } from '../wire/federation.ts'
import type { OfficeBreakGlassReport, OfficeInfo, OfficeProjectStatus, OfficeTokenInfo, OfficeTokenMinted, OfficeTokenRevoked, VouchMinted } from '../wire/federation.ts'
import { TUNABLES } from '../tunables.ts'

export const DEFAULT_HEARTBEAT_SECONDS = TUNABLES.MUSTER_FEDERATION_HEARTBEAT_SECONDS.default
const iso = (ms: number | null | undefined) => (ms === null || ms === undefined ? null : new Date(ms).toISOString())

export class Controller {
  private cachedKey: SigningKey | undefined
  /** Digests of office token secrets, keyed under master.key (a row written without it matches no token). */
  private readonly digest: TokenDigest

  constructor(private readonly ctx: Context) {
    this.digest = tokenDigester(ctx.masterKey)
  }

  private get db() {
    return this.ctx.store
  }

  /** The cluster key; created the first time this Platform mints, so a Platform that never mints has none. */
  async key(create = false): Promise<SigningKey> {
    this.cachedKey ??= await loadClusterKey(this.ctx.vault, create)
    if (!this.cachedKey) throw new MusterError('internal', 'The cluster signing key is missing from the store although offices were minted here; restore the store from backup (offices verify every answer with it).')
    return this.cachedKey
  }

  /**
   * Minting an office token:
   *   1. the cluster key exists (created on first mint, 0600)
   *   2. the office record exists before any token does
   *   3. the token row: a first token, or with `rotate` a new secret that
   *      replaces the old at once; otherwise 409 office-exists
   *   4. the plaintext is returned once; only its keyed digest and fingerprint are kept
   */
  async mint(body: { officeId: string; label?: string; note?: string; rotate?: boolean }): Promise<OfficeTokenMinted> {
    const key = await this.key(true)
    const now = this.ctx.now()
    await store.ensureOffice(this.db, { officeId: body.officeId, label: body.label, note: body.note, now })
    const secret = randomSecret()
    const fingerprint = tokenFingerprint(body.officeId, sha256Hex(secret))
    if (body.rotate) await store.rotateOfficeToken(this.db, body.officeId, this.digest(secret), fingerprint, now)
    else if (!(await store.insertOfficeToken(this.db, body.officeId, this.digest(secret), fingerprint, now))) {
      throw new MusterError('office-exists', `Office '${body.officeId}' already has a token; pass rotate (--rotate) to replace it, which stops the one it uses now.`)
    }
    log.info(`federation: ${body.rotate ? 'rotated' : 'minted'} the token for office ${body.officeId}`)
    return { officeId: body.officeId, token: formatOfficeToken(body.officeId, key.publicKey, secret) }
  }

  async tokens(): Promise<{ tokens: OfficeTokenInfo[] }> {
    const tokens = (await store.listOffices(this.db))
      .filter((o) => o.secret_hash)
      .map((o) => ({ officeId: o.office_id, label: o.label, status: status(o), createdAt: iso(o.token_created_at), lastSeenAt: iso(o.last_seen_at) }))
    return { tokens }
  }

  async revoke(officeId: string): Promise<OfficeTokenRevoked> {
    if (!(await store.revokeOfficeToken(this.db, officeId, this.ctx.now()))) throw new MusterError('not-found', `No office '${officeId}' holds a token here.`)
    log.info(`federation: revoked office ${officeId}`)
    return { officeId, status: 'revoked' as const }
  }

  async offices(): Promise<{ offices: OfficeInfo[] }> {
    const now = this.ctx.now()
    const offices = (await store.listOffices(this.db)).map((o) => {
      const interval = (o.heartbeat_seconds ?? DEFAULT_HEARTBEAT_SECONDS) * 1000
      return {
        officeId: o.office_id,
        label: o.label,
        advertiseUrl: o.advertise_url,
        fresh: status(o) === 'active' && o.last_seen_at !== null && now - o.last_seen_at <= 3 * interval,
        lastSeenAt: iso(o.last_seen_at),
        status: status(o),
        version: o.version,
        projects: o.projects_json ? (JSON.parse(o.projects_json) as OfficeProjectStatus[]) : [],
      }
    })
    return { offices }
  }

  /** The office a request may act on: minted here, holding a token, not revoked. */
  private async activeOffice(officeId: string): Promise<store.OfficeRow & { secret_hash: string; fingerprint: string }> {
    if ((await store.countOffices(this.db)) === 0) throw new MusterError('not-a-controller', 'This Platform has minted no office tokens, so it is not a controller.')
    const o = await store.getOffice(this.db, officeId)
    if (!o?.secret_hash) throw new MusterError('not-found', `No office '${officeId}' here; mint its token with \`muster federation mint ${officeId}\`.`)
    if (o.revoked_at !== null) throw new MusterError('federation-token-revoked', `Office '${officeId}' was revoked; re-mint its token with --rotate to take it back.`)
    if (!o.fingerprint) throw new MusterError('conflict', `The token of office '${officeId}' has no fingerprint in the store; re-mint it with \`muster federation mint ${officeId} --rotate\`.`)
    return o as store.OfficeRow & { secret_hash: string; fingerprint: string }
  }

  /**
   * A vouch names the caller's own account, never anyone else's, and carries the
   * lower of the caller's role (a viewer token of a superadmin account is a viewer)
   * and its account's role now (docs/security.md).
   */
  async vouch(officeId: string, caller: Principal): Promise<VouchMinted> {
    const o = await this.activeOffice(officeId)
    const account = caller.account ? await getAccount(this.db, caller.account) : null
    const role = account && isRole(account.role) ? lowerRole(caller.role, account.role) : caller.role
    const { vouch, expiresAt } = mintVouch(await this.key(), officeId, caller.account ?? '', role, o.fingerprint, this.ctx.now())
    log.info(`federation: vouched for ${caller.account} (${role}) at office ${officeId}`)
    const redeemUrl = o.advertise_url ? `${o.advertise_url}/office/vouch?v=${encodeURIComponent(vouch)}` : null
    return { vouch, redeemUrl, expiresAt: new Date(expiresAt * 1000).toISOString() }
  }

  async breakGlassReports(): Promise<{ reports: OfficeBreakGlassReport[] }> {
    const reports = (await store.listBreakGlassReports(this.db)).map((r) => ({ officeId: r.office_id, account: r.account, at: new Date(r.at).toISOString(), reportedAt: new Date(r.reported_at).toISOString() }))
    return { reports }
  }

  /**
   * Checking an office's credential, on every registration and heartbeat:
   *   1. the token has the mof1 shape
   *   2. the office id it claims is the id inside its token   → office-mismatch
   *   3. the secret's keyed digest matches, in constant time        → federation-refused
   *      (the same answer for an unknown office and a wrong or rotated secret)
   *   4. the token is not revoked                              → federation-token-revoked
   */
  private async authenticateOffice(body: OfficeRegisterBody): Promise<{ fingerprint: string; secretHash: string }> {
    const token = parseOfficeToken(body.token)
    if (body.officeId !== token.officeId) {
      throw new MusterError('office-mismatch', `This office calls itself '${body.officeId}', but its token was minted for office '${token.officeId}'; refusing the registration.`, {
        configured: body.officeId,
        token: token.officeId,
      })
    }
    const o = await store.getOffice(this.db, token.officeId)
    const secretHash = this.digest(token.secret)
    if (!o?.secret_hash || !safeEqual(o.secret_hash, secretHash)) {
      log.warn(`federation: refused a registration as ${token.officeId}: ${o?.secret_hash ? 'wrong or superseded secret' : 'unknown office'}`)
      throw new MusterError('federation-refused', 'Registration refused.')
    }
    if (o.revoked_at !== null) throw new MusterError('federation-token-revoked', `The token of office '${token.officeId}' was revoked on this controller.`)
    return { fingerprint: tokenFingerprint(token.officeId, sha256Hex(token.secret)), secretHash }
  }

  private async seen(body: OfficeRegisterBody, secretHash: string, projectsJson: string | null, now: number): Promise<void> {
    await store.recordOfficeSeen(this.db, {
      officeId: body.officeId,
      secretHash,
      advertiseUrl: body.advertiseUrl.replace(/\/+$/, ''),
      version: body.version ?? null,
      heartbeatSeconds: body.heartbeatSeconds ?? DEFAULT_HEARTBEAT_SECONDS,
      projectsJson,
      now,
    })
  }

  /** Registration: the answer is signed over the office's id, its token fingerprint and its fresh nonce. */
  async register(body: OfficeRegisterBody) {
    const { fingerprint, secretHash } = await this.authenticateOffice(body)
    const at = this.ctx.now()
    await this.seen(body, secretHash, null, at)
    const proof = signProof(DOMAINS.register, await this.key(), { officeId: body.officeId, tokenFingerprint: fingerprint, nonce: body.nonce, at })
    return { officeId: body.officeId, at, proof }
  }

  /** A heartbeat: records reports, and signs the acknowledgement so only the real controller can stop a re-send. */
  async heartbeat(body: OfficeHeartbeatBody) {
    const { fingerprint, secretHash } = await this.authenticateOffice(body)
    const at = this.ctx.now()
    await this.seen(body, secretHash, JSON.stringify(body.projects), at)
    for (const r of body.breakGlass) {
      await store.insertBreakGlassReport(this.db, { officeId: body.officeId, reportId: r.id, account: r.account, at: r.at, tokenFingerprint: r.tokenFingerprint, now: at })
      log.warn(`federation: office ${body.officeId} reports a break-glass${r.account ? ` for ${r.account}` : ''} at ${iso(r.at)}`)
    }
    const acknowledged = body.breakGlass.map((r) => r.id)
    const proof = signProof(DOMAINS.heartbeat, await this.key(), { officeId: body.officeId, tokenFingerprint: fingerprint, nonce: body.nonce, at, acknowledged })
    return { officeId: body.officeId, at, acknowledged, proof }
  }

  /** For signed calls to an office (see calls.ts). */
  async callTarget(officeId: string): Promise<{ url: string; fingerprint: string; key: SigningKey }> {
    const o = await this.activeOffice(officeId)
    if (!o.advertise_url) throw new MusterError('conflict', `Office '${officeId}' has not registered yet, so its address is unknown.`)
    return { url: o.advertise_url, fingerprint: o.fingerprint, key: await this.key() }
  }
}

function status(o: store.OfficeRow): 'active' | 'revoked' {
  return o.revoked_at === null ? 'active' : 'revoked'
}
