// AWS Signature Version 4 (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html)
// for one request: the canonical request, the string to sign, the derived
// signing key, and the Authorization header.
import { createHash, createHmac } from 'node:crypto'

export interface SigningInput {
  method: string
  url: URL
  headers: Record<string, string>
  body: string
  region: string
  service: string
  accessKeyId: string
  secretAccessKey: string
  sessionToken?: string
  now: Date
}

const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex')
const hmac = (key: string | Buffer, s: string) => createHmac('sha256', key).update(s, 'utf8').digest()

/** RFC 3986 encoding, as SigV4 wants it. */
export const uriEncode = (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)

export function amzDate(now: Date): string {
  return now.toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '')
}

export function canonicalRequest(method: string, url: URL, headers: Record<string, string>, body: string): { text: string; signedHeaders: string } {
  const names = Object.keys(headers).map((h) => h.toLowerCase()).sort()
  const lower = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]))
  const canonicalHeaders = names.map((n) => `${n}:${String(lower[n]).trim().replace(/\s+/g, ' ')}\n`).join('')
  const query = [...url.searchParams.entries()].map(([k, v]) => [uriEncode(k), uriEncode(v)]).sort(([a, x], [b, y]) => (a === b ? (x! < y! ? -1 : 1) : a! < b! ? -1 : 1)).map(([k, v]) => `${k}=${v}`).join('&')
  const path = url.pathname.split('/').map((seg) => uriEncode(decodeURIComponent(seg))).join('/') || '/'
  const signedHeaders = names.join(';')
  return { text: [method, path, query, canonicalHeaders, signedHeaders, sha256(body)].join('\n'), signedHeaders }
}

export function signingKey(secret: string, date: string, region: string, service: string): Buffer {
  return hmac(hmac(hmac(hmac(`AWS4${secret}`, date), region), service), 'aws4_request')
}

/** The headers to send: the given ones plus host, x-amz-date, the session token and Authorization. */
export function signV4(i: SigningInput): Record<string, string> {
  const date = amzDate(i.now)
  const headers: Record<string, string> = { ...i.headers, host: i.url.host, 'x-amz-date': date }
  if (i.sessionToken) headers['x-amz-security-token'] = i.sessionToken
  const { text, signedHeaders } = canonicalRequest(i.method, i.url, headers, i.body)
  const scope = `${date.slice(0, 8)}/${i.region}/${i.service}/aws4_request`
  const toSign = ['AWS4-HMAC-SHA256', date, scope, sha256(text)].join('\n')
  const signature = createHmac('sha256', signingKey(i.secretAccessKey, date.slice(0, 8), i.region, i.service)).update(toSign, 'utf8').digest('hex')
  const { host: _host, ...rest } = headers
  return { ...rest, authorization: `AWS4-HMAC-SHA256 Credential=${i.accessKeyId}/${scope}, SignedHeaders=${signedHeaders}, Signature=${signature}` }
}
