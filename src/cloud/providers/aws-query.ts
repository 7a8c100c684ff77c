// One call to an AWS Query API (EC2, STS): form-encoded Action/Version and
// parameters, SigV4-signed when keys are given, the XML answer's root element
// or the refusal. EC2 refuses as <Response><Errors><Error><Code>…; STS as
// <ErrorResponse><Error><Code>… (both read by the first <Error> element).
import { MusterError } from '../../errors.ts'
import { refusal, send, type ApiAnswer } from '../http.ts'
import type { RetryPolicy } from '../retry.ts'
import { signV4, uriEncode } from './aws-sigv4.ts'
import { child, parseXml, textOf, type XmlNode } from './xml.ts'

export interface AwsKeys {
  accessKeyId: string
  secretAccessKey: string
  sessionToken?: string
  /** When temporary keys stop working (ms since the epoch). */
  expiresAt?: number
}

export interface QueryCall {
  service: 'ec2' | 'sts'
  url: string
  region: string
  action: string
  version: string
  params?: Record<string, string>
  /** null: unsigned (AssumeRoleWithWebIdentity, whose token is the credential). */
  keys: AwsKeys | null
  policy: RetryPolicy
  /** Safe to send again after a lost answer (reads, ClientToken'd RunInstances, terminate). */
  idempotent: boolean
}

function findError(n: XmlNode | undefined): XmlNode | undefined {
  if (!n) return undefined
  if (n.name === 'Error') return n
  for (const c of n.children) {
    const found = findError(c)
    if (found) return found
  }
  return undefined
}

function parse(a: ApiAnswer): XmlNode | null {
  try {
    return parseXml(a.text)
  } catch {
    return null
  }
}

export async function queryCall(c: QueryCall): Promise<XmlNode> {
  const url = new URL(c.url.endsWith('/') ? c.url : `${c.url}/`)
  const body = Object.entries({ Action: c.action, Version: c.version, ...c.params }).map(([k, v]) => `${uriEncode(k)}=${uriEncode(v)}`).join('&')
  const base = { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' }
  const headers = c.keys
    ? signV4({ method: 'POST', url, headers: base, body, region: c.region, service: c.service, accessKeyId: c.keys.accessKeyId, secretAccessKey: c.keys.secretAccessKey, sessionToken: c.keys.sessionToken, now: new Date() })
    : base
  const code = (a: ApiAnswer) => textOf(findError(parse(a) ?? undefined), 'Code')
  const a = await send('aws', url.toString(), { method: 'POST', headers, body }, { idempotent: c.idempotent, code, policy: c.policy, api: c.service === 'sts' ? 'aws-sts' : 'aws' })
  const doc = parse(a)
  if (!doc) throw new MusterError('cloud-provider-error', `aws ${c.service} answered ${a.status} with a body that is not XML.`, { providerStatus: a.status, retryable: a.status >= 500 })
  if (a.status >= 200 && a.status < 300) return doc.children[0] ?? doc
  const err = findError(doc)
  throw refusal('aws', a.status, textOf(err, 'Code'), textOf(err, 'Message'), a.verdict)
}

export { child, textOf }
