// The Agent updates itself (docs/upgrading.md "What a node does"), with real
// Agents of an older build of this tree on this machine and dist/muster as the
// release: the same process (PID and start time) execs into the new binary,
// the replicas keep their PIDs, versions/current names the release and the
// journal its sequence. Faulty releases (an Agent that exits at start, one
// that never heartbeats, one that kills its replicas) are rolled back on the
// canary within the health deadline, the rollout halts, the other node is
// never touched, and the rolled-back release is skipped on that node after.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readlinkSync } from 'node:fs'
import { join } from 'node:path'
import { procStat } from '../../src/replicas/procs.ts'
import { publishRelease } from '../../src/releases/publish.ts'
import { VERSION } from '../../src/version.ts'
import { buildWithVersion, faultyBuild, type Fault } from '../helpers/builds.ts'
import { startListenerPlatform, type ListenerPlatform } from '../helpers/node-side.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'
import { joinNode, killAgentsUnder, releaseBoth, rolloutReaches, updateDirPrefix, type UpdateNode } from '../helpers/update-nodes.ts'

const OLD = '0.0.9'
process.env.MUSTER_ROLLOUT_TICK_MS = '200'

describe('the Agent updates itself', () => {
  const dir = tmpDir(updateDirPrefix('self'))
  let p: ListenerPlatform
  let oldBin: string
  let release: Awaited<ReturnType<typeof releaseBoth>>
  const nodes: UpdateNode[] = []
  beforeAll(async () => {
    oldBin = await buildWithVersion(OLD)
    p = await startListenerPlatform({ remoteDispatch: true, rescheduleGraceMs: 600_000 })
    release = await releaseBoth(p, { bin: oldBin, version: OLD })
    for (const name of ['w1', 'w2']) nodes.push(await joinNode(p, name, oldBin, dir.path))
    await p.client.projects.deploy({ name: 'web', replicas: 2, cpu: 10, memory: 8, command: ['sh', '-c', 'exec sleep 3600'] })
    await waitFor(() => nodes.every((n) => Object.keys(n.replicas()).length === 1), { timeoutMs: 30_000, what: 'a replica on each node' })
  })
  afterAll(async () => {
    for (const n of nodes) await n.stop()
    await killAgentsUnder(dir.path)
    await p?.close()
    dir[Symbol.dispose]()
  })

  test('a rollout of dist/muster: the same process runs the new binary, the replicas keep their PIDs, the journal holds the sequence', async () => {
    const before = nodes.map((n) => ({ pid: n.pid()!, start: procStat(n.pid()!)!.startTime, replicas: n.replicas() }))
    const r = await p.client.rollouts.start({ version: VERSION })
    const s = await rolloutReaches(p, r.id, ['done', 'halted'])
    expect(s.state).toBe('done')
    expect(s.nodes.map((n) => [n.name, n.state, n.from, n.to])).toEqual([['w1', 'done', OLD, VERSION], ['w2', 'done', OLD, VERSION]])
    nodes.forEach((n, i) => {
      expect(n.pid()).toBe(before[i]!.pid)
      expect(procStat(n.pid()!)!.startTime).toBe(before[i]!.start)
      expect(n.replicas()).toEqual(before[i]!.replicas)
      expect(readlinkSync(join(n.dataDir, 'versions', 'current'))).toBe(`${VERSION}-2`)
      expect(n.journal()).toMatchObject({ sequence: 2, current: { version: VERSION, sequence: 2 } })
      expect(n.journal().step).toBeUndefined()
      expect(n.log()).toContain(`update: ${VERSION} (sequence 2) passed its health check and is installed`)
    })
    // the delta against the release the nodes ran, not the whole binary
    expect(nodes[0]!.log()).toContain('update: fetching')
    await waitFor(() => p.platform.fabric.registry.get('w1')?.version === VERSION, { what: 'w1 heartbeating at the new version' })
  })

  const faults: [Fault, RegExp][] = [
    ['exits-at-start', /the new Agent \(0\.0\.\d+\) exited during its health check/],
    ['never-heartbeats', /the new Agent did not heartbeat at 0\.0\.\d+ within 15 s/],
    ['kills-replicas', /replica web\/\d \(pid \d+\) stopped during the health check of 0\.0\.\d+/],
  ]
  let patch = 10
  for (const [fault, reason] of faults) {
    test(`a release whose Agent ${fault.replace(/-/g, ' ')} is rolled back on the canary within the deadline; the rollout halts; the other node is untouched`, async () => {
      const version = `0.0.${patch++}`
      const bin = faultyBuild(fault, join(dir.path, 'faulty'))
      await publishRelease(p.client, { binary: bin, key: release.key, version, arch: 'x64', level: 1 })
      const before = nodes.map((n) => ({ pid: n.pid()!, replicas: n.replicas() }))
      const started = Date.now()
      const r = await p.client.rollouts.start({ version, canaries: 1, healthTimeoutSeconds: 15 })
      const canary = r.nodes.find((n) => n.canary)!.name
      const s = await rolloutReaches(p, r.id, ['halted', 'done'])
      const took = Date.now() - started
      expect(s.state).toBe('halted')
      const c = s.nodes.find((n) => n.name === canary)!
      expect(c.state).toBe('rolled-back')
      expect(c.error).toMatch(reason)
      expect(s.reason).toMatch(new RegExp(`^canary ${canary} rolled-back: `))
      // within the deadline (15 s) plus the detection, the restart and the report
      expect(took).toBeLessThan(15_000 + 20_000)
      const other = nodes.find((n) => n.name !== canary)!
      const i = nodes.indexOf(other)
      expect(s.nodes.find((n) => n.name === other.name)!.state).toBe('pending')
      expect(other.pid()).toBe(before[i]!.pid)
      expect(other.replicas()).toEqual(before[i]!.replicas)
      // the canary runs the version it ran before, heartbeating, and skips this release from now on
      const cn = nodes.find((n) => n.name === canary)!
      await waitFor(() => p.platform.fabric.registry.get(canary)?.version === VERSION && cn.pid() !== undefined, { timeoutMs: 30_000, what: `${canary} back on ${VERSION}` })
      expect(readlinkSync(join(cn.dataDir, 'versions', 'current'))).toBe(`${VERSION}-2`)
      expect(cn.journal().skipped.map((x) => x.version)).toContain(version)
      if (fault !== 'kills-replicas') expect(cn.replicas()).toEqual(before[nodes.indexOf(cn)]!.replicas)
      else await waitFor(() => Object.keys(cn.replicas()).length === 1, { timeoutMs: 30_000, what: 'the replica started again by the old Agent' })
      await p.client.rollouts.cancel(r.id)
      // released again as it was: the node skips it (the plan says why)
      await waitFor(async () => JSON.parse((await p.platform.rollouts.nodeAgent(canary))!.skipped).length > 0, { what: 'the skip reported' })
      const again = await p.client.rollouts.start({ version })
      expect(again.nodes.find((n) => n.name === canary)).toMatchObject({ state: 'skipped', error: `it rolled ${version} back before; release it again to retry` })
      await p.client.rollouts.cancel(again.id)
    })
  }
})
