// A write that changes nothing is no action (docs/accounts-audit.md): the
// second drain of a drained node, the second revoke of a revoked one, enabling
// an enabled account, setting the role an account has, a logout with no
// session. Each is recorded with outcome `unchanged` on the refusals budget,
// so a loop of them cannot push an action out; the first of each is an action.
import { expect, test } from 'bun:test'
import { VERSION } from '../../src/version.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import { startPlatform } from '../helpers/platform.ts'

test('writes that change nothing are recorded as unchanged, on the refusals budget', async () => {
  await using p = await startPlatform({ remoteDispatch: true })
  const { token } = await p.client.nodes.createEnrollment({ nodeId: 'w1' })
  expect((await enrollRaw(p.url, { token, nodeId: 'w1', certPem: (await newCert('w1')).certPem, version: VERSION })).status).toBe(200)
  await p.client.accounts.add({ name: 'olga', role: 'operator', password: 'olga-password-123' })
  for (let i = 0; i < 2; i++) {
    await p.client.nodes.drain('w1')
    await p.client.accounts.enable('olga')
    await p.client.accounts.setRole('olga', 'viewer')
    await p.client.nodes.revoke('w1')
  }
  await fetch(`${p.url}/logout`, { method: 'POST', headers: { authorization: `Bearer ${p.token}` } })
  const rows = await p.platform.store.all<{ action: string; outcome: string; budget: string }>("SELECT action, outcome, budget FROM audit_log WHERE action <> 'node.enrollment' ORDER BY id")
  expect(rows.map((r) => `${r.action} ${r.outcome} ${r.budget}`)).toEqual([
    'account.add ok actions',
    'node.drain ok actions',
    'account.enable unchanged refusals', // olga was never disabled
    'account.set-role ok actions',
    'node.revoke ok actions',
    'node.drain unchanged refusals',
    'account.enable unchanged refusals',
    'account.set-role unchanged refusals',
    'node.revoke unchanged refusals',
    'logout unchanged refusals',
  ])
  // The revoked node keeps the time of its first revocation.
  const first = await p.platform.store.get<{ revoked_at: number }>("SELECT revoked_at FROM nodes WHERE name = 'w1'")
  p.advance(60_000)
  await p.client.nodes.revoke('w1')
  expect(await p.platform.store.get("SELECT revoked_at FROM nodes WHERE name = 'w1'")).toEqual(first)
})
