// The enrollment audit keeps 30 days (docs/nodes.md, the enrollment audit):
// pruning removes what is older, to the millisecond, and leaves what is not.
// Entries enrolled through a real Platform's route on a clock the test holds,
// pruned as its audit-pruning loop does, read back through the API.
import { expect, test } from 'bun:test'
import { VERSION } from '../../src/version.ts'
import { AUDIT_MAX_AGE_MS, pruneAudit } from '../../src/store/enroll-audit.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import { startPlatform } from '../helpers/platform.ts'

test('pruning keeps an entry exactly 30 days old and removes one a millisecond older', async () => {
  const clock = { t: Math.floor(Date.now() / 1000) * 1000 }
  await using p = await startPlatform({ remoteDispatch: true, clock: () => clock.t })
  const enrollAt = async (name: string, at: number) => {
    clock.t = at
    const { token } = await p.client.nodes.createEnrollment({ nodeId: name })
    expect((await enrollRaw(p.url, { token, nodeId: name, certPem: (await newCert(name)).certPem, version: VERSION })).status).toBe(200)
  }
  const t0 = clock.t
  await enrollAt('older', t0)
  await enrollAt('edge', t0 + 1)
  // Pruned the way the audit-pruning loop does it (under its lease), 30 days after the second.
  clock.t = t0 + 1 + AUDIT_MAX_AGE_MS
  const lease = p.platform.ctx.leases.lease('audit-prune')
  await lease.fenced((t) => pruneAudit(t, clock.t))
  const kept = (await p.client.nodes.audit()).entries.filter((e) => e.outcome === 'enrolled').map((e) => e.nodeId)
  expect(kept).toEqual(['edge'])
  // And what the store still holds is what the audit shows.
  expect((await p.platform.store.all<{ node_id: string }>("SELECT node_id FROM enroll_audit WHERE outcome = 'enrolled'")).map((r) => r.node_id)).toEqual(['edge'])
})
