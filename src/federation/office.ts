// What an office does for callers: redeems a vouch into an ordinary session,
// acts on signed controller calls (placing projects), and shows its own
// records. Membership is read from disk each time, so these answer the same
// whether or not the Platform was started in office mode.
import { MusterError } from '../errors.ts'
import { log } from '../log.ts'
import type { Platform } from '../platform.ts'
import { getAccount, insertAccount } from '../store/accounts.ts'
import { acceptCall } from './calls.ts'
import { readMembership } from './membership.ts'
import { hasIdentityWrite, insertIdentityWrite, listIdentityWrites, listPlacedProjects, spendNonce, upsertPlacedProject } from './office-store.ts'
import { PlacedProjectSpec, placedProjectRunner, type PlacedProjectStatus } from './placement.ts'
import { checkVouch } from './vouch.ts'
import type { ControllerCall } from './wire.ts'
import * as v from 'valibot'

/** An identity the controller vouches for but this office never had gets the least role; its own accounts keep theirs. */
export const VOUCHED_ACCOUNT_ROLE = 'viewer'

/**
 * Redeeming a vouch (steps 1–5 are checkVouch, offline):
 *   6. spend its nonce, exactly once                  → vouch-already-redeemed
 *   7. link the identity to an existing account (its role stays this office's),
 *      or create one with no usable password; either write is logged
 *   8. open an ordinary session
 */
export function redeemVouch(platform: Platform, text: string): { sessionId: string; account: string; created: boolean } {
  const now = platform.now()
  const vouch = checkVouch(text, readMembership(platform.dataDir), now)
  if (!spendNonce(platform.db, vouch.nonce, 'vouch', vouch.expiresAt * 1000, now)) throw new MusterError('vouch-already-redeemed', 'This vouch was already used; each opens one session. Ask the controller for a new one.')
  const db = platform.db
  let created = false
  if (!getAccount(db, vouch.identity)) {
    created = insertAccount(db, { name: vouch.identity, role: VOUCHED_ACCOUNT_ROLE, passwordHash: null, origin: 'vouch', now })
    if (created) insertIdentityWrite(db, { owner: vouch.identity, action: 'created', role: VOUCHED_ACCOUNT_ROLE, reason: 'vouched by the controller; no local account existed (no usable password)', now })
  }
  const account = getAccount(db, vouch.identity)!
  if (!created && !hasIdentityWrite(db, account.name)) {
    insertIdentityWrite(db, { owner: account.name, action: 'linked', role: account.role, reason: "vouched by the controller; the existing account keeps this office's role", now })
  }
  if (account.disabled) throw new MusterError('forbidden', `Account ${account.name} is disabled on this office.`)
  log.info(`federation: vouch redeemed for ${account.name}${created ? ' (account created)' : ''}`)
  return { sessionId: platform.auth.openSession(account.name), account: account.name, created }
}

export function identityWrites(platform: Platform) {
  return {
    writes: listIdentityWrites(platform.db).map((w) => ({ at: new Date(w.at).toISOString(), owner: w.owner, action: w.action, role: w.role, reason: w.reason })),
  }
}

function storedSpecs(platform: Platform): PlacedProjectSpec[] {
  return listPlacedProjects(platform.db).flatMap((r) => {
    const parsed = v.safeParse(PlacedProjectSpec, JSON.parse(r.spec_json))
    return parsed.success ? [parsed.output] : []
  })
}

export function placedProjectStatuses(platform: Platform): PlacedProjectStatus[] {
  const runner = placedProjectRunner(platform)
  return storedSpecs(platform).map((spec) => runner.status(spec))
}

/** A signed call from the controller. One refusal for every failed check; the reason goes to the log. */
export async function handleControllerCall(platform: Platform, call: ControllerCall, rawPayload: unknown) {
  const verdict = acceptCall(platform.db, readMembership(platform.dataDir), call, rawPayload, platform.now())
  if ('refused' in verdict) {
    log.warn(`federation: refused a controller call (${verdict.refused})`)
    throw new MusterError('federation-refused', 'Controller call refused.')
  }
  const spec = call.payload
  const runner = placedProjectRunner(platform)
  await runner.apply(spec) // first: a refusal (a local project of that name) must leave nothing stored
  upsertPlacedProject(platform.db, spec.name, JSON.stringify(spec), platform.now())
  log.info(`federation: the controller placed project ${spec.name} (${spec.replicas} replicas)`)
  return { officeId: call.officeId, project: runner.status(spec) }
}

export function placedProjects(platform: Platform) {
  const runner = placedProjectRunner(platform)
  const rows = listPlacedProjects(platform.db)
  return {
    // Environment values can be secrets: the listing names the variables only.
    projects: storedSpecs(platform).map(({ env, ...spec }) => ({
      ...spec,
      envKeys: Object.keys(env ?? {}),
      placedAt: new Date(rows.find((r) => r.name === spec.name)!.placed_at).toISOString(),
      status: runner.status({ ...spec, env }),
    })),
  }
}
