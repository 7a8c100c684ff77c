// Crash consistency of the stored server certificate (docs/nodes.md, the
// enrollment listener's certificate): a renewal writes the new key, then the
// new certificate. A crash between the two writes leaves the old certificate
// beside a key that is not its own; the next start must replace that pair, not
// serve it. The renewal here is the Platform's own (its clock moved to the
// renewal time), crashed by a vault whose second write never happens.
import { describe, expect, test } from 'bun:test'
import { createPublicKey, X509Certificate } from 'node:crypto'
import { keyMatchesCert } from '../../src/crypto/ca.ts'
import { probeChain } from '../../src/crypto/pin.ts'
import { certFingerprint, derToPem } from '../../src/crypto/x509.ts'
import { certDir } from '../../src/pki/server-cert.ts'
import { startListenerPlatform } from '../helpers/node-side.ts'
import { tmpDir } from '../helpers/tmp.ts'

class Crash extends Error {}

describe('the enrollment listener certificate after a crash between its two writes', () => {
  test('the old certificate beside the new key is replaced on the next start, and what is served matches its key', async () => {
    using dir = tmpDir()
    const dataDir = `${dir.path}/data`
    const slot = certDir('tls', ['127.0.0.1'])
    let now = Date.now()
    let oldCert: string
    {
      await using p = await startListenerPlatform({ dataDir, clock: () => now })
      oldCert = p.listener.certificate.certPem
      const vault = p.platform.ctx.vault
      const put = vault.put.bind(vault)
      const writes: string[] = []
      vault.put = async (name: string, value: string) => {
        writes.push(name)
        // The process dies after the key was written, before the certificate is.
        if (name === `${slot}/cert.pem`) throw new Crash('killed between the writes')
        return put(name, value)
      }
      now = p.listener.certificate.renewAt
      await expect(p.listener.renewIfNeeded()).rejects.toBeInstanceOf(Crash)
      expect(writes).toEqual([`${slot}/key.pem`, `${slot}/cert.pem`])
      vault.put = put
      // What the store holds now: the old certificate and a key that is not its own.
      const [certPem, keyPem] = [await vault.get(`${slot}/cert.pem`), await vault.get(`${slot}/key.pem`)]
      expect(certPem).toBe(oldCert)
      expect(keyMatchesCert(certPem!, keyPem!)).toBe(false)
    }
    // The next start, on the wall clock again (the old certificate is otherwise fine: not due, covers the address, from the CA).
    now = Date.now()
    await using p = await startListenerPlatform({ dataDir, clock: () => now })
    const served = derToPem((await probeChain('127.0.0.1', p.listener.port))[0]!)
    expect(certFingerprint(served)).not.toBe(certFingerprint(oldCert))
    const vault = p.platform.ctx.vault
    const [certPem, keyPem] = [(await vault.get(`${slot}/cert.pem`))!, (await vault.get(`${slot}/key.pem`))!]
    expect(certPem).toBe(served)
    expect(keyMatchesCert(certPem, keyPem)).toBe(true)
    expect(new X509Certificate(served).publicKey.export({ type: 'spki', format: 'der' })).toEqual(createPublicKey(keyPem).export({ type: 'spki', format: 'der' }))
    // A client that trusts the Platform CA alone completes its handshake and is answered.
    const r = await fetch(`${p.enrollUrl}/bootstrap/ca.pem`, { tls: { ca: p.platform.pki.ca.certPem } } as RequestInit)
    expect(r.status).toBe(200)
  })
})
