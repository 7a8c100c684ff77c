// Host-side acts on an office, run with the Platform stopped: break-glass
// (re-open the local door, optionally with a fresh password) and detach (leave
// the controller for good). Filesystem access is the credential, so these are
// commands on the host and never routes.
import { unlinkSync } from 'node:fs'
import { randomId, randomSecret } from '../crypto/tokens.ts'
import { DataDir } from '../datadir.ts'
import { MusterError } from '../errors.ts'
import { auditedHostAct, hostSource, openHostStore, type HostStore } from '../context/host-store.ts'
import { HOST } from '../audit/audit.ts'
import { serveLockHolder } from '../serve-lock.ts'
import { getAccount } from '../store/accounts.ts'
import { localAuthority, OFFICE_TOKEN_FILE, readMembership } from './membership.ts'
import { insertBreakGlass, insertDetach } from './office-store.ts'
import { insertPasswordBreakGlass } from '../store/sso.ts'

function openStopped(root: string, act: string): Promise<HostStore> {
  const pid = serveLockHolder(new DataDir(root))
  if (pid !== null) throw new MusterError('already-running', `muster serve (pid ${pid}) is running on ${root}; stop it first, then run \`muster admin ${act}\` again.`, { pid })
  return openHostStore(root)
}

export interface BreakGlassResult {
  localLoginAllowed: true
  joined: boolean
  officeId: string | null
  /** False when the Platform is not joined: its door was never closed, so there is no act to record. */
  recorded: boolean
  account?: string
  password?: string
}

/**
 * Break-glass:
 *   1. the Platform is stopped (serve.lock free)
 *   2. a named account is one of this office's own: it exists and was not created by a vouch
 *   3. while joined, the act is recorded under the current token fingerprint: it holds the
 *      door open for this membership only, and is reported to the controller later
 *   4. with an account, a new random password, returned once
 * It does not detach: the controller may still place projects and vouch here.
 */
export async function breakGlass(root: string, account?: string, now = Date.now()): Promise<BreakGlassResult> {
  const host = await openStopped(root, 'break-glass')
  try {
    const row = account === undefined ? undefined : await getAccount(host.db, account)
    const refusal =
      row === null ? new MusterError('not-found', `No account named ${account} on this Platform.`)
      : row?.origin === 'vouch' ? new MusterError('conflict', `${account} exists only because the controller vouched for it, so it has no password to restore; name one of this office's own accounts (e.g. superadmin).`)
      : row?.origin === 'sso' ? new MusterError('conflict', `${account} signs in with the identity provider (kind sso), so muster gives it no password; name a local account (e.g. superadmin).`)
      : null
    if (refusal) {
      await host.audit.record(HOST(), { source: hostSource(), action: 'federation.break-glass', target: account ?? null, outcome: 'refused', detail: refusal.code })
      throw refusal
    }
    const m = readMembership(host.dataDir)
    const target = [m?.token.officeId, account].filter(Boolean).join(' ') || null
    return await auditedHostAct(host, HOST(), 'federation.break-glass', target, async () => {
      if (m) await insertBreakGlass(host.db, { id: randomId(16), officeId: m.token.officeId, account: account ?? null, at: now, tokenFingerprint: m.fingerprint })
      // Standalone: under serve --oidc-only this opens password login (the account's, or every local one's) for 12 hours.
      else await insertPasswordBreakGlass(host.db, randomId(16), account ?? null, now)
      const result: BreakGlassResult = { localLoginAllowed: true, joined: Boolean(m), officeId: m?.token.officeId ?? null, recorded: Boolean(m) }
      if (account !== undefined) {
        const password = randomSecret()
        // Also ends the account's sessions and revokes the tokens its logins made (docs/security.md).
        await host.auth.setPassword(account, password)
        Object.assign(result, { account, password })
      }
      return result
    }, (r) => (r.account ? 'password rotated' : null))
  } finally {
    await host.close()
  }
}

/**
 * The local door for `muster admin api-token` (docs/security.md), which works while serve runs:
 *   1. not joined: nothing to guard, nothing to record
 *   2. joined with the door closed, without --break-glass: refused ("the local door is closed")
 *   3. joined with --break-glass: a break-glass is recorded for the account the token acts
 *      for, under the current token fingerprint; it opens the door like `admin break-glass`
 *      and rides along on the office's next heartbeats until the controller acknowledges it
 */
export async function apiTokenDoor(host: HostStore, account: string | null, breakGlass: boolean, now = Date.now()): Promise<{ recorded: boolean; officeId: string | null }> {
  const la = await localAuthority(host.dataDir, host.db)
  const m = readMembership(host.dataDir)
  if (!la.joined || !m) return { recorded: false, officeId: null }
  if (!breakGlass) {
    if (la.localLoginAllowed) return { recorded: false, officeId: la.officeId }
    throw new MusterError(
      'local-login-disabled',
      `Refused: the local door is closed. This Platform is office '${la.officeId}' of a controller, and while it is joined no token is minted from the host in silence. ` +
        'Give --break-glass to mint one anyway: it is recorded and reported to the controller, and it opens local login as `muster admin break-glass` does.',
    )
  }
  await insertBreakGlass(host.db, { id: randomId(16), officeId: m.token.officeId, account, at: now, tokenFingerprint: m.fingerprint })
  return { recorded: true, officeId: m.token.officeId }
}

/**
 * Detach: with the Platform stopped, record the act locally (never reported:
 * that would need the credential being given up) and remove the join token.
 * Projects, data and accounts stay; the local door opens because nothing
 * closes it any more.
 */
export async function detach(root: string, now = Date.now()): Promise<{ detached: true; officeId: string; localLoginAllowed: true }> {
  const host = await openStopped(root, 'detach')
  try {
    const m = readMembership(host.dataDir)
    if (!m) throw new MusterError('not-configured', `${root} is not joined to a controller (no ${OFFICE_TOKEN_FILE}); there is nothing to detach.`)
    return await auditedHostAct(host, HOST(), 'federation.detach', m.token.officeId, async () => {
      await insertDetach(host.db, m.token.officeId, m.fingerprint, now)
      unlinkSync(host.dataDir.path(OFFICE_TOKEN_FILE))
      return { detached: true as const, officeId: m.token.officeId, localLoginAllowed: true as const }
    })
  } finally {
    await host.close()
  }
}
