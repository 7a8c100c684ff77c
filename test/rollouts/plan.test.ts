// A rollout's plan and its next step, as pure functions of the store's rows.
import { describe, expect, test } from 'bun:test'
import { nextStep as next, planRollout, summarize, unavailableBudget, type Candidate } from '../../src/rollouts/plan.ts'
import type { NodeAgentRow, ReleaseRow } from '../../src/store/releases.ts'
import type { RolloutNodeRow, RolloutRow } from '../../src/store/rollouts.ts'

const REL = { x64: 'a'.repeat(64), arm64: 'b'.repeat(64) }
const release = (arch: 'x64' | 'arm64', sequence = 5): ReleaseRow => ({ sha256: REL[arch], version: '2.0.0', arch, size: 1, sequence, kid: 'k', signature: 's', mirrors: '[]', compressed_size: 1, added_at: 0, added_by: 'op' })
const byArch = new Map([['x64', release('x64')], ['arm64', release('arm64')]])
const agent = (name: string, over: Partial<NodeAgentRow> = {}): NodeAgentRow => ({ name, arch: 'x64', version: '1.0.0', binary_sha256: 'c'.repeat(64), sequence: 1, skipped: '[]', reported_at: 0, ...over })
const cand = (name: string, labels: Record<string, string> = {}, over: Partial<NodeAgentRow> | null = {}): Candidate => ({ name, labels, agent: over === null ? null : agent(name, over) })

const rollout = (over: Partial<RolloutRow> = {}): RolloutRow => ({ id: 'r', version: '2.0.0', selector: null, canaries: null, max_unavailable: '1', max_failures: 0, soak_ms: 0, health_timeout_ms: 60_000, state: 'running', reason: null, active: 1, failures_forgiven: 0, canaries_done_at: null, created_at: 0, created_by: 'op', updated_at: 0, ...over })

describe('plan', () => {
  test('one canary per (arch, labels) group, first by name; the rest by name after them', () => {
    const rows = planRollout('r', '2.0.0', [cand('w3', { zone: 'a' }), cand('w1', { zone: 'a' }), cand('w2', { zone: 'b' }), cand('w4', {}, { arch: 'arm64' }), cand('w0', { zone: 'b' })], byArch, null, 0)
    expect(rows.map((r) => [r.name, r.canary])).toEqual([['w4', 1], ['w1', 1], ['w0', 1], ['w2', 0], ['w3', 0]])
    expect(rows.map((r) => r.position)).toEqual([0, 1, 2, 3, 4])
  })
  test('--canaries N takes N, round robin over the groups', () => {
    const cands = ['a1', 'a2', 'a3'].map((n) => cand(n, { g: 'a' })).concat(['b1', 'b2'].map((n) => cand(n, { g: 'b' })))
    expect(planRollout('r', '2.0.0', cands, byArch, 3, 0).filter((r) => r.canary).map((r) => r.name)).toEqual(['a1', 'b1', 'a2'])
    expect(planRollout('r', '2.0.0', cands, byArch, 1, 0).filter((r) => r.canary).map((r) => r.name)).toEqual(['a1'])
  })
  test('what a node starts as: on the release already, an old Agent, a newer sequence, a release it rolled back', () => {
    const rows = planRollout('r', '2.0.0', [cand('on', {}, { binary_sha256: REL.x64 }), cand('old', {}, null), cand('newer', {}, { sequence: 9 }), cand('back', {}, { skipped: JSON.stringify([REL.x64]) }), cand('ok')], byArch, null, 0)
    const s = Object.fromEntries(rows.map((r) => [r.name, r.state]))
    expect(s).toEqual({ on: 'done', old: 'skipped', newer: 'skipped', back: 'skipped', ok: 'pending' })
    expect(rows.find((r) => r.name === 'ok')!.canary).toBe(1)
    expect(rows.find((r) => r.name === 'old')!.error).toContain('install.sh')
  })
  test('max-unavailable: a count or a share, at least one', () => {
    expect(unavailableBudget('3', 100)).toBe(3)
    expect(unavailableBudget('5%', 10_000)).toBe(500)
    expect(unavailableBudget('5%', 10)).toBe(1)
    expect(unavailableBudget('0', 10)).toBe(1)
  })
})

const nextStep = (r: RolloutRow, rows: RolloutNodeRow[], now: number) => next(r, summarize(rows), now)

describe('next step', () => {
  const row = (name: string, state: RolloutNodeRow['state'], canary = 0): RolloutNodeRow => ({ rollout_id: 'r', name, position: 0, canary, grp: 'x64', arch: 'x64', state, from_version: '1.0.0', to_version: null, release_sha256: REL.x64, error: state === 'failed' ? 'boom' : null, told_at: null, updated_at: 0 })
  test('canaries first, then never more than max-unavailable between told and finished', () => {
    expect(nextStep(rollout({ max_unavailable: '3' }), [row('c', 'pending', 1), row('a', 'pending'), row('b', 'pending')], 0)).toEqual({ kind: 'tell', names: ['c'], room: 3, canariesDone: false })
    expect(nextStep(rollout({ max_unavailable: '3' }), [row('c', 'restarting', 1), row('a', 'pending')], 0)).toEqual({ kind: 'wait', canariesDone: false })
    const rows = [row('c', 'done', 1), row('a', 'downloading'), row('b', 'pending'), row('d', 'pending'), row('e', 'pending')]
    expect(nextStep(rollout({ max_unavailable: '2', canaries_done_at: 0 }), rows, 0)).toEqual({ kind: 'tell', names: null, room: 1, canariesDone: true })
    expect(nextStep(rollout({ max_unavailable: '1', canaries_done_at: 0 }), rows, 0)).toEqual({ kind: 'wait', canariesDone: true })
  })
  test('a failed canary halts; failures past the budget halt; a resumed rollout forgives the ones that halted it', () => {
    expect(nextStep(rollout(), [row('c', 'rolled-back', 1), row('a', 'pending')], 0)).toMatchObject({ kind: 'halt', reason: expect.stringMatching(/^canary c rolled-back/) })
    const rows = [row('c', 'done', 1), row('a', 'failed'), row('b', 'failed'), row('d', 'pending')]
    expect(nextStep(rollout({ max_failures: 1, canaries_done_at: 0 }), rows, 0)).toMatchObject({ kind: 'halt', reason: expect.stringMatching(/^2 node\(s\) failed, more than the 1 allowed/) })
    expect(nextStep(rollout({ max_failures: 1, failures_forgiven: 2, canaries_done_at: 0 }), rows, 0)).toMatchObject({ kind: 'tell', names: null, room: 1 })
  })
  test('the soak after the canaries; paused tells no one; all finished is done', () => {
    const rows = [row('c', 'done', 1), row('a', 'pending')]
    expect(nextStep(rollout({ soak_ms: 60_000, canaries_done_at: 1000 }), rows, 30_000)).toEqual({ kind: 'wait', canariesDone: true })
    expect(nextStep(rollout({ soak_ms: 60_000, canaries_done_at: 1000 }), rows, 61_001)).toMatchObject({ kind: 'tell', names: null, room: 1 })
    expect(nextStep(rollout({ state: 'paused', canaries_done_at: 0 }), rows, 0)).toEqual({ kind: 'wait', canariesDone: true })
    expect(nextStep(rollout(), [row('c', 'done', 1), row('a', 'skipped')], 0)).toEqual({ kind: 'done', reason: '1 done, 0 failed or rolled back, 1 skipped' })
  })
})
