// A certificate chain from a signer to one of the given roots: each link
// issued (names and key identifiers) and signed by the next, every
// intermediate a CA, every certificate valid at `at`. At most five links.
import { X509Certificate } from 'node:crypto'

const validAt = (c: X509Certificate, at: number) => Date.parse(c.validFrom) <= at && at <= Date.parse(c.validTo)
const issues = (issuer: X509Certificate, c: X509Certificate) => {
  try {
    return c.checkIssued(issuer) && c.verify(issuer.publicKey)
  } catch {
    return false
  }
}

/** Why `leaf` does not chain to a root, or null when it does. */
export function chainProblem(leaf: X509Certificate, intermediates: X509Certificate[], roots: readonly X509Certificate[], at: number): string | null {
  if (!validAt(leaf, at)) return `the signing certificate is not valid now (valid ${leaf.validFrom} to ${leaf.validTo})`
  let cur = leaf
  const used = new Set<X509Certificate>()
  for (let depth = 0; depth < 5; depth++) {
    const root = roots.find((r) => issues(r, cur))
    if (root) return validAt(root, at) ? null : 'the root is not valid now'
    const next = intermediates.find((i) => !used.has(i) && i.ca && validAt(i, at) && issues(i, cur))
    if (!next) return `no chain to a trusted root from ${cur.subject.replace(/\n/g, ', ')}`
    used.add(next)
    cur = next
  }
  return 'the chain is too long'
}
