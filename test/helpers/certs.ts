// Agent certificates for tests, made the way worker join makes them.
import { generateKeyAndCert } from '../../src/crypto/x509.ts'

export async function newCert(name = 'node') {
  return generateKeyAndCert({ commonName: name, dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'], days: 30 })
}

export async function enrollRaw(url: string, body: unknown): Promise<Response> {
  return fetch(`${url}/api/v1/nodes/enroll`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
}
