// The Platform's side of cloud identity joins (docs/cloud.md): a machine the
// Platform created proves who it is with what its cloud signs, is matched to
// the one record made when it was created, and that record is consumed with
// the node's registration. Per provider:
//   aws   the rsa2048 PKCS#7 against the record's region's certificate; account,
//         instance id (or the create's client token), pendingTime in the creation
//         window; DescribeInstances shows it pending or running in this account
//   gcp   the RS256 identity token, audience this Platform's enrollment URL;
//         project, zone, instance name and id, creation time in the window
//   azure the attested data, its signer under metadata.azure.com chained to
//         Microsoft's roots; a nonce this Platform gave this name, unused and
//         fresh; subscription and vmId
import { randomBytes } from 'node:crypto'
import { MusterError } from '../../errors.ts'
import type { IdentityChallenge, IdentityJoins, IdentityMatch, IdentityProof } from '../../fabric/identity-join.ts'
import { getProvision } from '../../store/cloud-provisions.ts'
import { consumeExpected, getChallenge, insertChallenge, latestExpected, openExpected, takeChallenge, type ExpectedRow } from '../../store/cloud-expected.ts'
import type { Db } from '../../store/db.ts'
import type { ProviderName } from '../../wire/cloud.ts'
import type { Cloud } from '../service.ts'
import { tunable, tunableNumber } from '../../tunables.ts'
import { verifyAwsDocument } from './aws.ts'
import { expectAgain } from './expected.ts'
import { verifyAzureDocument } from './azure.ts'
import { GOOGLE_CERTS_URL, GoogleKeys, verifyGcpToken } from './gcp.ts'
import { refuse } from './refuse.ts'
import type { IdentityRoots } from './roots.ts'

/** Clocks differ: a launch may be stamped a little before the record that expected it. */
const CLOCK_SKEW_MS = 5 * 60_000
/** How long an Azure challenge is good for: fetching the attested data takes a second. */
const challengeTtlMs = () => tunableNumber('MUSTER_CLOUD_CHALLENGE_TTL_MS')

const iso = (t: number) => new Date(t).toISOString()
const NONCE_CHARS = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'

export class CloudIdentity implements IdentityJoins {
  readonly google: GoogleKeys

  constructor(
    private readonly cloud: Cloud,
    readonly roots: IdentityRoots,
  ) {
    this.google = new GoogleKeys(roots.gcp, tunable('MUSTER_CLOUD_GCP_CERTS_URL')?.trim() || GOOGLE_CERTS_URL, () => this.cloud.now())
  }

  private get db() {
    return this.cloud.db
  }

  async match(nodeId: string, proof: IdentityProof): Promise<IdentityMatch> {
    const now = this.cloud.now()
    const open = await openExpected(this.db, nodeId, now)
    const rec = open ?? (await latestExpected(this.db, nodeId))
    if (!rec) return refuse(`no machine was created as ${nodeId} (the Platform expects none)`)
    if (rec.provider !== proof.provider) return refuse(`${nodeId} was created at ${rec.provider}, the document is from ${proof.provider}`)
    const consumed = open === null && rec.consumed_at !== null
    if (!open && !consumed) return refuse(`the machine created as ${nodeId} is no longer expected (${rec.revoked_at !== null ? 'released, failed or replaced' : `its window closed at ${iso(rec.expires_at)}`})`)
    const v = await this.verifyDocument(rec, proof, now, consumed)
    return { expectedId: rec.id, consumedBy: rec.consumed_by, consumedAt: rec.consumed_at, machine: v.machine, ...(v.nonce ? { nonce: v.nonce } : {}) }
  }

  async consume(db: Db, m: IdentityMatch, nodeId: string, certSha256: string, now: number): Promise<boolean> {
    if (m.nonce && !(await takeChallenge(db, m.nonce, nodeId, now))) return false
    return await consumeExpected(db, m.expectedId, certSha256, now)
  }

  async tokenMachineProblem(provisionId: string, machineId: string | undefined): Promise<string | null> {
    const row = await getProvision(this.db, provisionId)
    if (!row) return 'the token was minted for a provision that no longer exists'
    if (!row.machine_id) return `the server of ${row.name} is not known yet (its create has not answered)`
    if (!machineId) return `the token is bound to ${row.provider} server ${row.machine_id}; the join named no server`
    if (machineId !== row.machine_id) return `the token is bound to ${row.provider} server ${row.machine_id}, presented from server ${machineId} (a copied token)`
    return null
  }

  async challenge(nodeId: string): Promise<IdentityChallenge> {
    const now = this.cloud.now()
    const bytes = randomBytes(32)
    const nonce = Array.from(bytes, (b) => NONCE_CHARS[b % NONCE_CHARS.length]).join('')
    await insertChallenge(this.db, nonce, nodeId, now, now + challengeTtlMs())
    return { nonce, expiresAt: iso(now + challengeTtlMs()) }
  }

  rebound(db: Db, nodeId: string, now: number, until: number): Promise<boolean> {
    return expectAgain(db, nodeId, now, until)
  }

  private async verifyDocument(rec: ExpectedRow, proof: IdentityProof, now: number, consumed: boolean): Promise<{ machine: string; nonce?: string }> {
    const inWindow = (t: number) => t >= rec.window_start - CLOCK_SKEW_MS && t <= rec.window_end
    const window = `${iso(rec.window_start)} to ${iso(rec.window_end)}`
    switch (rec.provider) {
      case 'aws': {
        const d = verifyAwsDocument(proof.document, rec.region, this.roots.aws)
        const what = `instance ${d.instanceId}`
        if (rec.account && d.accountId !== rec.account) refuse(`${what} is in account ${d.accountId}, not ${rec.account}`)
        if (rec.attested_id && d.instanceId !== rec.attested_id) refuse(`${what} is not the machine created as ${rec.node_name} (${rec.attested_id})`)
        if (!inWindow(d.pendingTime)) refuse(`${what} started at ${iso(d.pendingTime)}, outside the creation window of ${rec.node_name} (${window})`)
        if (consumed) return { machine: what }
        // The Platform's own view, with its credentials: the instance is in its account, launched by this provision, and running.
        const m = await this.ask('aws', (p) => p.getMachine(`${rec.region}/${d.instanceId}`))
        if (!m) return refuse(`${what} is not in this Platform's account (DescribeInstances does not show it)`)
        if (!rec.attested_id && m.requestId !== rec.request_id) refuse(`${what} was not launched by the provision of ${rec.node_name} (its client token differs)`)
        if (m.status !== 'pending' && m.status !== 'running') refuse(`${what} is ${m.providerStatus}`)
        return { machine: what }
      }
      case 'gcp': {
        const audience = this.cloud.deps.fabric.enrollment?.url
        if (!audience) return refuse('the enrollment listener is not open')
        const t = await verifyGcpToken(proof.document, this.google, audience, now)
        const what = `instance ${t.instanceId} (${t.instanceName})`
        if (rec.account && t.projectId !== rec.account) refuse(`${what} is in project ${t.projectId}, not ${rec.account}`)
        if (t.zone !== rec.region && !t.zone.endsWith(`/zones/${rec.region}`)) refuse(`${what} is in zone ${t.zone}, not ${rec.region}`)
        if (t.instanceName !== rec.machine_name) refuse(`${what} is not the machine created as ${rec.node_name} (${rec.machine_name})`)
        if (rec.attested_id && t.instanceId !== rec.attested_id) refuse(`${what} is not the machine created as ${rec.node_name} (${rec.attested_id})`)
        if (!inWindow(t.createdAt)) refuse(`${what} was created at ${iso(t.createdAt)}, outside the creation window of ${rec.node_name} (${window})`)
        return { machine: what }
      }
      case 'azure': {
        const d = await verifyAzureDocument(proof.document, this.roots.azure, now)
        const what = `VM ${d.vmId}`
        if (rec.account && d.subscriptionId !== rec.account) refuse(`${what} is in subscription ${d.subscriptionId}, not ${rec.account}`)
        const vmId = rec.attested_id ?? (await this.ask('azure', (p) => p.findMachine({ requestId: rec.request_id, name: rec.machine_name, region: rec.region })))?.attestedId ?? null
        if (d.vmId !== vmId) refuse(`${what} is not the machine created as ${rec.node_name}${vmId ? ` (${vmId})` : ''}`)
        if (consumed) return { machine: what }
        const c = await getChallenge(this.db, d.nonce)
        if (!c || c.node_name !== rec.node_name) return refuse(`the Azure document's nonce is not a challenge this Platform gave ${rec.node_name}`)
        if (c.used_at !== null) refuse('the Azure document\'s nonce was used already (a replayed document)')
        if (c.expires_at <= now) refuse(`the Azure document's nonce expired at ${iso(c.expires_at)} (a stale document)`)
        return { machine: what, nonce: d.nonce }
      }
      default:
        return refuse(`${rec.provider} signs no identity`)
    }
  }

  /** A provider call on the join's behalf; its failure is a refusal with the provider's words. */
  private async ask<T>(name: ProviderName, call: (p: Awaited<ReturnType<Cloud['provider']>>) => Promise<T>): Promise<T> {
    try {
      return await call(await this.cloud.provider(name))
    } catch (e) {
      if (e instanceof MusterError) return refuse(`${name} could not be asked about the machine: ${e.message}`)
      throw e
    }
  }
}
