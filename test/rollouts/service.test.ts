// Rollouts on a real Platform with simulated nodes (test/helpers/sim-nodes.ts):
// who may start and steer them, the Platforms-first rule, canaries first,
// max-unavailable never exceeded, a failed canary halting it, pause/resume/
// cancel, a node joining mid-way, silence, a restart resuming, and the audit.
import { afterAll, describe, expect, test } from 'bun:test'
import { MusterError } from '../../src/errors.ts'
import { IN_FLIGHT } from '../../src/store/rollouts.ts'
import { startPlatform, type TestPlatform } from '../helpers/platform.ts'
import { fakeRelease, SimNode } from '../helpers/sim-nodes.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'
import { VERSION } from '../../src/version.ts'

const dir = tmpDir('muster-rollouts-')
afterAll(() => dir[Symbol.dispose]())

process.env.MUSTER_ROLLOUT_TICK_MS = '100'

async function fleet(p: TestPlatform, names: string[], labels: (i: number) => Record<string, string> = () => ({})): Promise<SimNode[]> {
  const nodes = await Promise.all(names.map((n, i) => new SimNode(p, n, '0.0.1', labels(i)).enroll()))
  for (const n of nodes) {
    await n.facts()
    await n.beat()
  }
  return nodes
}

/** Drives every node (a heartbeat round each 50 ms) until `until` holds; samples the in-flight count each round. */
async function drive(p: TestPlatform, nodes: SimNode[], until: () => Promise<boolean>, opts: { timeoutMs?: number; stepMs?: number; sample?: (inFlight: number, told: string[]) => void } = {}): Promise<void> {
  const keys = (await p.client.releases.list()).keys.map((k) => ({ kid: k.kid, publicKey: k.publicKey }))
  const trust = async () => (await p.client.nodes.trust()).trustKeys
  const deadline = Date.now() + (opts.timeoutMs ?? 30_000)
  for (;;) {
    await Promise.all(nodes.map((n) => n.round(trust, keys, opts.stepMs ?? 0, p.platform.now)))
    if (opts.sample) {
      const s = await p.client.rollouts.status()
      opts.sample(s.nodes.filter((n) => IN_FLIGHT.includes(n.state)).length, s.nodes.filter((n) => n.state !== 'pending').map((n) => n.name))
    }
    if (await until()) return
    if (Date.now() > deadline) throw new Error(`rollout did not get there: ${JSON.stringify((await p.client.rollouts.status()).nodes.map((n) => [n.name, n.state]))}`)
    await Bun.sleep(50)
  }
}

const state = async (p: TestPlatform) => (await p.client.rollouts.status()).state

describe('rollouts', () => {
  test('who may start and steer: superadmin starts, pauses, resumes, cancels; an operator may not; a viewer reads', async () => {
    await using p = await startPlatform({ remoteDispatch: true })
    await fakeRelease(p, dir.path, VERSION)
    await fleet(p, ['w1'])
    const operator = p.clientWith((await p.platform.auth.mintApiToken({ name: 'op', role: 'operator' })).token)
    const viewer = p.clientWith((await p.platform.auth.mintApiToken({ name: 'v', role: 'viewer' })).token)
    await expect(operator.rollouts.start({ version: VERSION })).rejects.toMatchObject({ code: 'forbidden', message: 'Permission server.releases.manage is required.' })
    await expect(viewer.releases.startUpload(10)).rejects.toMatchObject({ code: 'forbidden' })
    const r = await p.client.rollouts.start({ version: VERSION })
    expect((await viewer.rollouts.status(r.id)).id).toBe(r.id)
    expect((await viewer.releases.list()).releases).toHaveLength(1)
    await expect(viewer.rollouts.pause(r.id)).rejects.toMatchObject({ code: 'forbidden' })
    await expect(operator.rollouts.cancel(r.id)).rejects.toMatchObject({ code: 'forbidden' })
    expect((await p.client.rollouts.pause(r.id)).state).toBe('paused')
    expect((await p.client.rollouts.resume(r.id)).state).toBe('running')
    expect((await p.client.rollouts.cancel(r.id)).state).toBe('cancelled')
    await expect(p.client.rollouts.resume(r.id)).rejects.toMatchObject({ code: 'conflict' })
  })

  test('refused: no release of the version, a version newer than a live Platform (naming it and how to upgrade), a second rollout', async () => {
    await using p = await startPlatform({ remoteDispatch: true })
    await fleet(p, ['w1'])
    await expect(p.client.rollouts.start({ version: VERSION })).rejects.toMatchObject({ code: 'not-found', message: `No release of ${VERSION}: add one first (muster releases add BINARY --key FILE).` })
    const k = await fakeRelease(p, dir.path, '99.0.0')
    const e = (await p.client.rollouts.start({ version: '99.0.0' }).catch((x) => x)) as MusterError
    expect(e.code).toBe('conflict')
    expect(e.message).toContain(`Upgrade the Platform first: ${p.platform.publicUrl} (${VERSION}) runs a version older than 99.0.0`)
    expect(e.message).toContain('sudo ./install.sh --role platform --binary muster-99.0.0')
    await fakeRelease(p, dir.path, VERSION, k.key)
    const r = await p.client.rollouts.start({ version: VERSION })
    await expect(p.client.rollouts.start({ version: VERSION })).rejects.toMatchObject({ code: 'conflict', message: expect.stringContaining(`Rollout ${r.id} (${VERSION}) is running: one rollout at a time.`) })
  })

  test('canaries first (one per group), then never more than max-unavailable between told and done; every step audited', async () => {
    await using p = await startPlatform({ remoteDispatch: true })
    await fakeRelease(p, dir.path, VERSION)
    const nodes = await fleet(p, ['a1', 'a2', 'a3', 'a4', 'b1', 'b2', 'b3'], (i) => ({ zone: i < 4 ? 'a' : 'b' }))
    const r = await p.client.rollouts.start({ version: VERSION, maxUnavailable: '2' })
    expect(r.nodes.filter((n) => n.canary).map((n) => n.name)).toEqual(['a1', 'b1'])
    let max = 0
    const order: string[] = []
    await drive(p, nodes, async () => (await state(p)) === 'done', {
      stepMs: 30,
      sample: (inFlight, told) => {
        max = Math.max(max, inFlight)
        for (const t of told) if (!order.includes(t)) order.push(t)
      },
    })
    expect(max).toBeLessThanOrEqual(2)
    expect(max).toBeGreaterThan(0)
    expect(order.slice(0, 2).sort()).toEqual(['a1', 'b1'])
    const done = await p.client.rollouts.status(r.id)
    expect(done.nodes.every((n) => n.state === 'done' && n.to === VERSION && n.from === '0.0.1')).toBe(true)
    const audit = await p.platform.audit.search({ action: 'rollout', limit: 100 })
    const actions = audit.map((e) => `${e.action} ${e.target}`)
    for (const n of nodes) {
      expect(actions).toContain(`rollout.node.told ${n.name}`)
      expect(actions).toContain(`rollout.node.done ${n.name}`)
    }
    expect(actions).toContain(`rollout.done ${VERSION}`)
    expect(actions).toContain(`rollout.start ${VERSION} ${r.id}`)
    expect(audit.find((e) => e.action === 'rollout.node.told')!.principal).toBe(`rollout ${r.id}`)
  })

  test('a failed canary halts the rollout with its reason and no other node is told; resume forgives it; cancel skips the rest', async () => {
    await using p = await startPlatform({ remoteDispatch: true })
    await fakeRelease(p, dir.path, VERSION)
    const nodes = await fleet(p, ['w1', 'w2', 'w3', 'w4'])
    nodes[0]!.play = 'rolled-back'
    const r = await p.client.rollouts.start({ version: VERSION, maxUnavailable: '2' })
    await drive(p, nodes, async () => (await state(p)) === 'halted')
    const halted = await p.client.rollouts.status(r.id)
    expect(halted.reason).toBe('canary w1 rolled-back: the new Agent did not heartbeat at 0.1.0 within 60 s')
    expect(halted.nodes.filter((n) => n.name !== 'w1').every((n) => n.state === 'pending')).toBe(true)
    expect(nodes.slice(1).every((n) => n.directives.length === 0)).toBe(true)
    // a node not told gets no directive even when it asks
    expect(await nodes[1]!.directive()).toBeNull()
    await p.client.rollouts.resume(r.id)
    nodes[2]!.play = 'failed'
    await drive(p, nodes, async () => (await state(p)) === 'halted' && (await p.client.rollouts.status(r.id)).nodes.some((n) => n.name === 'w3' && n.state === 'failed'))
    expect((await p.client.rollouts.status(r.id)).reason).toBe('1 node(s) failed since the rollout was resumed, more than the 0 allowed (last: w3 failed: no space left on the device)')
    const c = await p.client.rollouts.cancel(r.id)
    expect(c.state).toBe('cancelled')
    expect(c.nodes.filter((n) => n.state === 'pending')).toEqual([])
    expect(c.nodes.find((n) => n.error === 'the rollout was cancelled')).toBeDefined()
    // no rollout, no update
    expect((await nodes[3]!.beat()).update).toBeUndefined()
  })

  test('a node that joins during the rollout gets the target; a told node that stays silent fails; one not heartbeating at its turn is skipped', async () => {
    await using p = await startPlatform({ remoteDispatch: true, nodeStaleAfterMs: 60_000 })
    await fakeRelease(p, dir.path, VERSION)
    const nodes = await fleet(p, ['w1', 'w2', 'w3'])
    nodes[1]!.play = 'silent'
    const r = await p.client.rollouts.start({ version: VERSION, maxUnavailable: '1', maxFailures: 5 })
    await drive(p, [nodes[0]!], async () => (await p.client.rollouts.status(r.id)).nodes[0]!.state === 'done')
    const late = (await fleet(p, ['w9']))[0]!
    await waitFor(async () => (await p.client.rollouts.status(r.id)).nodes.some((n) => n.name === 'w9'), { what: 'w9 in the rollout' })
    // w2 is told and says nothing; w3 stops heartbeating
    await drive(p, [nodes[1]!], async () => nodes[1]!.directives.length > 0)
    p.advance(21 * 60_000)
    await late.beat() // w9 heartbeats at once after the jump of the clock; w3 never does
    await waitFor(async () => (await p.client.rollouts.status(r.id)).nodes.find((n) => n.name === 'w2')!.state === 'failed', { what: 'w2 failed' })
    expect((await p.client.rollouts.status(r.id)).nodes.find((n) => n.name === 'w2')!.error).toBe('no report from the node for 20 min')
    await drive(p, [late], async () => (await p.client.rollouts.status(r.id)).nodes.every((n) => ['done', 'failed', 'skipped'].includes(n.state)))
    const end = await p.client.rollouts.status(r.id)
    expect(end.nodes.find((n) => n.name === 'w3')).toMatchObject({ state: 'skipped', error: 'not heartbeating when its turn came: it keeps its version' })
    expect(end.nodes.find((n) => n.name === 'w9')).toMatchObject({ state: 'done', to: VERSION })
    await waitFor(async () => (await state(p)) === 'done', { what: 'done' })
  })

  test('a Platform restart resumes where the rollout was, in the same order', async () => {
    const data = tmpDir('muster-rollout-restart-')
    try {
      let p = await startPlatform({ remoteDispatch: true, dataDir: data.path })
      await fakeRelease(p, dir.path, VERSION)
      const names = ['w1', 'w2', 'w3', 'w4']
      let nodes = await fleet(p, names)
      const r = await p.client.rollouts.start({ version: VERSION })
      await drive(p, nodes, async () => (await p.client.rollouts.status(r.id)).nodes.filter((n) => n.state === 'done').length >= 2)
      const before = (await p.client.rollouts.status(r.id)).nodes.map((n) => n.name)
      const creds = nodes.map((n) => n.credential)
      await p.close()
      p = await startPlatform({ remoteDispatch: true, dataDir: data.path })
      nodes = names.map((n, i) => Object.assign(new SimNode(p, n), { credential: creds[i]! }))
      for (const n of nodes) await n.beat()
      await drive(p, nodes, async () => (await state(p)) === 'done')
      const after = await p.client.rollouts.status(r.id)
      expect(after.nodes.map((n) => n.name)).toEqual(before)
      expect(after.nodes.every((n) => n.state === 'done')).toBe(true)
      await p.close()
    } finally {
      data[Symbol.dispose]()
    }
  })
})
