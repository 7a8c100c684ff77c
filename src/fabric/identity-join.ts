// What the enroll pipeline asks of cloud identity joins (src/cloud/identity
// answers it once the cloud area starts): a signed document from a cloud's
// metadata service instead of a join token, matched to one machine the
// Platform created and consumed with the node's registration.
import type { Db } from '../store/db.ts'
import type { IdentityChallenge, IdentityProvider } from '../wire/nodes.ts'

export type { IdentityChallenge, IdentityProvider }

/** Why an identity join is refused: the node sees the one generic refusal, `nodes audit` this reason as `identity: …`. */
export class IdentityRefused extends Error {
  constructor(readonly reason: string) {
    super(`identity: ${reason}`)
  }
}

export interface IdentityProof {
  provider: IdentityProvider
  /** AWS: the rsa2048 PKCS#7 (base64). GCP: the identity JWT. Azure: the attested document's signature (base64 PKCS#7). */
  document: string
}

export interface IdentityMatch {
  /** The expected machine this document proves (cloud_expected_machines.id). */
  expectedId: string
  /** Consumed already (by `consumedBy`): a repeat of a finished join, or a replay. */
  consumedBy: string | null
  consumedAt: number | null
  /** For the audit: the machine as the cloud attested it. */
  machine: string
  /** Azure: the Platform's challenge the document carried, taken in the same transaction. */
  nonce?: string
}

export interface IdentityJoins {
  /** Verifies the document and finds the one expected machine it proves; throws IdentityRefused. */
  match(nodeId: string, proof: IdentityProof): Promise<IdentityMatch>
  /** In the enroll transaction: takes the record (and the challenge) once; false when another join came first. */
  consume(db: Db, m: IdentityMatch, nodeId: string, certSha256: string, now: number): Promise<boolean>
  /** A first-boot token minted for a provision at a provider that signs nothing: why the presented server id is refused, or null. */
  tokenMachineProblem(provisionId: string, machineId: string | undefined): Promise<string | null>
  /** A fresh challenge (nonce) for a node about to fetch Azure's attested data. */
  challenge(nodeId: string): Promise<IdentityChallenge>
  /** In a rebind's transaction: a node that joined by its cloud identity may join once more (true when it did). */
  rebound(db: Db, nodeId: string, now: number, until: number): Promise<boolean>
}
