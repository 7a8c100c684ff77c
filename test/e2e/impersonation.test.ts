// Through dist/muster: a holder of a fleet token (or of a
// used single-use token) takes another node's public certificate from its
// Agent's port and enrolls under that node's name, hoping for its credential.
// Every attempt gets the one refusal and no credential; the audit says why;
// the honest node stays ready.
import { describe, expect, test } from 'bun:test'
import { connect } from 'node:tls'
import { derToPem, generateKeyAndCert } from '../../src/crypto/x509.ts'
import { signEnrollProof } from '../../src/crypto/enroll-proof.ts'
import { runMuster, startMuster, startServe } from '../helpers/binary.ts'
import { freePort } from '../helpers/node-side.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

const REFUSAL = '{"error":{"code":"enrollment-refused","message":"Enrollment refused."}}'

/** The certificate an Agent shows anyone who connects to its port. */
function agentCertificate(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port, rejectUnauthorized: false })
    s.once('error', reject)
    s.once('secureConnect', () => {
      const der = s.getPeerCertificate(true).raw
      s.destroy()
      resolve(derToPem(new Uint8Array(der)))
    })
  })
}

describe('impersonation through dist/muster', () => {
  test("another node's certificate and name, with a fleet token or a used token, get nothing", { timeout: 120_000 }, async () => {
    using dir = tmpDir()
    const data = `${dir.path}/platform`
    await using serve = await startServe(data, ['--enrollment-port', '0', '--enrollment-address', '127.0.0.1'], { MUSTER_PROBE_INTERVAL_MS: '300' })
    const minted = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', data, '--json'])).stdout) as { token: string }
    const env = { MUSTER_URL: serve.url, MUSTER_TOKEN: minted.token }
    const json = async <T>(args: string[]) => JSON.parse((await runMuster([...args, '--json'], { env })).stdout) as T
    const { enrollment } = await json<{ enrollment: { url: string; fingerprint: string } }>(['nodes', 'platform'])
    const fleet = await json<{ id: string; token: string }>(['nodes', 'join-token', 'create', '--max-uses', '5'])
    const single = await json<{ token: string }>(['nodes', 'enroll-token', 'w2'])

    // Two honest machines join: w1 with the fleet token, w2 with its single-use token.
    const join = async (node: string, token: string) => {
      const port = await freePort()
      const r = await runMuster(['worker', 'join', '--platform-url', enrollment.url, '--node-id', node, '--platform-fingerprint', enrollment.fingerprint, '--address', '127.0.0.1', '--port', String(port), '--data-dir', `${dir.path}/${node}`], { stdin: `${token}\n` })
      expect(r.code).toBe(0)
      return port
    }
    const w1Port = await join('w1', fleet.token)
    const w2Port = await join('w2', single.token)
    await using a1 = await startMuster(['agent', '--data-dir', `${dir.path}/w1`], { env: { MUSTER_AGENT_HEARTBEAT_MS: '300', MUSTER_AGENT_HOST: '127.0.0.1' } })
    await using a2 = await startMuster(['agent', '--data-dir', `${dir.path}/w2`], { env: { MUSTER_AGENT_HEARTBEAT_MS: '300', MUSTER_AGENT_HOST: '127.0.0.1' } })
    const states = async () => Object.fromEntries((await json<{ nodes: { name: string; state: string }[] }>(['nodes', 'list'])).nodes.map((n) => [n.name, n.state]))
    await waitFor(async () => {
      const s = await states()
      return s.w1 === 'ready' && s.w2 === 'ready'
    }, { timeoutMs: 30_000, what: 'w1 and w2 ready' })

    // The attacker: the public certificates, as the Agents show them, and a key of its own.
    const w1Cert = await agentCertificate(w1Port)
    const w2Cert = await agentCertificate(w2Port)
    const own = await generateKeyAndCert({ commonName: 'attacker', dnsNames: [], ipAddresses: ['127.0.0.1'], days: 1 })
    const attempt = (body: Record<string, unknown>) =>
      fetch(`${enrollment.url}/api/v1/nodes/enroll`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), tls: { rejectUnauthorized: false } })
    const signedByAttacker = (token: string, nodeId: string, certPem: string) => signEnrollProof({ keyPem: own.keyPem, certPem, nodeId, token })
    const attempts: Record<string, unknown>[] = [
      { token: fleet.token, nodeId: 'w1', certPem: w1Cert, version: '0.1.0' },
      { token: fleet.token, nodeId: 'w1', certPem: w1Cert, ...signedByAttacker(fleet.token, 'w1', w1Cert) },
      { token: single.token, nodeId: 'w2', certPem: w2Cert },
      { token: single.token, nodeId: 'w2', certPem: w2Cert, ...signedByAttacker(single.token, 'w2', w2Cert) },
      // the attacker's own certificate, honestly signed, under w2's name with w2's used token
      { token: single.token, nodeId: 'w2', certPem: own.certPem, ...signEnrollProof({ keyPem: own.keyPem, certPem: own.certPem, nodeId: 'w2', token: single.token }) },
    ]
    for (const body of attempts) {
      const r = await attempt(body)
      const text = await r.text()
      expect(text).not.toContain('mnc_')
      expect(`${r.status} ${text}`).toBe(`403 ${REFUSAL}`)
    }
    // Its own certificate under w1's name with the fleet token: a conflict, never w1's credential.
    const squat = await attempt({ token: fleet.token, nodeId: 'w1', certPem: own.certPem, ...signEnrollProof({ keyPem: own.keyPem, certPem: own.certPem, nodeId: 'w1', token: fleet.token }) })
    expect(squat.status).toBe(409)
    expect(await squat.text()).not.toContain('mnc_')

    const audit = await json<{ entries: { outcome: string; reason: string | null; nodeId: string | null }[] }>(['nodes', 'audit'])
    const refused = audit.entries.filter((e) => e.outcome === 'refused')
    expect(refused.map((e) => e.reason)).toEqual(['token used up', 'no proof of key', 'no proof of key', 'no proof of key', 'no proof of key'])
    expect(audit.entries.filter((e) => e.outcome === 'enrolled').map((e) => e.nodeId).sort()).toEqual(['w1', 'w2'])
    expect(JSON.parse((await runMuster(['nodes', 'join-token', 'list', '--json'], { env })).stdout).tokens[0].uses).toBe(1)
    // The honest nodes never noticed.
    expect(await states()).toMatchObject({ w1: 'ready', w2: 'ready' })
    expect(a1.log() + a2.log()).not.toContain('heartbeat failed')
  })
})
