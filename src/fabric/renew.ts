// Renewing a node credential (docs/security.md), one linear flow:
//   1. authenticate: the current generation, or the previous one in its grace hour
//   2. every renewal carries a fresh proof of the agent key over the node's name,
//      the generation presented and the node's CURRENT certificate (the Agent signs
//      one): a copy of the credential alone, which leaked, never trades itself for
//      the next generation and so never locks the real Agent out
//   3. the per-node limit: a burst of 3, then one a minute (429 with Retry-After).
//      After step 2, so a refused copy cannot spend the real node's renewals
//   4. advance the generation by compare-and-set from the one just checked
import * as v from 'valibot'
import { renewProofMessage, verifyProof } from '../crypto/enroll-proof.ts'
import { parseCertificate } from '../crypto/x509.ts'
import { MusterError } from '../errors.ts'
import { getNode } from '../store/nodes.ts'
import type { Fabric } from './fabric.ts'
import { RenewBody, type RenewAnswer } from '../wire/nodes.ts'

export const RENEW_LIMIT = { burst: 3, intervalMs: 60_000 }


/** Per-key token buckets: `burst` at once, then one per `intervalMs`. */
export class KeyedLimit {
  private readonly buckets = new Map<string, { tokens: number; at: number }>()

  constructor(
    private readonly opts: { burst: number; intervalMs: number },
    private readonly now: () => number,
  ) {}

  /** Takes one for `key`: 0 when admitted, else the seconds until the next one. */
  take(key: string): number {
    const now = this.now()
    const b = this.buckets.get(key) ?? { tokens: this.opts.burst, at: now }
    b.tokens = Math.min(this.opts.burst, b.tokens + (now - b.at) / this.opts.intervalMs)
    b.at = now
    this.buckets.set(key, b)
    if (b.tokens < 1) return Math.max(1, Math.ceil(((1 - b.tokens) * this.opts.intervalMs) / 1000))
    b.tokens -= 1
    if (this.buckets.size > 10_000) this.prune(now)
    return 0
  }

  /** Drops full buckets: they hold nothing a fresh one would not. */
  private prune(now: number): void {
    for (const [k, b] of this.buckets) if (b.tokens + (now - b.at) / this.opts.intervalMs >= this.opts.burst) this.buckets.delete(k)
  }
}

export async function renewCredential(fabric: Fabric, headers: Headers, rawBody: unknown): Promise<RenewAnswer> {
  const { node, generation } = await fabric.authenticateNodeCredential(headers)
  const body = v.safeParse(RenewBody, rawBody ?? {})
  const row = await getNode(fabric.db, node.name)
  const proven =
    body.success &&
    row?.cert_pem != null &&
    row.cert_sha256 !== null &&
    row.cert_sha256 === node.certSha256 &&
    verifyProof(parseCertificate(row.cert_pem).publicKeyDer, renewProofMessage({ nodeId: node.name, generation, certSha256: row.cert_sha256, proofTime: body.output.proofTime as number }), body.output.proof, body.output.proofTime, fabric.now())
  if (!proven) {
    throw new MusterError(
      'forbidden',
      `A renewal of ${node.name}'s credential needs a fresh proof of the node's agent key (proofTime and proof, signed by worker/agent.key); the credential alone does not renew. An Agent older than this Platform keeps heartbeating with its credential: update it to renew.`,
    )
  }
  const wait = fabric.renewLimit.take(node.name)
  if (wait > 0) throw new MusterError('rate-limited', `Node ${node.name} renews at most ${RENEW_LIMIT.burst} times at once, then once a minute; retry in ${wait}s.`, { retryAfterSeconds: wait })
  return { nodeId: node.name, ...(await fabric.nextGeneration(node.name, node.generation)) }
}
