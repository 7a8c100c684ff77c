// docs/security.md: an enroll proves possession of the agent key. The attacks: a
// holder of a fleet token (or of a used or expired single-use token) sends
// another node's public certificate under that node's name; a captured proof
// is replayed late, or for another node or token. Each gets the one refusal
// and no credential; the honest paths (openssl-made proofs, Ed25519 keys, a
// lost-response repeat within 24 hours) keep working.
import { describe, expect, test } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { enrollProofMessage, joinTokenId } from '../../src/crypto/enroll-proof.ts'
import { certFingerprint } from '../../src/crypto/x509.ts'
import { VERSION } from '../../src/version.ts'
import { enrollRaw, newCert, withProof } from '../helpers/certs.ts'
import { onEngine, startPlatform, type TestPlatform } from '../helpers/platform.ts'
import { ENGINES } from '../helpers/postgres.ts'
import { tmpDir } from '../helpers/tmp.ts'

const REFUSAL = '{"error":{"code":"enrollment-refused","message":"Enrollment refused."}}'
const HOUR = 3600_000

async function expectRefused(r: Response) {
  const text = await r.text()
  expect(`${r.status} ${text}`).toBe(`403 ${REFUSAL}`)
}

const refusalReasons = async (p: TestPlatform) => (await p.client.nodes.audit()).entries.filter((e) => e.outcome === 'refused').map((e) => e.reason)

/** Signs the SPEC's exact bytes with the openssl command line, independent of muster's own signing code. */
function opensslProof(dir: string, keyPem: string, message: Buffer, ed25519 = false): string {
  writeFileSync(`${dir}/key.pem`, keyPem, { mode: 0o600 })
  writeFileSync(`${dir}/msg`, message)
  const cmd = ed25519 ? ['openssl', 'pkeyutl', '-sign', '-inkey', `${dir}/key.pem`, '-rawin', '-in', `${dir}/msg`] : ['openssl', 'dgst', '-sha256', '-sign', `${dir}/key.pem`, `${dir}/msg`]
  const out = Bun.spawnSync(cmd)
  if (out.exitCode !== 0) throw new Error(out.stderr.toString())
  return Buffer.from(out.stdout).toString('base64url')
}

describe.each(ENGINES)('on %s', (engine) => {
  onEngine(engine)

  describe('proof of possession of the agent key', () => {
    test("a fleet-token holder sending another node's certificate under its name gets the one refusal, never its credential", async () => {
      await using p = await startPlatform({ remoteDispatch: true })
      const fleet = await p.client.nodes.createJoinToken({ maxUses: 5 })
      const victim = await newCert('w1')
      const honest = await enrollRaw(p.url, { token: fleet.token, nodeId: 'w1', certPem: victim.certPem, version: VERSION })
      expect(honest.status).toBe(200)
      const credential = ((await honest.json()) as { credential: string }).credential
      const attacker = await newCert('attacker')
      const attempts = [
        { token: fleet.token, nodeId: 'w1', certPem: victim.certPem, version: VERSION, proof: undefined }, // no proof
        { token: fleet.token, nodeId: 'w1', certPem: victim.certPem, version: VERSION, proofTime: Math.floor(Date.now() / 1000), proof: '' },
        withProof({ token: fleet.token, nodeId: 'w1', certPem: victim.certPem, version: VERSION }, attacker.keyPem), // signed by another key
        { ...withProof({ token: fleet.token, nodeId: 'w1', certPem: victim.certPem }, attacker.keyPem), proofTime: 'now' },
        { token: fleet.token, nodeId: 'w1', certPem: victim.certPem, proofTime: Math.floor(Date.now() / 1000), proof: 'A'.repeat(96) },
      ]
      for (const body of attempts) {
        const r = await enrollRaw(p.url, body)
        const text = await r.text()
        expect(text).not.toContain(credential)
        expect(`${r.status} ${text}`).toBe(`403 ${REFUSAL}`)
      }
      expect((await p.client.nodes.listJoinTokens()).tokens[0]!.uses).toBe(1)
      expect(await refusalReasons(p)).toEqual(Array(attempts.length).fill('no proof of key'))
    })

    test('a used or expired single-use token with the enrolled certificate and no key gets nothing; the key holder repeats within 24 hours', async () => {
      await using p = await startPlatform({ remoteDispatch: true })
      const e = await p.client.nodes.createEnrollment({ nodeId: 'w1', ttlMinutes: 1 })
      const node = await newCert('w1')
      const first = (await (await enrollRaw(p.url, { token: e.token, nodeId: 'w1', certPem: node.certPem, version: VERSION })).json()) as { credential: string }
      const other = await newCert('other')
      // used up
      await expectRefused(await enrollRaw(p.url, { token: e.token, nodeId: 'w1', certPem: node.certPem, proof: undefined }))
      await expectRefused(await enrollRaw(p.url, withProof({ token: e.token, nodeId: 'w1', certPem: node.certPem }, other.keyPem)))
      // expired as well
      p.advance(2 * 60_000)
      await expectRefused(await enrollRaw(p.url, withProof({ token: e.token, nodeId: 'w1', certPem: node.certPem }, other.keyPem, p.platform.now())))
      // The holder of the key, after a lost response: the same answer, no use spent.
      const repeat = await enrollRaw(p.url, { token: e.token, nodeId: 'w1', certPem: node.certPem, version: VERSION }, { nowMs: p.platform.now() })
      expect(repeat.status).toBe(200)
      expect(((await repeat.json()) as { credential: string }).credential).toBe(first.credential)
      // Not a day after the enrollment.
      p.advance(24 * HOUR)
      await expectRefused(await enrollRaw(p.url, { token: e.token, nodeId: 'w1', certPem: node.certPem }, { nowMs: p.platform.now() }))
      expect(await refusalReasons(p)).toEqual(['repeat more than 24 hours after the enrollment', 'no proof of key', 'no proof of key', 'no proof of key'])
    })

    test('never for a revoked node, even with its key', async () => {
      await using p = await startPlatform({ remoteDispatch: true })
      const fleet = await p.client.nodes.createJoinToken({ maxUses: 5 })
      const node = await newCert('w1')
      expect((await enrollRaw(p.url, { token: fleet.token, nodeId: 'w1', certPem: node.certPem })).status).toBe(200)
      await p.client.nodes.revoke('w1')
      await expectRefused(await enrollRaw(p.url, { token: fleet.token, nodeId: 'w1', certPem: node.certPem }))
      expect((await refusalReasons(p))[0]).toBe('node revoked')
    })

    test('a captured proof is refused later than 300 s, and for another node or token', async () => {
      await using p = await startPlatform({ remoteDispatch: true })
      const fleet = await p.client.nodes.createJoinToken({ maxUses: 5 })
      const other = await p.client.nodes.createJoinToken({ maxUses: 5 })
      const node = await newCert('w1')
      const captured = withProof({ token: fleet.token, nodeId: 'w1', certPem: node.certPem, version: VERSION }, node.keyPem, p.platform.now())
      // for another name, or sent with another token: the signed bytes name w1 and the fleet token
      await expectRefused(await enrollRaw(p.url, { ...captured, nodeId: 'w2' }))
      await expectRefused(await enrollRaw(p.url, { ...captured, token: other.token }))
      expect((await enrollRaw(p.url, captured)).status).toBe(200)
      // the same bytes again, 301 s later: not fresh
      p.advance(301_000)
      await expectRefused(await enrollRaw(p.url, captured))
      // a proofTime from the future is no fresher (310 s ahead: the request itself may take seconds on a busy machine,
      // which brings a proof made 301 s ahead back inside the window by the time it is checked)
      await expectRefused(await enrollRaw(p.url, withProof({ token: fleet.token, nodeId: 'w1', certPem: node.certPem }, node.keyPem, p.platform.now() + 310_000)))
      expect(await refusalReasons(p)).toEqual(Array(4).fill('no proof of key'))
      expect((await p.client.nodes.listJoinTokens()).tokens.map((t) => t.uses).sort()).toEqual([0, 1])
    })

    test('proofs made by openssl over the exact bytes: ECDSA P-256 (dgst -sha256 -sign) and Ed25519 (raw)', async () => {
      await using p = await startPlatform({ remoteDispatch: true })
      using dir = tmpDir()
      const fleet = await p.client.nodes.createJoinToken({ maxUses: 5 })
      const proofTime = Math.floor(p.platform.now() / 1000)
      const ec = await newCert('ec-node')
      const ecMessage = Buffer.from(`muster-enroll-v1\nec-node\n${joinTokenId(fleet.token)}\n${certFingerprint(ec.certPem).slice(7)}\n${proofTime}`)
      expect(ecMessage.equals(enrollProofMessage({ nodeId: 'ec-node', tokenId: fleet.id, certSha256: certFingerprint(ec.certPem).slice(7), proofTime }))).toBe(true)
      const ecBody = { token: fleet.token, nodeId: 'ec-node', certPem: ec.certPem, proofTime, proof: opensslProof(dir.path, ec.keyPem, ecMessage) }
      expect((await enrollRaw(p.url, ecBody)).status).toBe(200)

      const gen = (args: string[]) => Bun.spawnSync(['openssl', ...args]).exitCode === 0 || (() => { throw new Error(`openssl ${args.join(' ')}`) })()
      gen(['genpkey', '-algorithm', 'ed25519', '-out', `${dir.path}/ed.pem`])
      gen(['req', '-x509', '-new', '-key', `${dir.path}/ed.pem`, '-subj', '/CN=ed-node', '-days', '1', '-out', `${dir.path}/ed.crt`])
      const edKey = await Bun.file(`${dir.path}/ed.pem`).text()
      const edCert = await Bun.file(`${dir.path}/ed.crt`).text()
      const edMessage = enrollProofMessage({ nodeId: 'ed-node', tokenId: fleet.id, certSha256: certFingerprint(edCert).slice(7), proofTime })
      const edBody = { token: fleet.token, nodeId: 'ed-node', certPem: edCert, proofTime, proof: opensslProof(dir.path, edKey, edMessage, true) }
      expect((await enrollRaw(p.url, { ...edBody, nodeId: 'ed-other' })).status).toBe(403)
      const ed = await enrollRaw(p.url, edBody)
      expect(ed.status).toBe(200)
      expect(((await ed.json()) as { credential: string }).credential).toMatch(/^mnc_ed-node\.1\./)
      // muster's own signer makes the same kind of proof from the same key file
      expect((await enrollRaw(p.url, withProof({ token: fleet.token, nodeId: 'ed-node', certPem: edCert }, edKey, p.platform.now()))).status).toBe(200)
    })
  })
})
