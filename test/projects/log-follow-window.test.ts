// A log follow lives while its operator polls, and ends a minute after the
// last poll (docs/workloads.md, reading a replica's output): each poll pushes its end a minute
// on, so a follow watched for an hour keeps going, and one whose operator went
// away stops taking its node's output. The node's part is played over its real
// routes with its credential, on a clock the test holds still.
import { expect, test } from 'bun:test'
import { createClient } from '../../src/client/index.ts'
import type { MusterError } from '../../src/errors.ts'
import { VERSION } from '../../src/version.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import { startPlatform } from '../helpers/platform.ts'
import { waitFor } from '../helpers/tmp.ts'

const MINUTE = 60_000

test('a follow polled every 50 s outlives its first minute; a minute after its last poll it takes nothing more', async () => {
  const clock = { t: Math.floor(Date.now() / 1000) * 1000 }
  await using p = await startPlatform({ remoteDispatch: true, logWaitMs: 5000, clock: () => clock.t })
  const { token } = await p.client.nodes.createEnrollment({ nodeId: 'w1' })
  const r = await enrollRaw(p.url, { token, nodeId: 'w1', certPem: (await newCert('w1')).certPem, version: VERSION })
  const { credential } = (await r.json()) as { credential: string }
  const node = createClient({ url: p.url, token: credential })
  const heartbeat = () => node.nodes.register({ version: VERSION, capacity: { cpuMillis: 4000, memoryMB: 4096 } })
  await heartbeat()
  await p.client.projects.deploy({ name: 'web', replicas: 1, command: ['sleep', '300'], cpu: 10, memory: 10 })
  await waitFor(async () => (await p.client.projects.show('web')).placements[0]?.node === 'w1', { what: 'web placed on w1' })
  const poll = async (cursor: string) => (await (await fetch(`${p.url}/api/v1/projects/web/logs?cursor=${cursor}`, { headers: { authorization: `Bearer ${p.token}` } })).json()) as { lines: string[]; cursor: string | null }
  const send = (id: string, seq: number) => node.projects.sendLogs(id, { seq, lines: [`line ${seq}`], truncated: false }).then(() => 'stored', (e: MusterError) => e.code)

  const started = clock.t
  const first = fetch(`${p.url}/api/v1/projects/web/logs?follow=true&tail=10`, { headers: { authorization: `Bearer ${p.token}` } })
  const id = await waitFor(async () => (await node.projects.logRequests()).requests.find((d) => d.payload.project === 'web')?.payload.id, { what: 'the follow request' })
  expect(await send(id, 0)).toBe('stored')
  let { cursor } = (await (await first).json()) as { cursor: string }
  // Polled at 50 s: its end moves to 50 s + a minute.
  clock.t = started + 50_000
  await heartbeat()
  expect(await send(id, 1)).toBe('stored')
  const at50 = await poll(cursor)
  expect(at50.lines).toEqual(['line 1'])
  cursor = at50.cursor!
  // Past the first minute: still taken, because it was polled.
  clock.t = started + 100_000
  await heartbeat()
  expect(await send(id, 2)).toBe('stored')
  const at100 = await poll(cursor)
  expect(at100.lines).toEqual(['line 2'])
  cursor = at100.cursor!
  // Not polled since: taken until a minute after that last poll, not at it.
  clock.t = started + 100_000 + MINUTE - 1
  await heartbeat()
  expect(await send(id, 3)).toBe('stored')
  clock.t = started + 100_000 + MINUTE
  await heartbeat()
  expect(await send(id, 4)).toBe('not-found')
  // The operator who comes back is told it ended.
  expect(await poll(cursor)).toMatchObject({ cursor: null })
})
