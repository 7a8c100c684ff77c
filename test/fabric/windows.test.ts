// The Platform's node routes at the edges of their windows and with each bound
// field swapped: enroll and renew proofs, join-token expiry, the
// previous credential's grace hour, the credential's mac, the stale window.
// A real Platform on a clock the test holds still and moves by hand.
import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { signEnrollProof, signRenewProof, PROOF_WINDOW_SECONDS } from '../../src/crypto/enroll-proof.ts'
import { certFingerprint } from '../../src/crypto/x509.ts'
import { PREVIOUS_GENERATION_GRACE_MS } from '../../src/fabric/credentials.ts'
import { VERSION } from '../../src/version.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import { startPlatform, type TestPlatform } from '../helpers/platform.ts'
import { tmpDir } from '../helpers/tmp.ts'

const STALE_MS = 45_000

/** A Platform whose clock reads `clock.t` (whole seconds to start with, so proof times land on the edge exactly). */
async function held() {
  const clock = { t: Math.floor(Date.now() / 1000) * 1000 }
  const p = await startPlatform({ remoteDispatch: true, clock: () => clock.t, nodeStaleAfterMs: STALE_MS })
  return Object.assign(p, { clock })
}

const call = (p: TestPlatform, method: string, path: string, credential: string, body?: unknown) =>
  fetch(`${p.url}${path}`, { method, headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })

/** A node route that takes the credential alone (fabric.authenticateNode). */
const nodeRoute = async (p: TestPlatform, credential: string) => (await call(p, 'GET', '/api/v1/nodes/self/log-requests', credential)).status

async function enrolled(p: TestPlatform, nodeId: string, cert?: { certPem: string; keyPem: string }) {
  const { token } = await p.client.nodes.createEnrollment({ nodeId })
  const c = cert ?? (await newCert(nodeId))
  const body = { token, nodeId, certPem: c.certPem, version: VERSION, ...signEnrollProof({ keyPem: c.keyPem, certPem: c.certPem, nodeId, token, nowMs: p.platform.now() }) }
  const r = await enrollRaw(p.url, body)
  expect(r.status).toBe(200)
  return { credential: ((await r.json()) as { credential: string }).credential, cert: c }
}

/** Two self-signed certificates for one P-256 key (openssl), as anyone holding a copy of a node's public key could make with another name. */
function twoCertsOneKey(): { keyPem: string; a: string; b: string } {
  using dir = tmpDir()
  const run = (...args: string[]) => {
    const r = Bun.spawnSync(['openssl', ...args], { cwd: dir.path })
    if (r.exitCode !== 0) throw new Error(`openssl ${args[0]}: ${r.stderr.toString()}`)
  }
  run('genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', 'key.pem')
  for (const n of ['a', 'b']) run('req', '-x509', '-new', '-key', 'key.pem', '-subj', `/CN=w-${n}`, '-days', '2', '-out', `${n}.pem`)
  const read = (f: string) => readFileSync(`${dir.path}/${f}`, 'utf8')
  return { keyPem: read('key.pem'), a: read('a.pem'), b: read('b.pem') }
}

describe('node routes: windows and bindings', () => {
  test('enroll: a proof made exactly 300 s before or after the Platform\'s time enrolls, 301 s does not', async () => {
    await using p = await held()
    const { token } = await p.client.nodes.createJoinToken({ maxUses: 10 })
    const nowS = p.clock.t / 1000
    const seen: Record<string, number> = {}
    let i = 0
    for (const [what, offset] of [
      ['300 s early', -PROOF_WINDOW_SECONDS],
      ['301 s early', -PROOF_WINDOW_SECONDS - 1],
      ['300 s late', PROOF_WINDOW_SECONDS],
      ['301 s late', PROOF_WINDOW_SECONDS + 1],
    ] as const) {
      const nodeId = `e${++i}`
      const c = await newCert(nodeId)
      const body = { token, nodeId, certPem: c.certPem, version: VERSION, ...signEnrollProof({ keyPem: c.keyPem, certPem: c.certPem, nodeId, token, nowMs: (nowS + offset) * 1000 }) }
      seen[what] = (await enrollRaw(p.url, body)).status
    }
    expect(seen).toEqual({ '300 s early': 200, '301 s early': 403, '300 s late': 200, '301 s late': 403 })
  })

  test('enroll: a captured proof is refused with its time moved to now, and for another certificate of the same key', async () => {
    await using p = await held()
    const { token } = await p.client.nodes.createJoinToken({ maxUses: 10 })
    const c = await newCert('w1')
    const old = signEnrollProof({ keyPem: c.keyPem, certPem: c.certPem, nodeId: 'w1', token, nowMs: p.clock.t - 10 * 60_000 })
    const restamped = { token, nodeId: 'w1', certPem: c.certPem, version: VERSION, proof: old.proof, proofTime: p.clock.t / 1000 }
    expect((await enrollRaw(p.url, restamped)).status).toBe(403)
    const k = twoCertsOneKey()
    const forA = signEnrollProof({ keyPem: k.keyPem, certPem: k.a, nodeId: 'w2', token, nowMs: p.clock.t })
    expect((await enrollRaw(p.url, { token, nodeId: 'w2', certPem: k.b, version: VERSION, ...forA })).status).toBe(403)
    // the same proof with the certificate it was made for enrolls: the refusals above were the swaps
    expect((await enrollRaw(p.url, { token, nodeId: 'w2', certPem: k.a, version: VERSION, ...forA })).status).toBe(200)
    expect((await p.client.nodes.list()).nodes.find((n) => n.name === 'w1')).toBeUndefined()
  })

  test('join token: enrolls one millisecond before it expires, not at the millisecond it expires', async () => {
    await using p = await held()
    const a = await p.client.nodes.createEnrollment({ nodeId: 'w1', ttlMinutes: 10 })
    const b = await p.client.nodes.createEnrollment({ nodeId: 'w2', ttlMinutes: 10 })
    const enroll = async (nodeId: string, token: string) => {
      const c = await newCert(nodeId)
      return (await enrollRaw(p.url, { token, nodeId, certPem: c.certPem, version: VERSION }, { nowMs: p.clock.t })).status
    }
    p.clock.t += 10 * 60_000 - 1
    expect(await enroll('w1', a.token)).toBe(200)
    p.clock.t += 1
    expect(await enroll('w2', b.token)).toBe(403)
    expect((await p.client.nodes.audit()).entries[0]).toMatchObject({ nodeId: 'w2', outcome: 'refused', reason: 'token expired' })
  })

  test('renew: a captured renewal proof is refused with its time moved to now', async () => {
    await using p = await held()
    const w1 = await enrolled(p, 'w1')
    const old = signRenewProof({ keyPem: w1.cert.keyPem, certPem: w1.cert.certPem, nodeId: 'w1', generation: 1, nowMs: p.clock.t - 10 * 60_000 })
    expect((await call(p, 'POST', '/api/v1/nodes/renew', w1.credential, { proof: old.proof, proofTime: p.clock.t / 1000 })).status).toBe(403)
    const fresh = signRenewProof({ keyPem: w1.cert.keyPem, certPem: w1.cert.certPem, nodeId: 'w1', generation: 1, nowMs: p.clock.t })
    expect((await call(p, 'POST', '/api/v1/nodes/renew', w1.credential, fresh)).status).toBe(200)
  })

  test('the previous credential works to the last millisecond of its grace hour, on node routes and in its standing, and not at its end', async () => {
    await using p = await held()
    const w1 = await enrolled(p, 'w1')
    const certSha256 = certFingerprint(w1.cert.certPem).slice('sha256:'.length)
    const proof = signRenewProof({ keyPem: w1.cert.keyPem, certPem: w1.cert.certPem, nodeId: 'w1', generation: 1, nowMs: p.clock.t })
    expect((await call(p, 'POST', '/api/v1/nodes/renew', w1.credential, proof)).status).toBe(200)
    const standing = async () => ((await (await call(p, 'POST', '/api/v1/nodes/self', w1.credential, { certSha256 })).json()) as { credential: string }).credential
    p.clock.t += PREVIOUS_GENERATION_GRACE_MS - 1
    expect(await nodeRoute(p, w1.credential)).toBe(200)
    expect(await standing()).toBe('valid')
    p.clock.t += 1
    expect(await nodeRoute(p, w1.credential)).toBe(401)
    expect(await standing()).toBe('superseded')
  })

  test('the credential mac binds the generation: an old credential with its number edited to the current one is refused', async () => {
    await using p = await held()
    const w1 = await enrolled(p, 'w1')
    await p.client.nodes.rotate('w1')
    await p.client.nodes.rotate('w1')
    const edited = w1.credential.replace(/^mnc_w1\.1\./, 'mnc_w1.3.')
    expect(edited).not.toBe(w1.credential)
    expect(await nodeRoute(p, edited)).toBe(401)
    expect(await nodeRoute(p, edited.replace('mnc_w1.3.', 'mnc_w1.2.'))).toBe(401)
  })

  test("the credential mac binds the name: after remove, a removed node's credential renamed to the name its certificate enrolls next is refused", async () => {
    await using p = await held()
    const w1 = await enrolled(p, 'w1')
    await p.client.nodes.remove('w1', { force: true })
    const w2 = await enrolled(p, 'w2', w1.cert)
    expect(await nodeRoute(p, w2.credential)).toBe(200)
    const renamed = w1.credential.replace(/^mnc_w1\./, 'mnc_w2.')
    expect(renamed.split('.')[1]).toBe(w2.credential.split('.')[1])
    expect(await nodeRoute(p, renamed)).toBe(401)
  })

  test('a node is ready for exactly the stale window after its heartbeat, and unreachable one millisecond later', async () => {
    await using p = await held()
    const w1 = await enrolled(p, 'w1')
    expect((await call(p, 'POST', '/api/v1/nodes/register', w1.credential, { version: VERSION, capacity: { cpuMillis: 1000, memoryMB: 1024 } })).status).toBe(200)
    // The node's row and the listing's counts (read from the registry's columns) say the same at each edge.
    const state = async () => {
      const list = await p.client.nodes.list()
      return `${list.nodes.find((n) => n.name === 'w1')?.state} (ready ${list.counts.ready}, unreachable ${list.counts.unreachable})`
    }
    expect(await state()).toBe('ready (ready 1, unreachable 0)')
    p.clock.t += STALE_MS
    expect(await state()).toBe('ready (ready 1, unreachable 0)')
    p.clock.t += 1
    expect(await state()).toBe('unreachable (ready 0, unreachable 1)')
  })
})
