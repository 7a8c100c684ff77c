// Agent identities for the benches: an ECDSA P-256 key and a self-signed
// certificate per simulated node, made exactly as `worker join` makes them
// (generateKeyAndCert), cached on disk because 100,000 of them take minutes;
// and the enroll body a real Agent sends, with its proof of key (docs/security.md).
import { sign } from 'node:crypto'
import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { generateKeyAndCert } from '../src/crypto/x509.ts'
import { VERSION } from '../src/version.ts'
import { tunable } from '../src/tunables.ts'

export interface Identity {
  keyPem: string
  certPem: string
  /** SHA-256 hex of the certificate DER (what the credential is bound to). */
  sha256: string
}

export const CACHE_DIR = tunable('MUSTER_BENCH_CACHE') ?? join(tmpdir(), 'muster-bench-cache')

/** `count` distinct identities: read from the cache, the missing ones made and appended. */
export async function identities(count: number, log: (s: string) => void = () => {}): Promise<Identity[]> {
  mkdirSync(CACHE_DIR, { recursive: true })
  const file = join(CACHE_DIR, 'identities.jsonl')
  const have: Identity[] = existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .slice(0, count)
        .map((l) => JSON.parse(l) as Identity)
    : []
  if (have.length < count) log(`making ${count - have.length} agent keys and certificates (cached in ${file})… `)
  let batch = ''
  const started = performance.now()
  while (have.length < count) {
    const i = have.length
    const k = await generateKeyAndCert({ commonName: `bench-${i}`, dnsNames: [], ipAddresses: ['127.0.0.1'], days: 365 })
    const id = { keyPem: k.keyPem, certPem: k.certPem, sha256: k.fingerprint.slice('sha256:'.length) }
    have.push(id)
    batch += `${JSON.stringify(id)}\n`
    if (batch.length > 1 << 20 || have.length === count) {
      appendFileSync(file, batch)
      batch = ''
      log(`${have.length} (${((performance.now() - started) / 1000).toFixed(0)} s) `)
    }
  }
  return have
}

/** The proof of key (docs/security.md): DER ECDSA-SHA256 over the enroll statement, base64url. */
export function enrollProof(keyPem: string, nodeId: string, tokenId: string, certSha256: string, proofTime: number): string {
  const statement = `muster-enroll-v1\n${nodeId}\n${tokenId}\n${certSha256}\n${proofTime}`
  return sign('sha256', Buffer.from(statement), keyPem).toString('base64url')
}

/** The token id of an `mjt_<id>.<secret>` token. */
export const tokenIdOf = (token: string) => token.slice(4, token.indexOf('.'))

/** The body `worker join` sends (with the proof fields; a Platform without the proof check ignores them). */
export function enrollBody(token: string, nodeId: string, id: Identity, now = Date.now()): string {
  const proofTime = Math.floor(now / 1000)
  return JSON.stringify({ token, nodeId, certPem: id.certPem, version: VERSION, proofTime, proof: enrollProof(id.keyPem, nodeId, tokenIdOf(token), id.sha256, proofTime) })
}
