// A follow whose node went quiet ends (docs/workloads.md, reading a replica's output): once
// the node has sent nothing for 45 s (the stale window), the operator's next
// empty poll is told the follow ended and its request goes, instead of polling
// a node that is gone for ever. Each poll waits 20 s for output, so this test
// takes about 40 s. The node's part is played over its real routes, on a clock
// the test holds still.
import { expect, test } from 'bun:test'
import { createClient } from '../../src/client/index.ts'
import { VERSION } from '../../src/version.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import { startPlatform } from '../helpers/platform.ts'
import { waitFor } from '../helpers/tmp.ts'

const SILENT_MS = 45_000

test('a follow whose node sent nothing for 45 s goes on; one millisecond more and the next empty poll ends it', { timeout: 120_000 }, async () => {
  const clock = { t: Math.floor(Date.now() / 1000) * 1000 }
  await using p = await startPlatform({ remoteDispatch: true, logWaitMs: 5000, clock: () => clock.t })
  const { token } = await p.client.nodes.createEnrollment({ nodeId: 'w1' })
  const r = await enrollRaw(p.url, { token, nodeId: 'w1', certPem: (await newCert('w1')).certPem, version: VERSION })
  const node = createClient({ url: p.url, token: ((await r.json()) as { credential: string }).credential })
  await node.nodes.register({ version: VERSION, capacity: { cpuMillis: 4000, memoryMB: 4096 } })
  await p.client.projects.deploy({ name: 'web', replicas: 1, command: ['sleep', '300'], cpu: 10, memory: 10 })
  await waitFor(async () => (await p.client.projects.show('web')).placements[0]?.node === 'w1', { what: 'web placed on w1' })
  const poll = async (cursor: string) => (await (await fetch(`${p.url}/api/v1/projects/web/logs?cursor=${cursor}`, { headers: { authorization: `Bearer ${p.token}` } })).json()) as { lines: string[]; cursor: string | null }

  const first = fetch(`${p.url}/api/v1/projects/web/logs?follow=true&tail=10`, { headers: { authorization: `Bearer ${p.token}` } })
  const id = await waitFor(async () => (await node.projects.logRequests()).requests.find((d) => d.payload.project === 'web')?.payload.id, { what: 'the follow request' })
  const heard = clock.t
  await node.projects.sendLogs(id, { seq: 0, lines: ['hello'], truncated: false })
  const { cursor } = (await (await first).json()) as { cursor: string }
  // Quiet for exactly the window: the poll finds nothing and the follow goes on.
  clock.t = heard + SILENT_MS
  expect(await poll(cursor)).toEqual({ project: 'web', replica: 0, node: 'w1', lines: [], truncated: false, cursor } as never)
  // Quiet a millisecond longer: ended, and its request is gone.
  clock.t = heard + SILENT_MS + 1
  expect((await poll(cursor)).cursor).toBeNull()
  expect(await p.platform.store.get('SELECT id FROM log_requests WHERE id = ?1', id)).toBeNull()
})
