// AWS: the instance identity document signed with the region's RSA-2048 key
// (/latest/dynamic/instance-identity/rsa2048, PKCS#7 with the document inside).
// The region's certificate is the expected machine's region's, never one the
// document picks; an unknown region is refused. Every claim is read from the
// verified content only.
import * as v from 'valibot'
import { CmsError, parseSignedData, verifiedContent } from './cms.ts'
import { refuse } from './refuse.ts'

export interface AwsIdentity {
  instanceId: string
  accountId: string
  region: string
  availabilityZone: string
  /** When the instance last entered pending (its launch, or its last start), ms. */
  pendingTime: number
  imageId: string | null
  instanceType: string | null
}

const Document = v.object({
  instanceId: v.pipe(v.string(), v.regex(/^i-[0-9a-f]{8,17}$/)),
  accountId: v.pipe(v.string(), v.regex(/^\d{12}$/)),
  region: v.pipe(v.string(), v.regex(/^[a-z]{2}(-[a-z]+)+-\d$/)),
  availabilityZone: v.pipe(v.string(), v.maxLength(64)),
  pendingTime: v.pipe(v.string(), v.isoTimestamp()),
  imageId: v.optional(v.nullable(v.string())),
  instanceType: v.optional(v.nullable(v.string())),
})

/** The PKCS#7 as the metadata service gives it: base64, perhaps in lines, perhaps with PEM armour. */
export function decodeAwsSignature(text: string): Uint8Array {
  const body = text.replace(/-----(BEGIN|END) PKCS7-----/g, '').replace(/\s+/g, '')
  if (!/^[A-Za-z0-9+/]+=*$/.test(body) || body.length > 16384) refuse('the AWS document is not base64')
  return new Uint8Array(Buffer.from(body, 'base64'))
}

/** Verifies `rsa2048` against the certificate of `region` (from the roots); answers the document's claims. */
export function verifyAwsDocument(rsa2048: string, region: string, certificates: ReadonlyMap<string, Uint8Array>): AwsIdentity {
  const cert = certificates.get(region)
  if (!cert) return refuse(`unknown region ${region} (no AWS certificate for it; serve --cloud-identity-roots adds one)`)
  let content: Uint8Array
  try {
    content = verifiedContent(parseSignedData(decodeAwsSignature(rsa2048)), cert)
  } catch (e) {
    if (e instanceof CmsError) return refuse(`AWS document refused: ${e.message} (checked against ${region}'s certificate)`)
    throw e
  }
  let json: unknown
  try {
    json = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(content))
  } catch {
    return refuse('the AWS document is not JSON')
  }
  const doc = v.safeParse(Document, json)
  if (!doc.success) return refuse(`the AWS document lacks ${doc.issues[0]?.path?.map((p) => p.key).join('.') ?? 'a field'}`)
  const d = doc.output
  if (d.region !== region) refuse(`the AWS document is for region ${d.region}, the machine was made in ${region}`)
  return { instanceId: d.instanceId, accountId: d.accountId, region: d.region, availabilityZone: d.availabilityZone, pendingTime: Date.parse(d.pendingTime), imageId: d.imageId ?? null, instanceType: d.instanceType ?? null }
}
