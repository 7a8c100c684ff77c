// Azure: attested data (/metadata/attested/document?nonce=…), a PKCS#7 over a
// JSON document, signed by a certificate for a name under metadata.azure.com
// that chains to Microsoft's roots. The certificate whose name and chain are
// checked is the one the SignerInfo names and whose key verified the
// signature — never merely the first of the bag. Checked besides: the nonce
// (the Platform's challenge), the document's expiry, vmId and subscriptionId.
import { X509Certificate } from 'node:crypto'
import * as v from 'valibot'
import { log } from '../../log.ts'
import { tunable, TUNABLES } from '../../tunables.ts'
import { chainProblem } from './chain.ts'
import { CmsError, parseSignedData, signerCertificate, verifiedContent } from './cms.ts'
import { refuse } from './refuse.ts'

export const AZURE_METADATA_DOMAIN = 'metadata.azure.com'
/** Intermediates missing from the document are fetched from their CA Issuers URL, only on this host (as Azure documents; tests point it at a fake). */
const aiaHost = () => tunable('MUSTER_CLOUD_AZURE_CA_ISSUERS_HOST')?.trim() || String(TUNABLES.MUSTER_CLOUD_AZURE_CA_ISSUERS_HOST.default)

export interface AzureIdentity {
  vmId: string
  subscriptionId: string
  nonce: string
}

const Content = v.object({
  nonce: v.string(),
  vmId: v.pipe(v.string(), v.regex(/^[0-9a-fA-F-]{36}$/)),
  subscriptionId: v.pipe(v.string(), v.regex(/^[0-9a-fA-F-]{36}$/)),
  timeStamp: v.optional(v.object({ createdOn: v.optional(v.string()), expiresOn: v.optional(v.string()) })),
})

/** Azure writes times as `MM/DD/YY HH:MM:SS -0000`. */
export function azureTime(s: string): number {
  const m = /^(\d\d)\/(\d\d)\/(\d\d) (\d\d):(\d\d):(\d\d) ([+-])(\d\d)(\d\d)$/.exec(s.trim())
  if (!m) return Number.NaN
  const [, mo, d, y, h, mi, se, sign, oh, om] = m
  const offset = (sign === '-' ? -1 : 1) * (Number(oh) * 60 + Number(om)) * 60_000
  return Date.UTC(2000 + Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(se)) - offset
}

const dnsNames = (c: X509Certificate) => (c.subjectAltName ?? '').split(/,\s*/).filter((s) => s.startsWith('DNS:')).map((s) => s.slice(4).toLowerCase())

const fetchedIntermediates = new Map<string, X509Certificate>()

/** The CA Issuers certificate a signer names, on Microsoft's host only; cached. */
async function caIssuer(c: X509Certificate): Promise<X509Certificate | null> {
  const url = /CA Issuers - URI:(\S+)/.exec(c.infoAccess ?? '')?.[1]
  if (!url) return null
  let u: URL
  try {
    u = new URL(url)
  } catch {
    return null
  }
  if (u.hostname !== aiaHost() || !['http:', 'https:'].includes(u.protocol)) return null
  const known = fetchedIntermediates.get(u.href)
  if (known) return known
  try {
    const r = await fetch(u.href, { signal: AbortSignal.timeout(10_000), redirect: 'error' })
    if (!r.ok) throw new Error(`answered ${r.status}`)
    const got = new X509Certificate(Buffer.from(await r.arrayBuffer()))
    fetchedIntermediates.set(u.href, got)
    return got
  } catch (e) {
    log.warn(`cloud identity: the Azure intermediate ${u.href} could not be fetched (${(e as Error).message})`)
    return null
  }
}

export async function verifyAzureDocument(signature: string, roots: readonly X509Certificate[], nowMs: number): Promise<AzureIdentity> {
  const b64 = signature.replace(/\s+/g, '')
  if (!/^[A-Za-z0-9+/]+=*$/.test(b64) || b64.length > 32768) return refuse('the Azure document is not base64')
  let content: Uint8Array
  let signer: X509Certificate
  let bag: X509Certificate[]
  try {
    const doc = parseSignedData(new Uint8Array(Buffer.from(b64, 'base64')))
    // 1. the certificate that signed: the one the SignerInfo names, its key verifying the signature
    const der = signerCertificate(doc)
    if (!der) return refuse('the Azure document carries no certificate its signer names')
    content = verifiedContent(doc, der)
    signer = new X509Certificate(Buffer.from(der))
    bag = doc.certificates.map((c) => new X509Certificate(Buffer.from(c)))
  } catch (e) {
    if (e instanceof CmsError) return refuse(`Azure document refused: ${e.message}`)
    throw e
  }
  // 2. that certificate is Azure's metadata service's
  const names = dnsNames(signer)
  if (!names.some((n) => n === AZURE_METADATA_DOMAIN || n.endsWith(`.${AZURE_METADATA_DOMAIN}`))) return refuse(`the Azure document's signer is not under ${AZURE_METADATA_DOMAIN} (${names.join(', ') || 'no DNS name'})`)
  // 3. and chains to Microsoft's roots (through the bag, else the intermediate its CA Issuers URL names)
  let problem = chainProblem(signer, bag.filter((c) => c !== signer), roots, nowMs)
  if (problem) {
    const fetched = await caIssuer(signer)
    if (fetched) problem = chainProblem(signer, [...bag, fetched], roots, nowMs)
  }
  if (problem) return refuse(`the Azure document's certificate: ${problem}`)
  // 4. the claims, from the verified content only
  let json: unknown
  try {
    json = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(content))
  } catch {
    return refuse('the Azure document is not JSON')
  }
  const c = v.safeParse(Content, json)
  if (!c.success) return refuse(`the Azure document lacks ${c.issues[0]?.path?.map((p) => p.key).join('.') ?? 'a field'}`)
  const expires = c.output.timeStamp?.expiresOn ? azureTime(c.output.timeStamp.expiresOn) : Number.NaN
  if (!Number.isFinite(expires)) return refuse('the Azure document has no expiry')
  if (expires < nowMs - 30_000) return refuse(`the Azure document expired at ${new Date(expires).toISOString()}`)
  return { vmId: c.output.vmId.toLowerCase(), subscriptionId: c.output.subscriptionId.toLowerCase(), nonce: c.output.nonce }
}
