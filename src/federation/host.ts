// Host-side acts on an office, run with the Platform stopped: break-glass
// (re-open the local door, optionally with a fresh password) and detach (leave
// the controller for good). Filesystem access is the credential, so these are
// commands on the host and never routes.
import { unlinkSync } from 'node:fs'
import { randomId, randomSecret } from '../crypto/tokens.ts'
import { DataDir } from '../datadir.ts'
import { MusterError } from '../errors.ts'
import { openHostStore, type HostStore } from '../host-store.ts'
import { serveLockHolder } from '../serve-lock.ts'
import { getAccount } from '../store/accounts.ts'
import { OFFICE_TOKEN_FILE, readMembership } from './membership.ts'
import { insertBreakGlass, insertDetach } from './office-store.ts'

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
    if (account !== undefined) {
      const row = await getAccount(host.db, account)
      if (!row) throw new MusterError('not-found', `No account named ${account} on this Platform.`)
      if (row.origin === 'vouch') {
        throw new MusterError('conflict', `${account} exists only because the controller vouched for it, so it has no password to restore; name one of this office's own accounts (e.g. superadmin).`)
      }
    }
    const m = readMembership(host.dataDir)
    if (m) await insertBreakGlass(host.db, { id: randomId(16), officeId: m.token.officeId, account: account ?? null, at: now, tokenFingerprint: m.fingerprint })
    const result: BreakGlassResult = { localLoginAllowed: true, joined: Boolean(m), officeId: m?.token.officeId ?? null, recorded: Boolean(m) }
    if (account !== undefined) {
      const password = randomSecret()
      await host.auth.setPassword(account, password)
      Object.assign(result, { account, password })
    }
    return result
  } finally {
    await host.close()
  }
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
    await insertDetach(host.db, m.token.officeId, m.fingerprint, now)
    unlinkSync(host.dataDir.path(OFFICE_TOKEN_FILE))
    return { detached: true, officeId: m.token.officeId, localLoginAllowed: true }
  } finally {
    await host.close()
  }
}
