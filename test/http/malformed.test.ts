// docs/security.md, the reproduced 500s as fixed checks: HTTP/1.0 without Host and
// malformed Hosts on both ports, and certificates that only the runtime's
// X.509 parser (BoringSSL) knows to refuse.
import { expect, test } from 'bun:test'
import { connect as netConnect } from 'node:net'
import { connect as tlsConnect } from 'node:tls'
import { children, integer, readDerExact, sequence } from '../../src/crypto/der.ts'
import { derToPem, generateKeyAndCert, parseCertificate, pemToDer } from '../../src/crypto/x509.ts'
import { startListenerPlatform } from '../helpers/node-side.ts'

/** One request over a raw socket; the status line and body of the answer. */
function send(port: number, tls: boolean, data: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = ''
    const s = tls ? tlsConnect({ port, host: '127.0.0.1', rejectUnauthorized: false }) : netConnect({ port, host: '127.0.0.1' })
    const timer = setTimeout(() => {
      s.destroy()
      reject(new Error(`no answer; got ${JSON.stringify(out)}`))
    }, 10_000)
    s.once(tls ? 'secureConnect' : 'connect', () => s.write(data))
    s.on('data', (d: Buffer) => (out += d.toString('latin1')))
    s.on('close', () => {
      clearTimeout(timer)
      resolve(out)
    })
    s.on('error', () => {})
  })
}

test('HTTP/1.0 without Host, or with a Host that is no host, is 400 on both ports', async () => {
  await using p = await startListenerPlatform()
  const api = Number(new URL(p.url).port)
  const requests = [
    'POST /api/v1/nodes/enroll HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}',
    'POST /api/v1/nodes/trust HTTP/1.0\r\n\r\n',
    'GET /healthz HTTP/1.0\r\n\r\n',
    'POST /api/v1/nodes/enroll HTTP/1.1\r\nHost: [\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}',
    'POST /login HTTP/1.1\r\nHost: a b\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 3\r\nConnection: close\r\n\r\na=b',
  ]
  for (const [port, tls] of [[p.listener.port, true], [api, false]] as const) {
    for (const r of requests) {
      const answer = await send(port, tls, r)
      expect({ r, status: answer.slice(0, 12) }).toEqual({ r, status: 'HTTP/1.1 400' })
      expect(answer).toContain('"code":"invalid-request"')
    }
  }
})

test('a certificate BoringSSL refuses is refused, even where muster’s own reader would not look', async () => {
  const good = await generateKeyAndCert({ commonName: 'w1', dnsNames: [], ipAddresses: ['127.0.0.1'], days: 1 })
  const [tbs, sigAlg, sig] = children(readDerExact(pemToDer(good.certPem)))
  const items = children(tbs!)
  // The TBS signature algorithm (an AlgorithmIdentifier, after version and serial) replaced by an INTEGER:
  // a field muster's own reader never looks at (it reads the issuer since the Platform CA), a
  // certificate no X.509 parser accepts.
  expect(items[0]!.tag).toBe(0xa0)
  const bad = sequence(sequence(...items.map((n, i) => (i === 2 ? integer(7) : n.raw))), sigAlg!.raw, sig!.raw)
  expect(() => parseCertificate(derToPem(bad))).toThrow('not an X.509 certificate')
  expect(parseCertificate(good.certPem).fingerprint).toBe(good.fingerprint)
})
