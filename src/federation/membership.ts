// Whether this Platform is an office, read from disk: "joined" means
// platform/office-join-token exists, so starting in another mode never reopens
// the local door. Also the first-start configuration from the environment and
// the local-door refusal every password login gets while joined.
import type { LocalDoor } from '../auth/auth.ts'
import type { DataDir } from '../datadir.ts'
import { MusterError } from '../errors.ts'
import type { Db } from '../store/db.ts'
import { fingerprintOfToken, parseOfficeToken, type OfficeToken } from '../wire/federation-formats.ts'
import { breakGlassInForce, getMembership, lastDetach, membershipEnded, saveMembership, type BreakGlassRow } from './office-store.ts'
import type { LocalAuthority } from '../wire/federation.ts'
import { tunable } from '../tunables.ts'

export const OFFICE_TOKEN_FILE = 'platform/office-join-token'

export interface Membership {
  token: OfficeToken
  fingerprint: string
}

/** The membership on disk, or undefined when this Platform is not joined. A damaged file is refused, never ignored. */
export function readMembership(dataDir: DataDir): Membership | undefined {
  const text = dataDir.readSecretText(OFFICE_TOKEN_FILE)
  if (text === undefined) return undefined
  const token = parseOfficeToken(text, `token in ${dataDir.path(OFFICE_TOKEN_FILE)}`)
  return { token, fingerprint: fingerprintOfToken(token) }
}

export interface OfficeConfig extends Membership {
  /** Undefined when neither the environment nor the store names one: joined, but nothing to heartbeat to. */
  controllerUrl?: string
  advertiseUrl?: string
  /** The id this office calls itself; the controller refuses it when it differs from the token's. */
  officeId: string
}

function checkUrl(name: string, value: string): string {
  let u: URL
  try {
    u = new URL(value)
  } catch {
    throw new MusterError('not-configured', `${name} is not a URL: "${value}".`)
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new MusterError('not-configured', `${name} must be an http(s) URL, got "${value}".`)
  return value.replace(/\/+$/, '')
}

/**
 * Office mode at start. MUSTER_JOIN_TOKEN is needed once: it is written to
 * platform/office-join-token (0600) and read from there afterwards. When the
 * two disagree the Platform refuses to start and names both offices rather
 * than overwrite either.
 */
export async function resolveOfficeConfig(dataDir: DataDir, db: Db, env: Record<string, string | undefined>, now: number): Promise<OfficeConfig | undefined> {
  const fromEnv = tunable('MUSTER_JOIN_TOKEN', env)?.trim() || undefined
  const envToken = fromEnv ? parseOfficeToken(fromEnv, 'MUSTER_JOIN_TOKEN') : undefined
  let membership = readMembership(dataDir)
  if (envToken && membership && fingerprintOfToken(envToken) !== membership.fingerprint) {
    const same = envToken.officeId === membership.token.officeId
    throw new MusterError(
      'office-mismatch',
      `MUSTER_JOIN_TOKEN is a token for office '${envToken.officeId}', but ${dataDir.path(OFFICE_TOKEN_FILE)} holds ${same ? 'a different token for' : 'the token of'} office '${membership.token.officeId}'; refusing to start rather than overwrite either. ` +
        'Unset MUSTER_JOIN_TOKEN to keep the stored membership, or stop and run `muster admin detach` first to join with the new token.',
      { configured: envToken.officeId, stored: membership.token.officeId },
    )
  }
  if (!envToken && !membership) return undefined
  const controllerEnv = tunable('MUSTER_CONTROLLER_URL', env)?.trim() || undefined
  const advertiseEnv = tunable('MUSTER_ADVERTISE_URL', env)?.trim() || undefined
  if (envToken && !membership) {
    if (!controllerEnv || !advertiseEnv) throw new MusterError('not-configured', 'Joining as an office needs MUSTER_CONTROLLER_URL and MUSTER_ADVERTISE_URL as well as MUSTER_JOIN_TOKEN.')
    dataDir.writeSecret(OFFICE_TOKEN_FILE, `${fromEnv}\n`)
    membership = { token: envToken, fingerprint: fingerprintOfToken(envToken) }
  }
  const stored = await getMembership(db)
  const controllerUrl = controllerEnv ? checkUrl('MUSTER_CONTROLLER_URL', controllerEnv) : (stored?.controller_url ?? undefined)
  const advertiseUrl = advertiseEnv ? checkUrl('MUSTER_ADVERTISE_URL', advertiseEnv) : (stored?.advertise_url ?? undefined)
  if (controllerUrl && advertiseUrl && (controllerUrl !== stored?.controller_url || advertiseUrl !== stored?.advertise_url)) await saveMembership(db, controllerUrl, advertiseUrl, now)
  const m = membership!
  return { ...m, controllerUrl, advertiseUrl, officeId: tunable('MUSTER_OFFICE_ID', env)?.trim() || m.token.officeId }
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())

export function describeBreakGlass(r: BreakGlassRow) {
  return { id: r.id, account: r.account, at: new Date(r.at).toISOString(), reportedAt: iso(r.reported_at) }
}

/** The one answer to "may a local password open this door?", for the login gate, the route and the host commands. */
export async function localAuthority(dataDir: DataDir, db: Db): Promise<LocalAuthority> {
  const m = readMembership(dataDir)
  const detached = await lastDetach(db)
  const inForce = m ? await breakGlassInForce(db, m.fingerprint) : null
  return {
    joined: Boolean(m),
    officeId: m?.token.officeId ?? null,
    localLoginAllowed: !m || Boolean(inForce),
    breakGlass: inForce ? describeBreakGlass(inForce) : null,
    detachedAt: iso(detached?.at ?? null),
  }
}

/**
 * The local door for every local credential (item 5): closed while
 * joined with no break-glass in force under the current membership. Read from
 * disk and the store on each call, like the login gate.
 */
export async function localDoor(dataDir: DataDir, db: Db): Promise<LocalDoor> {
  const m = readMembership(dataDir)
  if (!m) return { membership: null, closed: null }
  const inForce = await breakGlassInForce(db, m.fingerprint)
  return { membership: m.fingerprint, closed: inForce ? null : localDoorRefusal(m.token.officeId), ended: await membershipEnded(db, m.fingerprint) }
}

/** The same words for every identifier and password: it is decided before the credential is read. */
export function localDoorRefusal(officeId: string): MusterError {
  return new MusterError(
    'local-login-disabled',
    `Local password login is off on this Platform: it has joined a controller as office '${officeId}', and while it is joined the way in is through the controller. ` +
      `Ask the controller for a vouch (\`muster federation vouch ${officeId}\`, or Open office in its dashboard). ` +
      'To turn local login back on from this host without the controller, stop this Platform and run `muster admin break-glass`; ' +
      '`muster admin detach` leaves the controller for good and keeps every project and its data. No account was disabled or deleted.',
  )
}
