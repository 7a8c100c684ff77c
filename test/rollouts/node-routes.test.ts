// The node side of rollouts, attacked through the real routes: only a node's
// own credential reads its directive and the releases, and reports; a revoked
// node, an operator token, a join token and no credential are refused; a
// report can only move the reporting node's own row, and only for the release
// it was told; what a node says it runs is checked for shape.
import { describe, expect, test } from 'bun:test'
import { createHash } from 'node:crypto'
import { zstdDecompressSync } from 'node:zlib'
import { VERSION } from '../../src/version.ts'
import { startPlatform } from '../helpers/platform.ts'
import { fakeRelease, SimNode } from '../helpers/sim-nodes.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

const dir = tmpDir('muster-rollout-routes-')

describe('node routes of rollouts', () => {
  test('who may call them: the node itself; a revoked node, an operator, a join token, nobody: refused', async () => {
    await using p = await startPlatform({ remoteDispatch: true })
    const rel = await fakeRelease(p, dir.path, VERSION)
    const w1 = await new SimNode(p, 'w1').enroll()
    const join = (await p.client.nodes.createJoinToken({ maxUses: 1 })).token
    const routes: [string, string, unknown?][] = [
      ['GET', '/api/v1/nodes/self/directive'],
      ['GET', `/api/v1/nodes/self/release/${rel.sha256}`],
      ['POST', '/api/v1/nodes/self/update', { rollout: 'aaaaaaaaaaaa', sha256: rel.sha256, state: 'done' }],
      ['POST', '/api/v1/nodes/self/agent', { arch: 'x64', version: '0.0.1', binarySha256: 'a'.repeat(64), sequence: 0, skipped: [] }],
    ]
    const call = (bearer: string | undefined, [method, path, body]: [string, string, unknown?]) =>
      fetch(`${p.url}${path}`, { method, headers: { ...(bearer ? { authorization: `Bearer ${bearer}` } : {}), ...(body ? { 'content-type': 'application/json' } : {}) }, body: body ? JSON.stringify(body) : undefined })
    for (const r of routes) {
      expect(`${r[1]} ${(await call(w1.credential, r)).status}`).toBe(`${r[1]} 200`)
      expect([401, 403]).toContain((await call(p.token, r)).status)
      expect((await call(join, r)).status).toBe(403)
      expect((await call(undefined, r)).status).toBe(401)
    }
    const full = await call(w1.credential, routes[1]!)
    expect(full.headers.get('x-muster-encoding')).toBe('zstd')
    expect((await call(w1.credential, ['GET', `/api/v1/nodes/self/release/${'b'.repeat(64)}`])).status).toBe(404)
    expect((await call(w1.credential, ['POST', '/api/v1/nodes/self/agent', { arch: 'mips', version: '0.0.1', binarySha256: 'a', sequence: -1, skipped: [] }])).status).toBe(400)
    await p.client.nodes.revoke('w1')
    for (const r of routes) expect((await call(w1.credential, r)).status).toBe(403)
  })

  test('a node that runs a release the Platform holds downloads a delta against it, which its binary decodes; else the compressed binary', async () => {
    await using p = await startPlatform({ remoteDispatch: true })
    const old = await fakeRelease(p, dir.path, '0.0.4')
    const next = await fakeRelease(p, dir.path, VERSION, old.key)
    const w1 = await new SimNode(p, 'w1').enroll()
    const get = (from?: string) => fetch(`${p.url}/api/v1/nodes/self/release/${next.sha256}${from ? `?from=${from}` : ''}`, { headers: { authorization: `Bearer ${w1.credential}` } })
    const full = await get()
    expect(full.headers.get('x-muster-encoding')).toBe('zstd')
    const raw = new Uint8Array(zstdDecompressSync(new Uint8Array(await full.arrayBuffer())))
    expect(createHash('sha256').update(raw).digest('hex')).toBe(next.sha256)
    const base = new Uint8Array(zstdDecompressSync(new Uint8Array(await (await fetch(`${p.url}/api/v1/nodes/self/release/${old.sha256}`, { headers: { authorization: `Bearer ${w1.credential}` } })).arrayBuffer())))
    const delta = await get(old.sha256)
    expect(delta.headers.get('x-muster-encoding')).toBe('zstd-delta')
    expect(delta.headers.get('x-muster-delta-from')).toBe(old.sha256)
    const patch = new Uint8Array(await delta.arrayBuffer())
    expect(patch.byteLength).toBeLessThan(raw.byteLength / 4)
    const rebuilt = zstdDecompressSync(patch, { dictionary: base } as never)
    expect(createHash('sha256').update(rebuilt).digest('hex')).toBe(next.sha256)
    // from a binary the Platform never released: the whole (compressed) binary
    expect((await get('d'.repeat(64))).headers.get('x-muster-encoding')).toBe('zstd')
  })

  test("a node's report moves only its own row, for the release it was told; a report for another rollout or release changes nothing", async () => {
    await using p = await startPlatform({ remoteDispatch: true })
    const rel = await fakeRelease(p, dir.path, VERSION)
    const [w1, w2] = await Promise.all(['w1', 'w2'].map((n) => new SimNode(p, n).enroll()))
    for (const n of [w1!, w2!]) {
      await n.facts()
      await n.beat()
    }
    const r = await p.client.rollouts.start({ version: VERSION, canaries: 1 })
    await waitFor(async () => (await p.client.rollouts.status(r.id)).nodes.find((n) => n.name === 'w1')!.state === 'downloading', { what: 'w1 told' })
    // w2 (not told) claims done, for its own row and release: nothing moves
    expect(await w2!.report({ rollout: r.id, sha256: rel.sha256, state: 'done' })).toBe(200)
    // w1 reports done for another release, and for a made-up rollout: nothing moves
    expect(await w1!.report({ rollout: r.id, sha256: 'c'.repeat(64), state: 'done' })).toBe(200)
    expect(await w1!.report({ rollout: 'aaaaaaaaaaaa', sha256: rel.sha256, state: 'done' })).toBe(200)
    const s = await p.client.rollouts.status(r.id)
    expect(s.nodes.map((n) => [n.name, n.state])).toEqual([['w1', 'downloading'], ['w2', 'pending']])
    // the heartbeat of the told node says update; the other's does not
    await waitFor(async () => (await w1!.beat()).update === true, { what: "w1's heartbeat answer saying update" })
    expect((await w2!.beat()).update).toBeUndefined()
    expect(await w2!.directive()).toBeNull()
    expect(((await w1!.directive()) as { payload: { node: string } }).payload.node).toBe('w1')
  })
})
