// A redeploy rolls (docs/workloads.md, projects): the old revision's replicas stay
// assigned until the new ones run, or 10 minutes at most, so a new revision
// that never starts does not keep the old one assigned for ever. Through a
// real Platform and a node's real routes, on a clock the test holds still, on
// both sides of the 10 minutes.
import { expect, test } from 'bun:test'
import { createClient } from '../../src/client/index.ts'
import { VERSION } from '../../src/version.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import { startPlatform } from '../helpers/platform.ts'

const LIMIT_MS = 10 * 60_000

test('the old revision stays assigned for 10 minutes while the new one never runs, and not a millisecond longer', async () => {
  const clock = { t: Math.floor(Date.now() / 1000) * 1000 }
  await using p = await startPlatform({ remoteDispatch: true, clock: () => clock.t })
  const { token } = await p.client.nodes.createEnrollment({ nodeId: 'a' })
  const r = await enrollRaw(p.url, { token, nodeId: 'a', certPem: (await newCert('a')).certPem, version: VERSION })
  const node = createClient({ url: p.url, token: ((await r.json()) as { credential: string }).credential })
  // The node reports revision 1 running, and never revision 2.
  const heartbeat = () => node.nodes.register({ version: VERSION, capacity: { cpuMillis: 2000, memoryMB: 2048 }, replicas: [{ project: 'web', replica: 0, state: 'running', revision: 1 }] })
  await heartbeat()
  await p.client.projects.deploy({ name: 'web', command: ['sleep', '60'], replicas: 1 })
  await heartbeat()
  const rolled = clock.t
  expect((await p.client.projects.deploy({ name: 'web', command: ['sleep', '61'], replicas: 1 })).revision).toBe(2)
  /** The revisions assigned to the node once the Platform has placed at `at`. */
  const assignedAt = async (at: number) => {
    clock.t = at
    await heartbeat()
    await p.platform.projects.reconcile()
    return (await node.projects.assignments()).payload.replicas.map((x) => x.revision).sort()
  }
  expect(await assignedAt(rolled + 60_000)).toEqual([1, 2])
  expect(await assignedAt(rolled + LIMIT_MS)).toEqual([1, 2])
  expect(await assignedAt(rolled + LIMIT_MS + 1)).toEqual([2])
})
