// A log request takes its node's output until the millisecond it expires, not
// at it (docs/workloads.md, reading a replica's output): a node that answers late is refused
// and nothing it sends reaches the store. The node's part is played over its
// real routes with its credential, on a clock the test holds still.
import { expect, test } from 'bun:test'
import { createClient } from '../../src/client/index.ts'
import type { MusterError } from '../../src/errors.ts'
import { VERSION } from '../../src/version.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import { startPlatform } from '../helpers/platform.ts'
import { waitFor } from '../helpers/tmp.ts'

test('a node uploads to a log request up to the millisecond before its expiry, and is refused at it', async () => {
  const clock = { t: Math.floor(Date.now() / 1000) * 1000 }
  await using p = await startPlatform({ remoteDispatch: true, logWaitMs: 3000, clock: () => clock.t })
  const { token } = await p.client.nodes.createEnrollment({ nodeId: 'w1' })
  const r = await enrollRaw(p.url, { token, nodeId: 'w1', certPem: (await newCert('w1')).certPem, version: VERSION })
  const { credential } = (await r.json()) as { credential: string }
  const node = createClient({ url: p.url, token: credential })
  await node.nodes.register({ version: VERSION, capacity: { cpuMillis: 4000, memoryMB: 4096 } })
  await p.client.projects.deploy({ name: 'web', replicas: 1, command: ['sleep', '300'], cpu: 10, memory: 10 })
  await waitFor(async () => (await p.client.projects.show('web')).placements[0]?.node === 'w1', { what: 'web placed on w1' })

  /** An operator asks for the tail; the node picks the request up; the clock moves to `at(expiry)`; the node answers. */
  const answerAt = async (at: (expiresAt: number) => number) => {
    const asked = p.client.projects.logs('web').then((l) => l.lines, (e: MusterError) => e.code)
    const id = await waitFor(async () => (await node.projects.logRequests()).requests.find((d) => d.payload.project === 'web')?.payload.id, { what: 'the log request' })
    const row = (await p.platform.store.get<{ expires_at: number }>('SELECT expires_at FROM log_requests WHERE id = ?1', id))!
    clock.t = at(Number(row.expires_at))
    const sent = await node.projects.sendLogs(id, { seq: 0, lines: ['LATE-LINE'], truncated: false }).then(() => 'stored', (e: MusterError) => e.code)
    // Refused: nothing of it was kept (read before the operator gives up and the request goes).
    const kept = sent === 'stored' ? undefined : Number((await p.platform.store.get<{ n: number }>('SELECT COUNT(*) AS n FROM log_chunks WHERE request = ?1', id))!.n)
    return { sent, kept, operator: await asked }
  }
  expect(await answerAt((end) => end - 1)).toEqual({ sent: 'stored', kept: undefined, operator: ['LATE-LINE'] })
  expect(await answerAt((end) => end)).toEqual({ sent: 'not-found', kept: 0, operator: 'node-unreachable' })
})
