// What an office does for callers: redeems a vouch into an ordinary session,
// acts on signed controller calls (placing projects), and shows its own
// records. Membership is read from disk each time, so these answer the same
// whether or not the Platform was started in office mode.
import { MusterError } from '../errors.ts'
import { log } from '../log.ts'
import { getAccount, insertAccount } from '../store/accounts.ts'
import { isRole, lowerRole, type Role } from '../wire/permissions.ts'
import { acceptCall } from './calls.ts'
import { readMembership } from './membership.ts'
import { hasIdentityWrite, insertIdentityWrite, listIdentityWrites, listPlacedProjects, membershipEnded, spendNonce, upsertPlacedProject } from './office-store.ts'
import { PlacedProjectSpec } from './placed-projects.ts'
import type { Federation } from './service.ts'
import { checkVouch } from './vouch.ts'
import type { ControllerCall, OfficeProjectStatus as PlacedProjectStatus } from '../wire/federation.ts'
import * as v from 'valibot'
import { FieldSeal } from '../context/vault.ts'
import type { OfficeIdentityWrite, OfficePlaced, PlacedProjectsPage } from '../wire/federation.ts'

/** An account a vouch creates is never more than this, whatever the vouch carries. */
export const VOUCHED_ACCOUNT_MAX_ROLE: Role = 'operator'
/** What an older controller's vouch (mfv1, no role) is worth: the least role. */
export const UNROLED_VOUCH_ROLE: Role = 'viewer'

/**
 * Redeeming a vouch (steps 1–5 are checkVouch, offline; a membership the controller ended redeems none):
 *   6. spend its nonce, exactly once                  → vouch-already-redeemed
 *   7. link the identity to an existing account (its role stays this office's),
 *      or create one with no usable password, at most the vouch's role and never
 *      superadmin; either write is logged
 *   8. open a session with the lower of the vouch's role and the account's:
 *      at most 12 hours, bound to this membership (it ends with it), and it
 *      makes nothing that outlives it (no API token, account, join token; docs/federation.md)
 */
export async function redeemVouch(fed: Federation, text: string): Promise<{ sessionId: string; account: string; created: boolean; role: Role }> {
  const now = fed.ctx.now()
  const membership = readMembership(fed.ctx.dataDir)
  const vouch = checkVouch(text, membership, now)
  const db = fed.ctx.store
  const ended = await membershipEnded(db, membership!.fingerprint)
  if (ended) throw new MusterError('federation-token-revoked', `The controller ended this office's membership (${ended}), so no vouch is redeemed under it; join again with a new token, or use \`muster admin break-glass\` on this host.`)
  if (!(await spendNonce(db, vouch.nonce, 'vouch', vouch.expiresAt * 1000, now))) throw new MusterError('vouch-already-redeemed', 'This vouch was already used; each opens one session. Ask the controller for a new one.')
  const vouched = vouch.role ?? UNROLED_VOUCH_ROLE
  let created = false
  if (!(await getAccount(db, vouch.identity))) {
    const role = lowerRole(vouched, VOUCHED_ACCOUNT_MAX_ROLE)
    created = await insertAccount(db, { name: vouch.identity, role, passwordHash: null, origin: 'vouch', now })
    if (created) await insertIdentityWrite(db, { owner: vouch.identity, action: 'created', role, reason: 'vouched by the controller; no local account existed (no usable password)', now })
  }
  const account = (await getAccount(db, vouch.identity))!
  if (!created && !(await hasIdentityWrite(db, account.name))) {
    await insertIdentityWrite(db, { owner: account.name, action: 'linked', role: account.role, reason: "vouched by the controller; the existing account keeps this office's role", now })
  }
  if (account.disabled || !isRole(account.role)) throw new MusterError('forbidden', `Account ${account.name} is disabled on this office.`)
  const role = lowerRole(vouched, account.role)
  log.info(`federation: vouch redeemed for ${account.name} as ${role}${created ? ' (account created)' : ''}`)
  return { sessionId: await fed.auth.openVouchedSession(account.name, role, membership!.fingerprint), account: account.name, created, role }
}

export async function identityWrites(fed: Federation): Promise<{ writes: OfficeIdentityWrite[] }> {
  return {
    writes: (await listIdentityWrites(fed.ctx.store)).map((w) => ({ at: new Date(w.at).toISOString(), owner: w.owner, action: w.action, role: w.role, reason: w.reason })),
  }
}

/** A placed spec carries the project's env: sealed in the store like a project's own (docs/security.md). */
const SPEC_COLUMN = ['office_placed_projects', 'spec_json'] as const

async function storedSpecs(fed: Federation): Promise<PlacedProjectSpec[]> {
  const fields = new FieldSeal(fed.ctx.masterKey)
  return (await listPlacedProjects(fed.ctx.store)).flatMap((r) => {
    const parsed = v.safeParse(PlacedProjectSpec, JSON.parse(fields.open(SPEC_COLUMN[0], r.name, SPEC_COLUMN[1], r.spec_json)))
    return parsed.success ? [parsed.output] : []
  })
}

export async function placedProjectStatuses(fed: Federation): Promise<PlacedProjectStatus[]> {
  return (await storedSpecs(fed)).map((spec) => fed.placedRunner.status(spec))
}

/** A signed call from the controller. One refusal for every failed check; the reason goes to the log. */
export async function handleControllerCall(fed: Federation, call: ControllerCall, rawPayload: unknown): Promise<OfficePlaced> {
  const verdict = await acceptCall(fed.ctx.store, readMembership(fed.ctx.dataDir), call, rawPayload, fed.ctx.now())
  if ('refused' in verdict) {
    log.warn(`federation: refused a controller call (${verdict.refused})`)
    throw new MusterError('federation-refused', 'Controller call refused.')
  }
  const spec = call.payload
  const runner = fed.placedRunner
  await runner.apply(spec) // first: a refusal (a local project of that name) must leave nothing stored
  await upsertPlacedProject(fed.ctx.store, spec.name, new FieldSeal(fed.ctx.masterKey).seal(SPEC_COLUMN[0], spec.name, SPEC_COLUMN[1], JSON.stringify(spec)), fed.ctx.now())
  log.info(`federation: the controller placed project ${spec.name} (${spec.replicas} replicas)`)
  return { officeId: call.officeId, project: runner.status(spec) }
}

export async function placedProjects(fed: Federation): Promise<PlacedProjectsPage> {
  const runner = fed.placedRunner
  const rows = await listPlacedProjects(fed.ctx.store)
  return {
    // Environment values can be secrets: the listing names the variables only.
    projects: (await storedSpecs(fed)).map(({ env, ...spec }) => ({
      ...spec,
      envKeys: Object.keys(env ?? {}),
      placedAt: new Date(rows.find((r) => r.name === spec.name)!.placed_at).toISOString(),
      status: runner.status({ ...spec, env }),
    })),
  }
}
