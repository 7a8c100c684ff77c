// The enroll pipeline (docs/nodes.md): one linear flow per request. The caller sees
// one refusal for every bad token; the audit log gets the reason.
import * as v from 'valibot'
import { parseCertificate } from '../crypto/x509.ts'
import { enrollProofMessage, identityProofId, verifyProof } from '../crypto/enroll-proof.ts'
import { safeEqual } from '../crypto/tokens.ts'
import { MusterError } from '../errors.ts'
import { invalid, issueField } from '../wire/validate.ts'
import { bindCertificate, insertNodeRow, nodesByNameOrCert, type NodeRow } from '../store/nodes.ts'
import { takeTokenUse } from '../store/join-tokens.ts'
import { enrollReads, writeEnrolledNode } from '../store/enroll-rows.ts'
import { auditVersion } from '../store/enroll-audit.ts'
import { isUniqueViolation } from '../store/sql.ts'
import type { Db } from '../store/db.ts'
import { compareVersions, isVersion, VERSION } from '../version.ts'
import type { Fabric } from './fabric.ts'
import { globMatch } from './glob.ts'
import { labelsToJson } from '../wire/labels.ts'
import { EnrollBody, type EnrollAnswer } from '../wire/nodes.ts'
import { IdentityRefused } from './identity-join.ts'

class TakenMeanwhile extends Error {}
/** A rebind whose certificate another node took meanwhile: the unique key refused it. */
const lostRace = (e: unknown): false => {
  if (isUniqueViolation(e)) return false
  throw e
}

const JOIN_TOKEN = /^mjt_([a-z2-7]{16})\.([A-Za-z0-9_-]{43})$/
/** How long after its first enrollment a node may repeat it (a lost response), even on an expired or used-up token. */
export const REPEAT_WINDOW_MS = 24 * 3600_000
const REFUSED = () => new MusterError('enrollment-refused', 'Enrollment refused.')
/** The Platform's own node: never enrolled. */
const LOCAL_NAME = 'local'

export async function enroll(fabric: Fabric, rawBody: unknown): Promise<EnrollAnswer> {
  // 1. rate-limit: only admitted attempts reach the audit log
  const release = fabric.limits.enroll.admit()
  const audit = (outcome: string, reason: string | null, nodeId?: unknown, version?: unknown) => fabric.audit(outcome, reason, nodeId, version)
  try {
    // 2. parse: body shape, then the certificate must be X.509 with a public key
    const parsed = v.safeParse(EnrollBody, rawBody ?? {})
    const raw = (rawBody ?? {}) as Record<string, unknown>
    if (!parsed.success) {
      await audit('invalid', `invalid ${issueField(parsed.issues[0])}`, raw.nodeId, raw.version)
      throw invalid(parsed.issues[0])
    }
    const body = parsed.output
    if (body.version !== undefined && !isVersion(body.version)) {
      await audit('invalid', 'invalid version', body.nodeId, null)
      throw new MusterError('invalid-request', 'Invalid version: expected X.Y.Z', { field: 'version' })
    }
    let cert: ReturnType<typeof parseCertificate>
    try {
      cert = parseCertificate(body.certPem)
    } catch {
      await audit('invalid', 'certificate does not parse', body.nodeId, body.version)
      throw new MusterError('invalid-request', 'Invalid certPem: not an X.509 certificate with a public key', { field: 'certPem' })
    }
    const certSha256 = cert.fingerprint.slice('sha256:'.length)
    const db = fabric.db
    const now = fabric.now()
    if (body.identity !== undefined || body.token === undefined) return await enrollByIdentity(fabric, body, cert.publicKeyDer, certSha256, now, audit)
    // 3. find the token, 4. verify its secret (constant time); the nodes holding the name or the certificate
    // and the name's tombstone come in the same statement (steps 6 and 8 read them)
    const m = JOIN_TOKEN.exec(body.token)
    const reads = m ? await enrollReads(db, m[1]!, body.nodeId, certSha256) : null
    const token = reads?.token ?? null
    if (!m || !token) {
      await audit('refused', m ? 'unknown token' : 'malformed token', body.nodeId, body.version)
      throw REFUSED()
    }
    if (!safeEqual(token.secret_hash, fabric.digest(m[2]!))) {
      await audit('refused', 'wrong secret', body.nodeId, body.version)
      throw REFUSED()
    }
    // 5. proof of possession of the certificate's key, over this name, token and certificate, made now
    const message = enrollProofMessage({ nodeId: body.nodeId, tokenId: token.id, certSha256, proofTime: body.proofTime as number })
    if (!verifyProof(cert.publicKeyDer, message, body.proof, body.proofTime, now)) return await refuse('no proof of key')
    // 6. check revocation, name binding or pattern, expiry
    if (token.revoked_at !== null) return await refuse('token revoked')
    if (token.kind === 'enrollment' && token.node_id !== body.nodeId) return await refuse('token bound to another name')
    if (token.kind === 'fleet' && token.name_pattern && !globMatch(token.name_pattern, body.nodeId)) return await refuse('name not allowed by the token pattern')
    if (body.nodeId === 'local') return await refuse('reserved name')
    // A name the operator declared enrolls only with an enrollment issued for it (docs/nodes.md).
    if (token.kind !== 'enrollment' && fabric.declared.has(body.nodeId)) return await refuse('declared name needs an enrollment for it')
    const { named: existing, holder } = reads!
    // A repeat of a finished enrollment (same token, name, certificate): see repeatAnswer.
    if (existing && existing.cert_sha256 === certSha256 && existing.token_id === token.id) return await repeatAnswer(fabric, body, existing, certSha256, now, audit)
    if (token.expires_at <= now) return await refuse('token expired')
    if (token.uses >= token.max_uses) return await refuse('token used up')
    if (token.kind === 'fleet' && reads!.tombstoned) return await refuse('name was removed (tombstoned)')
    // A first-boot token of a provider that signs nothing is bound to the server the Platform created.
    if (token.provision_id) {
      const problem = fabric.identity ? await fabric.identity.tokenMachineProblem(token.provision_id, body.machineId) : 'the cloud area is not running'
      if (problem) return await refuse(problem)
    }
    const rebinding = existing !== null && existing.cert_sha256 === null && token.kind === 'enrollment'
    return await register(fabric, body, certSha256, now, audit, { tokenId: token.id, existing, holder, rebinding, take: (t) => takeTokenUse(t, token.id, now), joinToken: true, spent: 'token used up' })

    function refuse(reason: string): Promise<never> {
      return refuseWith(audit, body, reason)
    }
  } finally {
    release()
  }
}

type Audit = (outcome: string, reason: string | null, nodeId?: unknown, version?: unknown) => Promise<void>
type Body = v.InferOutput<typeof EnrollBody>

/** The one refusal on the wire; the reason goes to the audit. */
async function refuseWith(audit: Audit, body: Body, reason: string): Promise<never> {
  await audit('refused', reason, body.nodeId, body.version)
  throw REFUSED()
}

/**
 * A repeat of a finished enrollment (same admission, name, certificate) gets the
 * same answer and costs nothing: a lost response never burns a use. It needs the
 * proof like any enroll, and works for 24 hours after the enrollment (even on an
 * expired or used-up token), never for a revoked node.
 */
async function repeatAnswer(fabric: Fabric, body: Body, existing: NodeRow, certSha256: string, now: number, audit: Audit): Promise<EnrollAnswer> {
  const refuse = (reason: string) => refuseWith(audit, body, reason)
  if (existing.revoked_at !== null) return await refuse('node revoked')
  if (now - existing.enrolled_at > REPEAT_WINDOW_MS) return await refuse('repeat more than 24 hours after the enrollment')
  await audit('enrolled', 'repeat of a finished enrollment', body.nodeId, body.version)
  return await fabric.enrollAnswer(body.nodeId, certSha256, existing.generation)
}

/** How the registration is admitted: what it consumes in its transaction, and what the name may replace. */
interface Admission {
  tokenId: string
  existing: NodeRow | null
  holder: NodeRow | null
  rebinding: boolean
  /** Takes the use (a token's, an expected machine's) in the registration's transaction; false when none is left. */
  take: (t: Db) => Promise<boolean>
  /** The use is the join token `tokenId`'s: a new node takes it in the statement that inserts it. */
  joinToken?: boolean
  /** The audit reason when `take` finds nothing left. */
  spent: string
  note?: string
}

/** Steps 7-12, the same for a token and a cloud identity: version, free name and certificate, one transaction, the credential. */
async function register(fabric: Fabric, body: Body, certSha256: string, now: number, audit: Audit, a: Admission): Promise<EnrollAnswer> {
  const db = fabric.db
  const { existing, holder, rebinding } = a
  {
    // 7. check version: a newer node is told so, without spending the token
    if (body.version && compareVersions(body.version, VERSION) > 0) {
      await audit('worker-newer', `node ${body.version} is newer than Platform ${VERSION}`, body.nodeId, body.version)
      throw new MusterError('worker-newer', `This node runs muster ${body.version}, newer than the Platform's ${VERSION}; update the Platform first.`, {
        nodeVersion: body.version,
        platformVersion: VERSION,
      })
    }
    // 8. the name and the certificate must be free (or the name being rebound)
    if (existing && !rebinding) {
      await audit('node-exists', 'name enrolled with another certificate', body.nodeId, body.version)
      throw new MusterError('node-exists', `A node named ${body.nodeId} is already enrolled with another certificate.`)
    }
    if (holder) {
      await audit('node-exists', 'certificate enrolled under another name', body.nodeId, body.version)
      throw new MusterError('certificate-in-use', 'This certificate is already enrolled under another name.')
    }
    // 9. take one use atomically, 10. register the node and 11. audit, in one transaction
    // (The use is a compare-and-set, so racing enrolls never exceed max uses; a racing
    // insert of the same name or certificate loses on the primary key, and its whole
    // transaction, the use included, rolls back.)
    const fields = { cert_sha256: certSha256, cert_pem: body.certPem, url: body.url ?? null, token_id: a.tokenId, version: body.version ?? null, labels: labelsToJson(body.labels) }
    // The new row comes back from the insert (a rebind reads it again after).
    let inserted: NodeRow | null = null
    const outcome = await db.tx(async (t): Promise<'enrolled' | 'used-up' | 'taken'> => {
      if (a.joinToken && !rebinding && a.note === undefined) {
        // A new node on a join token: the use, the node and its audit entry (one statement on PostgreSQL:
        // src/store/enroll-rows.ts).
        const written = await writeEnrolledNode(t, { ...fields, name: body.nodeId, enrolled_at: now, auditReason: null, auditVersion: auditVersion(body.version) }, now)
        if (written === 'used-up') return 'used-up'
        if (written === 'taken') throw new TakenMeanwhile() // the use (SQLite took it first) is rolled back with the rest
        inserted = written
        return 'enrolled'
      }
      if (!(await a.take(t))) return 'used-up'
      const placed = rebinding ? await bindCertificate(t, body.nodeId, fields, now).catch(lostRace) : (inserted = await insertNodeRow(t, { name: body.nodeId, auth: 'enrolled', enrolled_at: now, ...fields })) !== null
      if (!placed) throw new TakenMeanwhile()
      await fabric.audit('enrolled', [rebinding ? 'rebound to a new certificate' : null, a.note ?? null].filter(Boolean).join('; ') || null, body.nodeId, body.version, t)
      return 'enrolled'
      // Concurrent enrolls share one commit (and the token row's lock) on PostgreSQL too (src/store/sql.ts).
    }, { group: true }).catch((e) => {
      if (e instanceof TakenMeanwhile) return 'taken' as const
      throw e
    })
    if (outcome === 'used-up') return await refuseWith(audit, body, a.spent)
    if (outcome === 'taken') {
      await audit('node-exists', 'name or certificate enrolled meanwhile', body.nodeId, body.version)
      throw new MusterError('node-exists', `A node named ${body.nodeId} is already enrolled with another certificate.`)
    }
    if (inserted) fabric.registry.reload(inserted, body.nodeId)
    const node = inserted ? fabric.registry.get(body.nodeId) : await fabric.registry.refresh(body.nodeId)
    await fabric.changed(body.nodeId)
    // 12. issue the credential
    return await fabric.enrollAnswer(body.nodeId, certSha256, node?.generation ?? 1)
  }
}

/**
 * Steps 3-6 for a cloud identity (docs/cloud.md): the proof of the agent key,
 * then the document verified and matched to the one machine the Platform
 * created under this name; its record is consumed with the registration. A
 * node that joined proves itself with its own key from then on: a document
 * is never accepted again for it (a rebind of a cloud node makes a new record).
 */
async function enrollByIdentity(fabric: Fabric, body: Body, publicKeyDer: Uint8Array, certSha256: string, now: number, audit: Audit): Promise<EnrollAnswer> {
  const refuse = (reason: string) => refuseWith(audit, body, reason)
  const id = body.identity
  if (!id) return await refuse('malformed token')
  if (body.token !== undefined) return await refuse('both a token and a cloud identity')
  const message = enrollProofMessage({ nodeId: body.nodeId, tokenId: identityProofId(id.provider), certSha256, proofTime: body.proofTime as number })
  if (!verifyProof(publicKeyDer, message, body.proof, body.proofTime, now)) return await refuse('no proof of key')
  if (body.nodeId === LOCAL_NAME) return await refuse('reserved name')
  if (!fabric.identity) return await refuse('identity: cloud identity joins need the cloud area (it is not running)')
  let match
  try {
    match = await fabric.identity.match(body.nodeId, id)
  } catch (e) {
    if (e instanceof IdentityRefused) return await refuse(e.message)
    throw e
  }
  const tokenId = `cid:${match.expectedId}`
  const { named: existing, holder } = await nodesByNameOrCert(fabric.db, body.nodeId, certSha256)
  if (match.consumedBy !== null) {
    // A repeat of the finished join (a lost response): the same node key, within 24 hours. Anything else is a replay.
    if (existing && existing.token_id === tokenId && existing.cert_sha256 === certSha256 && match.consumedBy === certSha256) return await repeatAnswer(fabric, body, existing, certSha256, now, audit)
    return await refuse(`identity: ${match.machine} already joined`)
  }
  const rebinding = existing !== null && existing.cert_sha256 === null
  if (existing && !rebinding) return await refuse(`identity: ${body.nodeId} already joined and proves itself with its own key`)
  const identity = fabric.identity
  return await register(fabric, body, certSha256, now, audit, {
    tokenId,
    existing,
    holder,
    rebinding,
    take: (t) => identity.consume(t, match, body.nodeId, certSha256, now),
    spent: `identity: ${match.machine} already joined`,
    note: `identity: ${match.machine}`,
  })
}
