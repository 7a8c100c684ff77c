import { describe, expect, test } from 'bun:test'
import { place, type PlacementNode } from '../../src/projects/placement.ts'

const node = (name: string, cpuMillis = 2000, memoryMB = 2048, more: Partial<PlacementNode> = {}): PlacementNode => ({ name, cpuMillis, memoryMB, schedulable: true, keeps: true, ...more })
const web = (replicas: number, cpu = 100, memory = 64) => ({ name: 'web', replicas, cpu, memory })

describe('placement', () => {
  test('spreads replicas across nodes', () => {
    const r = place([web(4)], [node('a'), node('b')], [])
    const perNode = r.placements.reduce<Record<string, number>>((m, p) => ((m[p.node!] = (m[p.node!] ?? 0) + 1), m), {})
    expect(perNode).toEqual({ a: 2, b: 2 })
    expect(r.shortfall.size).toBe(0)
  })

  test('is deterministic for the same inputs, whatever the order given', () => {
    const nodes = [node('c', 3000), node('a'), node('b', 1000)]
    const projects = [web(5), { name: 'api', replicas: 3, cpu: 500, memory: 128 }]
    const one = place(projects, nodes, [])
    const two = place([...projects].reverse(), [...nodes].reverse(), [])
    expect(two.placements).toEqual(one.placements)
  })

  test('respects CPU and memory; what fits nowhere is an insufficient-capacity shortfall', () => {
    const r = place([web(3, 1500, 64)], [node('a', 2000), node('b', 2000)], [])
    expect(r.placements.filter((p) => p.node).length).toBe(2)
    expect(r.shortfall.get('web')).toBe(1)
    expect(r.reasons.get('web')).toBe('insufficient-capacity')
    const mem = place([web(2, 10, 1500)], [node('a', 2000, 2048)], [])
    expect(mem.shortfall.get('web')).toBe(1)
  })

  test('with no eligible node the reason is no-eligible-node and nothing counts as shortfall', () => {
    const r = place([web(2)], [node('a', 2000, 2048, { schedulable: false, keeps: false })], [])
    expect(r.placements.every((p) => p.node === null)).toBe(true)
    expect(r.reasons.get('web')).toBe('no-eligible-node')
    expect(r.shortfall.size).toBe(0)
    expect(place([web(1)], [], []).reasons.get('web')).toBe('no-eligible-node')
  })

  test('replicas stay where they are while their node keeps them', () => {
    const first = place([web(2)], [node('a'), node('b')], [])
    const again = place([web(2)], [node('a'), node('b'), node('aa', 8000, 8192)], first.placements)
    expect(again.placements).toEqual(first.placements)
  })

  test('draining a node moves its replicas elsewhere', () => {
    const first = place([web(2)], [node('a'), node('b'), node('c')], [])
    const onA = first.placements.find((p) => p.node === 'a')!
    const drained = place([web(2)], [node('a', 2000, 2048, { schedulable: false, keeps: false }), node('b'), node('c')], first.placements)
    expect(drained.placements.some((p) => p.node === 'a')).toBe(false)
    expect(drained.placements.find((p) => p.replica === onA.replica)!.node).not.toBeNull()
    // the replica that was not on a stays put
    const other = first.placements.find((p) => p.node !== 'a')!
    expect(drained.placements.find((p) => p.replica === other.replica)!.node).toBe(other.node)
  })

  test('an unreachable node within its grace keeps its replicas but gets no new ones', () => {
    const first = place([web(1)], [node('a'), node('b')], [])
    const holder = first.placements[0]!.node!
    const quiet = [node('a', 2000, 2048, { schedulable: holder !== 'a', keeps: true }), node('b', 2000, 2048, { schedulable: holder !== 'b', keeps: true })]
    const r = place([web(2)], quiet, first.placements)
    expect(r.placements[0]!.node).toBe(holder)
    expect(r.placements[1]!.node).not.toBe(holder)
  })

  test('labels: a project goes only to nodes carrying every label it asks for; a label a node keeps from before no longer holds its replica', () => {
    const nodes = [node('a', 2000, 2048, { labels: { zone: 'x', disk: 'ssd' } }), node('b', 2000, 2048, { labels: { zone: 'x' } }), node('c')]
    const r = place([{ ...web(3), nodeLabels: { zone: 'x', disk: 'ssd' } }], nodes, [])
    expect(r.placements.map((p) => p.node)).toEqual(['a', 'a', 'a'])
    const none = place([{ ...web(1), nodeLabels: { zone: 'y' } }], nodes, [])
    expect(none.placements[0]!.node).toBeNull()
    expect(none.reasons.get('web')).toBe('no-eligible-node')
    // b lost its label (a nodes file changed): its replica moves to a node that has it
    const moved = place([{ ...web(1), nodeLabels: { zone: 'x' } }], [node('a', 2000, 2048, { labels: { zone: 'x' } }), node('b')], [{ project: 'web', replica: 0, node: 'b' }])
    expect(moved.placements[0]!.node).toBe('a')
  })

  test('a build node (role=build) takes only projects that ask for role=build', () => {
    const nodes = [node('build', 8000, 8192, { labels: { role: 'build' } }), node('gen', 1000, 1024, { labels: { role: 'general' } })]
    const general = place([web(4)], nodes, [])
    expect(new Set(general.placements.map((p) => p.node))).toEqual(new Set(['gen']))
    const compile = place([{ name: 'compile', replicas: 2, cpu: 100, memory: 64, nodeLabels: { role: 'build' } }], nodes, [])
    expect(compile.placements.map((p) => p.node)).toEqual(['build', 'build'])
    // not even a replica already there stays
    expect(place([web(1)], nodes, [{ project: 'web', replica: 0, node: 'build' }]).placements[0]!.node).toBe('gen')
    // with only a build node, a project without role=build has no eligible node
    expect(place([web(1)], [nodes[0]!], []).reasons.get('web')).toBe('no-eligible-node')
  })

  test('the local node takes only projects allowed there (a superadmin deployed them), and keeps no other', () => {
    const nodes = [node('local', 8000, 8192)]
    expect(place([web(2)], nodes, []).placements.map((p) => p.node)).toEqual([null, null])
    expect(place([{ ...web(2), allowLocal: true }], nodes, []).placements.map((p) => p.node)).toEqual(['local', 'local'])
    expect(place([web(1)], [...nodes, node('w1')], [{ project: 'web', replica: 0, node: 'local' }]).placements[0]!.node).toBe('w1')
  })
})
