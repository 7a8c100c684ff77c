// A vouch link (GET /office/vouch, what a controller's dashboard opens) shows
// a page and spends nothing, so it is a read; its redemption is a POST (the
// page's form, or the JSON route), recorded in the audit with the same action,
// on the refusals budget when refused (second self-audit, test/mutants/audit2.ts:
// a read-method shortcut once skipped it). A HEAD is the GET for the audit.
import { expect, test } from 'bun:test'
import { startPlatform } from '../helpers/platform.ts'

test('a vouch tried on this Platform is in the audit, by form or by JSON; its link and a HEAD of it are reads', async () => {
  await using p = await startPlatform()
  const link = await fetch(`${p.url}/office/vouch?v=not-a-vouch`, { redirect: 'manual' })
  expect(link.status).toBeGreaterThanOrEqual(400)
  expect(link.headers.get('content-type')).toContain('text/html')
  expect(link.headers.get('set-cookie')).toBeNull()
  expect((await fetch(`${p.url}/office/vouch?v=not-a-vouch`, { method: 'HEAD' })).headers.get('set-cookie')).toBeNull()
  const form = await fetch(`${p.url}/office/vouch`, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded', origin: p.url }, body: 'v=not-a-vouch' })
  const post = await fetch(`${p.url}/api/office/vouch`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"vouch":"not-a-vouch"}' })
  expect(post.status).toBe(form.status)
  expect(post.status).toBe(link.status)
  const { entries } = await p.client.audit.list({ action: 'federation.vouch.redeem' })
  expect(entries.map((e) => [e.action, e.principal, e.principalKind, e.source])).toEqual([
    ['federation.vouch.redeem', '(unknown)', 'anonymous', '127.0.0.1'],
    ['federation.vouch.redeem', '(unknown)', 'anonymous', '127.0.0.1'],
  ])
  expect(entries[0]!.outcome).toBe(entries[1]!.outcome)
  expect(entries[1]!.outcome).not.toBe('ok')
  // An ordinary read is still not recorded.
  await p.client.nodes.list()
  expect((await p.client.audit.list()).entries.filter((e) => e.action.startsWith('GET') || e.action.startsWith('HEAD'))).toEqual([])
})
