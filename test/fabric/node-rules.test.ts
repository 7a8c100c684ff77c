// Node rules from the seeds (docs/nodes.md) against real Platforms: a healthy
// node is not removed without force, and a join token is no bearer credential
// anywhere but enroll.
import { afterEach, describe, expect, test } from 'bun:test'
import { clearPinCache, pinnedFetch } from '../../src/crypto/pin.ts'
import { VERSION } from '../../src/version.ts'
import { enrollRaw, newCert, withProof } from '../helpers/certs.ts'
import { clockFor } from '../helpers/clocks.ts'
import { startListenerPlatform } from '../helpers/node-side.ts'
import { onEngine, startPlatform, type TestPlatform } from '../helpers/platform.ts'
import { ENGINES } from '../helpers/postgres.ts'
import { tmpDir } from '../helpers/tmp.ts'
import { writeFileSync } from 'node:fs'

afterEach(() => clearPinCache())

async function enrolled(p: TestPlatform, nodeId: string): Promise<string> {
  const e = await p.client.nodes.createEnrollment({ nodeId })
  const r = await enrollRaw(p.url, { token: e.token, nodeId, certPem: (await newCert(nodeId)).certPem, version: VERSION })
  expect(r.status).toBe(200)
  return ((await r.json()) as { credential: string }).credential
}

const beat = (p: TestPlatform, credential: string) =>
  fetch(`${p.url}/api/v1/nodes/register`, { method: 'POST', headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' }, body: JSON.stringify({ version: VERSION }) })

const del = (p: TestPlatform, path: string) => fetch(`${p.url}${path}`, { method: 'DELETE', headers: { authorization: `Bearer ${p.token}` } })

describe.each(ENGINES)('on %s', (engine) => {
  onEngine(engine)

  describe('nodes remove and health', () => {
    test('a node heartbeating within the stale window is refused with node-healthy naming revoke and drain; force removes it', async () => {
      await using p = await startPlatform({ remoteDispatch: true, nodeStaleAfterMs: 45_000 })
      const cred = await enrolled(p, 'w1')
      expect((await beat(p, cred)).status).toBe(200)
      const refused = await del(p, '/api/v1/nodes/w1')
      expect(refused.status).toBe(409)
      const body = (await refused.json()) as { error: { code: string; message: string } }
      expect(body.error.code).toBe('node-healthy')
      expect(body.error.message).toContain('muster nodes revoke w1')
      expect(body.error.message).toContain('muster nodes drain w1')
      expect(body.error.message).toContain('--force')
      // still there, still heartbeating
      expect((await beat(p, cred)).status).toBe(200)
      expect((await del(p, '/api/v1/nodes/w1?force=maybe')).status).toBe(400)
      expect((await del(p, '/api/v1/nodes/w1?force=false')).status).toBe(409)
      const forced = await del(p, '/api/v1/nodes/w1?force=true')
      expect(forced.status).toBe(200)
      expect((await p.client.nodes.list()).nodes.map((n) => n.name)).toEqual([])
      expect((await beat(p, cred)).status).toBe(401)
    })

    test('a node gone quiet past the stale window, one never seen, or a revoked one is removed without force', async () => {
      await using p = await startPlatform({ remoteDispatch: true, nodeStaleAfterMs: 10_000 })
      const quiet = await enrolled(p, 'quiet')
      const revoked = await enrolled(p, 'revoked')
      await enrolled(p, 'never')
      expect((await beat(p, quiet)).status).toBe(200)
      expect((await beat(p, revoked)).status).toBe(200)
      await p.client.nodes.revoke('revoked')
      expect((await p.client.nodes.remove('revoked')).removed).toBe(true)
      expect((await p.client.nodes.remove('never')).removed).toBe(true)
      await expect(p.client.nodes.remove('quiet')).rejects.toMatchObject({ code: 'node-healthy' })
      p.advance(10_001)
      expect((await p.client.nodes.remove('quiet')).removed).toBe(true)
    })

    test('a legacy node heartbeating with the shared token is healthy too', async () => {
      using dir = tmpDir()
      const fleet = 'f'.repeat(32)
      writeFileSync(`${dir.path}/fleet`, `${fleet}\n`, { mode: 0o600 })
      await using legacy = await startPlatform({ remoteDispatch: true, fleetTokenFile: `${dir.path}/fleet` })
      const r = await fetch(`${legacy.url}/api/v1/nodes/register`, { method: 'POST', headers: { authorization: `Bearer ${fleet}`, 'content-type': 'application/json' }, body: JSON.stringify({ nodeId: 'old-1', version: VERSION }) })
      expect(r.status).toBe(200)
      await expect(legacy.client.nodes.remove('old-1')).rejects.toMatchObject({ code: 'node-healthy' })
      expect((await legacy.client.nodes.remove('old-1', { force: true })).removed).toBe(true)
    })
  })

  describe('a join token is not a bearer credential', () => {
    test('operator and node routes answer 403 to a valid join token; the token still enrolls afterwards', async () => {
      await using p = await startListenerPlatform()
      const enrollment = await p.client.nodes.createEnrollment({ nodeId: 'w1' })
      const fleet = await p.client.nodes.createJoinToken({ maxUses: 5 })
      const routes: [string, string, unknown?][] = [
        // operator routes
        ['GET', '/api/v1/nodes'],
        ['GET', '/api/v1/whoami'],
        ['GET', '/api/v1/projects'],
        ['POST', '/api/v1/projects', { name: 'web', command: ['true'], replicas: 1 }],
        ['POST', '/api/v1/nodes/enrollments', { nodeId: 'w2' }],
        ['POST', '/api/v1/join-tokens', {}],
        ['DELETE', '/api/v1/nodes/w1'],
        ['POST', '/api/v1/api-tokens', { name: 'x' }],
        ['GET', '/api/v1/cloud/status'],
        ['GET', '/api/v1/federation/offices'],
        // node routes
        ['POST', '/api/v1/nodes/register', { nodeId: 'w1', version: VERSION }],
        ['POST', '/api/v1/nodes/renew'],
        ['POST', '/api/v1/nodes/trust'],
        ['GET', '/api/v1/nodes/self/assignments'],
        // pages and unknown paths
        ['GET', '/'],
        ['GET', '/api/v1/nope'],
      ]
      for (const token of [enrollment.token, fleet.token]) {
        for (const [method, path, body] of routes) {
          const r = await fetch(`${p.url}${path}`, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })
          expect([path, r.status]).toEqual([path, 403])
          expect(((await r.json()) as { error: { code: string } }).error.code).toBe('forbidden')
        }
        // and on the enrollment listener's other route
        const viaListener = await pinnedFetch(`${p.enrollUrl}/api/v1/nodes/trust`, { method: 'POST', headers: { authorization: `Bearer ${token}` } }, { fingerprint: p.fingerprint })
        expect(viaListener.status).toBe(403)
      }
      expect(await p.client.projects.list()).toEqual({ projects: [], nextCursor: null }) // nothing was deployed
      // enroll takes it (in the body, with or without the header)
      const r = await fetch(`${p.url}/api/v1/nodes/enroll`, {
        method: 'POST',
        headers: { authorization: `Bearer ${enrollment.token}`, 'content-type': 'application/json' },
        body: JSON.stringify(await (async () => {
          const cert = await newCert('w1')
          return withProof({ token: enrollment.token, nodeId: 'w1', certPem: cert.certPem, version: VERSION }, cert.keyPem, clockFor(p.url))
        })()),
      })
      expect(r.status).toBe(200)
    })
  })
})
