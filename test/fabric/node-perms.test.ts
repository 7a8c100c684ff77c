// Node credentials and join tokens: who a node may speak for, and the tokens an
// operator's later act ends (permission checks and cleanups).
// Each test performs the attack through the real routes; test/mutants/perms.ts
// drops each check in turn.
import { describe, expect, test } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { startPlatform, type TestPlatform } from '../helpers/platform.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import { tmpDir } from '../helpers/tmp.ts'
import { VERSION } from '../../src/version.ts'

async function enrollWith(p: TestPlatform, nodeId: string, token: string) {
  const cert = await newCert(nodeId)
  return enrollRaw(p.url, { token, nodeId, certPem: cert.certPem, version: VERSION })
}

async function enrolled(p: TestPlatform, nodeId: string): Promise<string> {
  const e = await p.client.nodes.createEnrollment({ nodeId })
  const r = await enrollWith(p, nodeId, e.token)
  expect(r.status).toBe(200)
  return ((await r.json()) as { credential: string }).credential
}

const register = (p: TestPlatform, bearer: string, body: unknown = { version: VERSION }) =>
  fetch(`${p.url}/api/v1/nodes/register`, { method: 'POST', headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })
const nodeGet = (p: TestPlatform, bearer: string, path: string) => fetch(`${p.url}${path}`, { headers: { authorization: `Bearer ${bearer}` } })

describe('what a node credential may do', () => {
  test("a node's credential heartbeats for its own node only; naming another node is 403 and that node is untouched", async () => {
    await using p = await startPlatform({ remoteDispatch: true })
    const w1 = await enrolled(p, 'w1')
    await enrolled(p, 'w2')
    const r = await register(p, w1, { nodeId: 'w2', version: VERSION, capacity: { cpuMillis: 1000, memoryMB: 1000 } })
    expect(r.status).toBe(403)
    expect(await r.text()).toContain('only its own node')
    const w2 = (await p.client.nodes.list()).nodes.find((n) => n.name === 'w2')!
    expect(w2.lastSeenAt ?? null).toBeNull()
    expect((await register(p, w1, { nodeId: 'w1', version: VERSION })).status).toBe(200)
  })

  test('a revoked node is refused on every node route at once: heartbeat, assignments, log requests', async () => {
    await using p = await startPlatform({ remoteDispatch: true })
    const w1 = await enrolled(p, 'w1')
    expect((await nodeGet(p, w1, '/api/v1/nodes/self/assignments')).status).toBe(200)
    await p.client.nodes.revoke('w1')
    for (const r of [await register(p, w1), await nodeGet(p, w1, '/api/v1/nodes/self/assignments'), await nodeGet(p, w1, '/api/v1/nodes/self/log-requests')]) {
      expect(r.status).toBe(403)
      expect(((await r.json()) as { error: { code: string } }).error.code).toBe('node-revoked')
    }
  })

  describe('the shared fleet token (--node-auth)', () => {
    const fleet = 'shared-fleet-token-0123456789'
    async function withMode(mode: 'both' | 'enrolled') {
      const dir = tmpDir()
      writeFileSync(`${dir.path}/fleet`, `${fleet}\n`, { mode: 0o600 })
      const p = await startPlatform({ remoteDispatch: true, nodeAuth: mode, fleetTokenFile: `${dir.path}/fleet` })
      return { p, [Symbol.asyncDispose]: async () => (await p.close(), dir[Symbol.dispose]()) }
    }

    test('it never speaks for an enrolled node: a heartbeat naming one is 403 and the node keeps its own credential', async () => {
      await using m = await withMode('both')
      const w1 = await enrolled(m.p, 'w1')
      const r = await register(m.p, fleet, { nodeId: 'w1', version: VERSION })
      expect(r.status).toBe(403)
      expect(await r.text()).toContain('must use its own credential')
      const node = (await m.p.client.nodes.list()).nodes.find((n) => n.name === 'w1')!
      expect(node.auth).toBe('enrolled')
      expect((await register(m.p, w1)).status).toBe(200)
      // a name of its own still registers as legacy
      expect((await register(m.p, fleet, { nodeId: 'old-1', version: VERSION })).status).toBe(200)
    })

    test('with --node-auth enrolled it is refused outright, and registers nothing', async () => {
      await using m = await withMode('enrolled')
      const r = await register(m.p, fleet, { nodeId: 'old-1', version: VERSION })
      expect(r.status).toBe(403)
      expect((await m.p.client.nodes.list()).nodes.map((n) => n.name)).not.toContain('old-1')
    })
  })
})

describe('tokens an operator act ends', () => {
  test('a second rebind ends the first rebind token: it no longer enrolls, the newest does', async () => {
    await using p = await startPlatform({ remoteDispatch: true })
    await enrolled(p, 'w1')
    const first = await p.client.nodes.rebind('w1')
    const second = await p.client.nodes.rebind('w1')
    const stale = await enrollWith(p, 'w1', first.token)
    expect(stale.status).toBe(403)
    expect((await enrollWith(p, 'w1', second.token)).status).toBe(200)
  })

  test('an enrollment issued again with replace ends the one before it', async () => {
    await using p = await startPlatform({ remoteDispatch: true })
    const first = await p.client.nodes.createEnrollment({ nodeId: 'w5' })
    const second = await p.client.nodes.createEnrollment({ nodeId: 'w5', replace: true })
    expect((await enrollWith(p, 'w5', first.token)).status).toBe(403)
    expect((await enrollWith(p, 'w5', second.token)).status).toBe(200)
  })
})
