// What identity documents are verified against: AWS's per-region RSA-2048
// certificates and Microsoft's roots, shipped in the binary, plus what
// `serve --cloud-identity-roots FILE` adds (a GovCloud or China region, a
// private cloud, tests): {"aws": {"REGION": "PEM"}, "gcp": {"KID": "PEM"},
// "azure": ["PEM root", …]}. A file's AWS region replaces the shipped one.
import { readFileSync } from 'node:fs'
import { X509Certificate } from 'node:crypto'
import { MusterError } from '../../errors.ts'
import { AWS_RSA2048_CERTIFICATES } from './aws-certificates.ts'
import { AZURE_ROOTS } from './azure-roots.ts'

export interface IdentityRoots {
  /** Region → the DER of its certificate. */
  aws: Map<string, Uint8Array>
  /** Key id → PEM certificate, besides Google's published ones. */
  gcp: Map<string, string>
  azure: X509Certificate[]
}


export function builtinRoots(): IdentityRoots {
  return {
    aws: new Map(Object.entries(AWS_RSA2048_CERTIFICATES).map(([r, b64]) => [r, new Uint8Array(Buffer.from(b64, 'base64'))])),
    gcp: new Map(),
    azure: AZURE_ROOTS.map((p) => new X509Certificate(p)),
  }
}

/** The shipped roots with the file's added; a file that is not what it should be is refused with what to fix. */
export function identityRoots(file?: string): IdentityRoots {
  const roots = builtinRoots()
  if (!file) return roots
  const bad = (what: string) => new MusterError('not-configured', `--cloud-identity-roots ${file}: ${what}. Expected {"aws": {"REGION": "PEM"}, "gcp": {"KEY ID": "PEM"}, "azure": ["PEM"]}.`)
  let json: unknown
  try {
    json = JSON.parse(readFileSync(file, 'utf8'))
  } catch (e) {
    throw bad(`cannot be read as JSON (${(e as Error).message})`)
  }
  if (!json || typeof json !== 'object' || Array.isArray(json)) throw bad('not a JSON object')
  const j = json as Record<string, unknown>
  for (const k of Object.keys(j)) if (!['aws', 'gcp', 'azure'].includes(k)) throw bad(`unknown key "${k}"`)
  const cert = (where: string, pem: unknown) => {
    if (typeof pem !== 'string') throw bad(`${where} is not a PEM string`)
    try {
      return new X509Certificate(pem)
    } catch {
      throw bad(`${where} is not a PEM certificate`)
    }
  }
  const map = (k: string) => {
    const m = j[k]
    if (m === undefined) return {}
    if (!m || typeof m !== 'object' || Array.isArray(m)) throw bad(`"${k}" is not an object`)
    return m as Record<string, unknown>
  }
  for (const [region, pem] of Object.entries(map('aws'))) {
    if (!/^[a-z]{2}(-[a-z]+)+-\d$/.test(region)) throw bad(`aws region "${region}" is not a region name`)
    const c = cert(`aws.${region}`, pem)
    if (c.publicKey.asymmetricKeyType !== 'rsa') throw bad(`aws.${region} is not an RSA certificate`)
    roots.aws.set(region, new Uint8Array(c.raw))
  }
  for (const [kid, pem] of Object.entries(map('gcp'))) {
    if (!/^[\w-]{1,128}$/.test(kid)) throw bad(`gcp key id "${kid}" is not a key id`)
    cert(`gcp.${kid}`, pem)
    roots.gcp.set(kid, pem as string)
  }
  const az = j.azure ?? []
  if (!Array.isArray(az)) throw bad('"azure" is not a list')
  az.forEach((pem, i) => roots.azure.push(cert(`azure[${i}]`, pem)))
  return roots
}
