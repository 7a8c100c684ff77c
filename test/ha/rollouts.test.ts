// A rollout with two Platforms on one PostgreSQL (docs/upgrading.md): both
// read the same plan in the same order; only the holder of the rollouts lease
// tells nodes; nodes heartbeating and reporting to the other Platform are told
// all the same (the hint follows the store); and when the holder stops, the
// other takes the lease and carries the rollout on where it was.
import { describe, expect, test } from 'bun:test'
import { VERSION } from '../../src/version.ts'
import { fakeRelease, SimNode } from '../helpers/sim-nodes.ts'
import type { TestPlatform } from '../helpers/platform.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'
import { startPair } from './pair.ts'

process.env.MUSTER_ROLLOUT_TICK_MS = '100'
const dir = tmpDir('muster-ha-rollouts-')

describe('a rollout on two Platforms sharing PostgreSQL', () => {
  test('one driver, one order on both, nodes on either Platform told; the other carries it on when the holder stops', { timeout: 120_000 }, async () => {
    await using pair = await startPair()
    const { a, b } = pair
    await fakeRelease(a, dir.path, VERSION)
    // Every node talks to b; the rollout is started on a.
    const nodes = await Promise.all(['w1', 'w2', 'w3', 'w4', 'w5'].map((n) => new SimNode(b, n).enroll()))
    for (const n of nodes) {
      await n.facts()
      await n.beat()
    }
    await waitFor(() => ['w1', 'w2', 'w3', 'w4', 'w5'].every((n) => a.platform.fabric.registry.get(n)?.lastSeenAt), { what: 'a seeing the nodes' })
    const r = await a.client.rollouts.start({ version: VERSION, maxUnavailable: '1' })
    const order = (p: TestPlatform) => p.client.rollouts.status(r.id).then((s) => s.nodes.map((n) => n.name))
    expect(await order(b)).toEqual(await order(a))
    const holds = (p: TestPlatform) => p.platform.ctx.leases.lease('rollouts').held
    const holder = await waitFor(() => [a, b].find(holds), { what: 'a rollouts lease holder' })
    expect([a, b].filter(holds)).toHaveLength(1)
    const keys = (await a.client.releases.list()).keys.map((k) => ({ kid: k.kid, publicKey: k.publicKey }))
    const trust = async () => (await b.client.nodes.trust()).trustKeys
    const round = () => Promise.all(nodes.map((n) => n.round(trust, keys, 0, b.platform.now)))
    await waitFor(async () => {
      await round()
      return (await b.client.rollouts.status(r.id)).counts.done >= 2
    }, { timeoutMs: 30_000, what: 'two nodes done' })
    // The holder stops; the other takes the lease and finishes.
    await holder.close()
    const other = holder === a ? b : a
    const nodesOn = other === b ? nodes : await Promise.all(nodes.map(async (n) => Object.assign(new SimNode(other, n.name), { credential: n.credential, runs: n.runs, sha: n.sha })))
    await waitFor(async () => {
      await Promise.all(nodesOn.map((n) => n.round(async () => (await other.client.nodes.trust()).trustKeys, keys, 0, other.platform.now)))
      return (await other.client.rollouts.status(r.id)).state === 'done'
    }, { timeoutMs: 60_000, what: 'the rollout done on the Platform left' })
    expect(holds(other)).toBe(true)
    const s = await other.client.rollouts.status(r.id)
    expect(s.nodes.every((n) => n.state === 'done')).toBe(true)
    // One driver at a time: each node was told exactly once.
    const told = (await other.platform.audit.search({ action: 'rollout.node.told', limit: 100 })).map((e) => e.target).sort()
    expect(told).toEqual(['w1', 'w2', 'w3', 'w4', 'w5'])
  })
})
