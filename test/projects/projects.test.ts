import { describe, expect, test } from 'bun:test'
import { ENGINES } from '../helpers/postgres.ts'
import { onEngine, startPlatform, type TestPlatform } from '../helpers/platform.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import { VERSION } from '../../src/version.ts'
import { checkAssignments } from '../../src/signed/documents.ts'
import type { SignedAssignments } from '../../src/wire/projects.ts'
import { generateSigningKey, signDomain, canonicalJson } from '../../src/crypto/ed25519.ts'
import { b64url } from '../../src/crypto/tokens.ts'
import { createClient } from '../../src/client/index.ts'
import { waitFor } from '../helpers/tmp.ts'

async function joinNode(p: TestPlatform, name: string, capacity = { cpuMillis: 2000, memoryMB: 2048 }) {
  const e = await p.client.nodes.createEnrollment({ nodeId: name })
  const r = await enrollRaw(p.url, { token: e.token, nodeId: name, certPem: (await newCert(name)).certPem, version: VERSION })
  const { credential, trustKeys } = (await r.json()) as { credential: string; trustKeys: SignedAssignments extends never ? never : { kid: string; publicKey: string; notBefore: string; notAfter: string }[] }
  const node = createClient({ url: p.url, token: credential })
  await node.nodes.register({ version: VERSION, capacity })
  return { node, credential, trustKeys }
}

describe.each(ENGINES)('on %s', (engine) => {
  onEngine(engine)

  describe('projects', () => {
    test('deploy spreads replicas over ready nodes and each node gets a signed document it can verify', async () => {
      await using p = await startPlatform({ remoteDispatch: true })
      const a = await joinNode(p, 'a')
      const b = await joinNode(p, 'b')
      const web = await p.client.projects.deploy({ name: 'web', command: ['sleep', '60'], replicas: 2, cpu: 100, memory: 64 })
      expect(web.placements.map((x) => x.node).sort()).toEqual(['a', 'b'])
      expect(web.placements.every((x) => x.state === 'pending')).toBe(true)
      const docA = await a.node.projects.assignments()
      const check = checkAssignments(docA, a.trustKeys, 'a', 0)
      expect(check.ok).toBe(true)
      expect(docA.payload.replicas).toHaveLength(1)
      expect(docA.payload.replicas[0]).toMatchObject({ project: 'web', command: ['sleep', '60'] })
      // the document for a does not pass as b's
      expect(checkAssignments(docA, b.trustKeys, 'b', 0)).toMatchObject({ ok: false })
      // the node reports its replica running; show says so
      await a.node.nodes.register({ replicas: [{ project: 'web', replica: docA.payload.replicas[0]!.replica, state: 'running', revision: 1 }] })
      const shown = await p.client.projects.show('web')
      expect(shown.placements.find((x) => x.node === 'a')?.state).toBe('running')
      // a node credential is not an operator
      await expect(b.node.projects.list()).rejects.toMatchObject({ code: 'forbidden' })
    })

    test('a node with replicas cannot be removed; removing the project frees it and empties its document', async () => {
      await using p = await startPlatform({ remoteDispatch: true })
      const a = await joinNode(p, 'a')
      await p.client.projects.deploy({ name: 'web', command: ['sleep', '60'], replicas: 1 })
      await expect(p.client.nodes.remove('a')).rejects.toMatchObject({ code: 'node-in-use' })
      const before = await a.node.projects.assignments()
      const waiting = a.node.projects.assignments(before.payload.revision, 10)
      await p.client.projects.remove('web')
      const after = await waiting // the long poll wakes on the change
      expect(after.payload.revision).toBe(before.payload.revision + 1)
      expect(after.payload.replicas).toEqual([])
      // free now, but still heartbeating: healthy, so removed only with force
      await expect(p.client.nodes.remove('a')).rejects.toMatchObject({ code: 'node-healthy' })
      expect((await p.client.nodes.remove('a', { force: true })).removed).toBe(true)
    })

    test('shortfall: insufficient capacity is counted; no eligible node is not', async () => {
      await using p = await startPlatform({ remoteDispatch: true })
      const none = await p.client.projects.deploy({ name: 'lonely', command: ['true'], replicas: 2 })
      expect(none).toMatchObject({ shortfall: 0, reason: 'no-eligible-node' })
      await joinNode(p, 'small', { cpuMillis: 1000, memoryMB: 1024 })
      await waitFor(async () => (await p.client.projects.show('lonely')).reason === null)
      const big = await p.client.projects.deploy({ name: 'big', command: ['true'], replicas: 3, cpu: 400 })
      // 1000m less lonely's 2 × 100m leaves 800m: two 400m replicas fit, the third does not
      expect(big).toMatchObject({ shortfall: 1, reason: 'insufficient-capacity' })
      expect(await p.client.projects.shortfall()).toEqual({ total: 1, projects: { big: 1 } })
    })

    test('draining a node moves its replicas to another', async () => {
      await using p = await startPlatform({ remoteDispatch: true })
      await joinNode(p, 'a')
      await p.client.projects.deploy({ name: 'web', command: ['sleep', '60'], replicas: 1 })
      const first = (await p.client.projects.show('web')).placements[0]!.node!
      await joinNode(p, first === 'a' ? 'b' : 'a')
      await p.client.nodes.drain(first)
      const moved = (await p.client.projects.show('web')).placements[0]!.node
      expect(moved).not.toBe(first)
      expect(moved).not.toBeNull()
    })

    test('a node unreachable past the grace period loses its replicas; within it, it keeps them', async () => {
      await using p = await startPlatform({ remoteDispatch: true, nodeStaleAfterMs: 30_000, rescheduleGraceMs: 60_000 })
      await joinNode(p, 'a')
      await p.client.projects.deploy({ name: 'web', command: ['sleep', '60'], replicas: 1 })
      const b = await joinNode(p, 'b')
      expect((await p.client.projects.show('web')).placements[0]!.node).toBe('a')
      p.advance(31_000) // a is unreachable now, but within its grace
      await b.node.nodes.register({})
      await p.platform.projects.reconcile()
      expect((await p.client.projects.show('web')).placements[0]!.node).toBe('a')
      p.advance(60_000) // past the grace
      await b.node.nodes.register({})
      await p.platform.projects.reconcile()
      expect((await p.client.projects.show('web')).placements[0]!.node).toBe('b')
    })

    test('a node whose reported capacity shrinks keeps only the replicas that still fit; the rest move or fall short', async () => {
      await using p = await startPlatform({ remoteDispatch: true })
      const a = await joinNode(p, 'a', { cpuMillis: 1000, memoryMB: 1024 })
      await p.client.projects.deploy({ name: 'web', command: ['sleep', '60'], replicas: 3, cpu: 300, memory: 100 })
      expect((await p.client.projects.show('web')).placements.map((x) => x.node)).toEqual(['a', 'a', 'a'])
      // a now reports room for one 300m replica only
      await a.node.nodes.register({ capacity: { cpuMillis: 400, memoryMB: 1024 } })
      await p.platform.projects.reconcile()
      const shrunk = await p.client.projects.show('web')
      expect(shrunk.placements.filter((x) => x.node === 'a')).toHaveLength(1)
      expect(shrunk).toMatchObject({ shortfall: 2, reason: 'insufficient-capacity' })
      expect((await a.node.projects.assignments()).payload.replicas).toHaveLength(1)
      // a second node with room takes the two that no longer fit on a
      await joinNode(p, 'b', { cpuMillis: 1000, memoryMB: 1024 })
      await p.platform.projects.reconcile()
      const moved = await p.client.projects.show('web')
      expect(moved.placements.map((x) => x.node).sort()).toEqual(['a', 'b', 'b'])
      expect(moved.shortfall).toBe(0)
    })

    test('a redeploy rolls: the old revision stays assigned until the new replica runs', async () => {
      await using p = await startPlatform({ remoteDispatch: true })
      const a = await joinNode(p, 'a')
      await p.client.projects.deploy({ name: 'web', command: ['sleep', '60'], replicas: 1 })
      await a.node.nodes.register({ replicas: [{ project: 'web', replica: 0, state: 'running', revision: 1 }] })
      const v2 = await p.client.projects.deploy({ name: 'web', command: ['sleep', '61'], replicas: 1 })
      expect(v2.revision).toBe(2)
      let doc = await a.node.projects.assignments()
      expect(doc.payload.replicas.map((r) => r.revision).sort()).toEqual([1, 2])
      await a.node.nodes.register({ replicas: [{ project: 'web', replica: 0, state: 'running', revision: 1 }, { project: 'web', replica: 0, state: 'running', revision: 2 }] })
      await waitFor(async () => {
        doc = await a.node.projects.assignments()
        return doc.payload.replicas.length === 1
      })
      expect(doc.payload.replicas[0]!.revision).toBe(2)
    })
  })

  describe('assignment signatures', () => {
    const trustKey = () => {
      const k = generateSigningKey()
      const now = Date.now()
      return { k, published: { kid: 'k1', publicKey: b64url(k.publicKey), notBefore: new Date(now - 1000).toISOString(), notAfter: new Date(now + 86400_000).toISOString() } }
    }
    const sign = (privateKey: Uint8Array, payload: SignedAssignments['payload'], kid = 'k1', domain = 'muster assignments v1'): SignedAssignments => ({ payload, kid, signature: b64url(signDomain(domain, privateKey, canonicalJson(payload))) })
    const payload = (node = 'a', revision = 5) => ({ node, revision, issuedAt: new Date().toISOString(), replicas: [] })

    test('accepts a correctly signed, current document for this node', () => {
      const { k, published } = trustKey()
      expect(checkAssignments(sign(k.privateKey, payload()), [published], 'a', 5).ok).toBe(true)
    })

    test('refuses unsigned, wrongly signed, other-domain, other-node and older documents', () => {
      const { k, published } = trustKey()
      const other = generateSigningKey()
      const reason = (doc: unknown, current = 0) => {
        const r = checkAssignments(doc, [published], 'a', current)
        return r.ok ? 'accepted' : r.reason
      }
      expect(reason({ payload: payload() })).toContain('unsigned')
      expect(reason(sign(other.privateKey, payload()))).toBe('bad signature')
      expect(reason(sign(k.privateKey, payload(), 'k1', 'muster something else v1'))).toBe('bad signature')
      expect(reason(sign(k.privateKey, payload(), 'k2'))).toContain('unknown key')
      expect(reason(sign(k.privateKey, payload('b')))).toContain('for node b')
      expect(reason(sign(k.privateKey, payload('a', 4)), 5)).toContain('older')
      const tampered = sign(k.privateKey, payload())
      tampered.payload.replicas = [{ project: 'evil', replica: 0, revision: 1, command: ['rm', '-rf', '/'], env: {}, cpu: 1, memory: 1 }]
      expect(reason(tampered)).toBe('bad signature')
    })
  })

  describe('the local node', () => {
    test('runs its replicas in-process, and runs them again after the Platform restarts', { timeout: 180_000 }, async () => {
      const { tmpDir } = await import('../helpers/tmp.ts')
      using dir = tmpDir()
      const marker = `muster-local-${crypto.randomUUID().slice(0, 8)}`
      // `sh` forks before `sleep` execs: for a moment two processes carry the marker, so count once that settles.
      const pids = () => Bun.spawnSync(['pgrep', '-f', marker]).stdout.toString().trim().split('\n').filter(Boolean)
      const onePid = () => waitFor(() => pids().length === 1, { what: 'exactly one replica process' })
      const first = await startPlatform({ dataDir: dir.path, localNode: true })
      try {
        await first.client.projects.deploy({ name: 'loc', replicas: 1, command: ['sh', '-c', `sleep 300; true ${marker}`] })
        await waitFor(async () => (await first.client.projects.show('loc')).placements[0]?.state === 'running', { what: 'local replica running' })
        expect((await first.client.projects.show('loc')).placements[0]!.node).toBe('local')
        await onePid()
      } finally {
        await first.close()
      }
      expect(pids()).toHaveLength(0) // stopping the Platform stops the local node's replicas
      const second = await startPlatform({ dataDir: dir.path, localNode: true })
      try {
        await waitFor(async () => (await second.client.projects.show('loc')).placements[0]?.state === 'running', { what: 'local replica running again' })
        await onePid()
      } finally {
        await second.close()
      }
      expect(pids()).toHaveLength(0)
    })
  })
})
