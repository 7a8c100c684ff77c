// The node's standing with its Platform (docs/operations.md): asked over the same
// pinned connection the Agent uses, with the node credential and the SHA-256
// of the agent certificate (src/fabric/node-state.ts answers). doctor fails on
// a dead credential, the Agent stops for good on one, and `worker join`
// enrolls again over one; each names the way back.
import type { CredentialState } from '../wire/nodes.ts'
import { certFingerprint } from '../crypto/x509.ts'
import type { DataDir } from '../datadir.ts'
import { MusterError } from '../errors.ts'
import { log } from '../log.ts'
import { apiClient } from './connect.ts'
import { readCredential, WORKER, type AgentConfig } from './files.ts'

/** `unknown`: the Platform did not issue this credential (another Platform's, or its data was replaced). */
export type Standing = CredentialState | 'unknown'

export interface StandingAnswer {
  standing: Standing
  /** The node's state on the Platform (`nodes list`), for a valid credential. */
  state?: string
  reason?: string
}

/**
 * Asks the Platform at `connection` about `credential`. Throws (a MusterError)
 * when it cannot tell: unreachable, 5xx, 429, or a Platform too old to know
 * the question (404).
 */
export async function askStanding(connection: Pick<AgentConfig, 'platformUrl' | 'enrollmentUrl' | 'pin'>, credential: string, certPem: string): Promise<StandingAnswer> {
  const certSha256 = certFingerprint(certPem).slice('sha256:'.length)
  try {
    const r = await apiClient(connection, credential).nodes.self(certSha256)
    return { standing: r.credential, ...(r.state ? { state: r.state } : {}), ...(r.reason ? { reason: r.reason } : {}) }
  } catch (e) {
    if (e instanceof MusterError && e.code === 'unauthorized') return { standing: 'unknown' }
    throw e
  }
}

/** askStanding with what this data directory holds. */
export function askStandingOf(dataDir: DataDir, connection: Pick<AgentConfig, 'platformUrl' | 'enrollmentUrl' | 'pin'>): Promise<StandingAnswer> {
  const cert = dataDir.readSecretText(WORKER.cert)
  if (!cert) throw new MusterError('not-configured', `${dataDir.path(WORKER.cert)} is missing: join again after removing ${dataDir.path(WORKER.dir)}.`)
  return askStanding(connection, readCredential(dataDir), cert)
}

const WHY: Record<Exclude<Standing, 'valid'>, string> = {
  revoked: 'an operator revoked this node',
  removed: 'an operator removed this node',
  rebound: 'an operator rebound this name to a new enrollment',
  superseded: 'the credential was rotated and this node missed the renewal',
  unknown: 'the Platform does not recognise this credential (it was issued by another Platform, or the Platform was set up again)',
}

/** The `worker join` line that joins this directory again, with the pin it joined with. */
export function joinAgainCommand(config: Pick<AgentConfig, 'nodeId' | 'enrollmentUrl' | 'pin'>, dataDirRoot: string): string {
  const pin = 'fingerprint' in config.pin ? ` --platform-fingerprint ${config.pin.fingerprint}` : 'caPem' in config.pin ? ' --platform-ca-file CA-FILE' : ''
  return `muster worker join --platform-url ${config.enrollmentUrl} --node-id ${config.nodeId}${pin} --data-dir ${dataDirRoot}`
}

/** Why the credential is dead and the way back. */
export function wayBack(standing: Exclude<Standing, 'valid'>, config: Pick<AgentConfig, 'nodeId' | 'enrollmentUrl' | 'pin'>, dataDirRoot: string): string {
  const token = standing === 'removed' || standing === 'unknown' ? `\`muster nodes enroll-token ${config.nodeId}\`` : `\`muster nodes rebind ${config.nodeId}\``
  return `${WHY[standing]}. The way back: on the Platform, ${token} prints a token; on this machine, \`${joinAgainCommand(config, dataDirRoot)}\` with it, then start the Agent again.`
}

export const isDead = (s: Standing): s is Exclude<Standing, 'valid'> => s !== 'valid'

/**
 * After a refusal: what the Platform holds about this credential, when it is
 * dead; undefined while that cannot be told (unreachable, 5xx, a Platform
 * too old to answer), so the Agent keeps trying.
 */
export async function deadStanding(config: AgentConfig, credential: string, certPem: string | undefined, code: 'node-revoked' | 'unauthorized'): Promise<Exclude<Standing, 'valid'> | undefined> {
  if (!certPem) return undefined
  try {
    const r = await askStanding(config, credential, certPem)
    return isDead(r.standing) ? r.standing : undefined
  } catch (e) {
    log.debug(`the Platform cannot say whether the credential is dead (${(e as Error).message}); ${code === 'node-revoked' ? 'it said revoked' : 'retrying'}`)
    // A revocation the heartbeat answer named is for good even when the question cannot be asked.
    return code === 'node-revoked' ? 'revoked' : undefined
  }
}
