// The reschedule grace counts from when a node turned unreachable, not from its
// last heartbeat (second self-audit, test/mutants/audit2.ts): a node keeps its
// replicas until stale window + grace after its last heartbeat, to the
// millisecond, and loses them one millisecond later. On a clock held still.
import { expect, test } from 'bun:test'
import { createClient } from '../../src/client/index.ts'
import { VERSION } from '../../src/version.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import { startPlatform, type TestPlatform } from '../helpers/platform.ts'

async function joinNode(p: TestPlatform, name: string) {
  const e = await p.client.nodes.createEnrollment({ nodeId: name })
  const r = await enrollRaw(p.url, { token: e.token, nodeId: name, certPem: (await newCert(name)).certPem, version: VERSION })
  const node = createClient({ url: p.url, token: ((await r.json()) as { credential: string }).credential })
  await node.nodes.register({ version: VERSION, capacity: { cpuMillis: 2000, memoryMB: 2048 } })
  return node
}

test('a quiet node keeps its replicas for the stale window plus the grace, to the millisecond', async () => {
  let now = Date.now()
  await using p = await startPlatform({ remoteDispatch: true, nodeStaleAfterMs: 30_000, rescheduleGraceMs: 60_000, clock: () => now })
  await joinNode(p, 'a')
  await p.client.projects.deploy({ name: 'web', command: ['sleep', '60'], replicas: 1 })
  const b = await joinNode(p, 'b')
  const placedOn = async () => {
    await b.nodes.register({}) // b stays ready
    await p.platform.projects.reconcile()
    return (await p.client.projects.show('web')).placements[0]!.node
  }
  expect(await placedOn()).toBe('a')
  now += 45_000 // unreachable for 15 s: well inside the grace
  expect(await placedOn()).toBe('a')
  now += 45_000 // exactly 30 s + 60 s since a's last heartbeat
  expect(await placedOn()).toBe('a')
  now += 1
  expect(await placedOn()).toBe('b')
})
