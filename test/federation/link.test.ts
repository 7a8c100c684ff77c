import { describe, expect, test } from 'bun:test'
import { ENGINES } from '../helpers/postgres.ts'
import { onEngine, startPlatform } from '../helpers/platform.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'
import { generateSigningKey } from '../../src/crypto/ed25519.ts'
import { DOMAINS, fingerprintOfToken, parseOfficeToken } from '../../src/wire/federation-formats.ts'
import { breakGlass } from '../../src/federation/host.ts'
import { signProof } from '../../src/federation/proofs.ts'
import { federationOf } from '../../src/federation/service.ts'
import { freePort, startOffice } from './_helpers.ts'

/** A server at the controller's URL that is not the controller; `forward` sends chosen paths on to the real one. */
function impostor(handle: (path: string, body: Record<string, unknown>) => Promise<unknown> | unknown) {
  const hits: Record<string, number> = {}
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(req) {
      const path = new URL(req.url).pathname
      hits[path] = (hits[path] ?? 0) + 1
      const answer = await handle(path, (await req.json()) as Record<string, unknown>)
      return answer instanceof Response ? answer : Response.json(answer)
    },
  })
  return { url: `http://127.0.0.1:${server.port}`, hits, [Symbol.dispose]: () => server.stop(true) }
}

const forward = (to: string, path: string, body: unknown) =>
  fetch(`${to}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).then((r) => r.json())

describe.each(ENGINES)('on %s', (engine) => {
  onEngine(engine)

  describe('the office verifies its controller', () => {
    test('an impostor at the controller URL signing with another key is refused: no heartbeat is ever sent', async () => {
      using d = tmpDir()
      await using c = await startPlatform()
      const { token } = await c.client.federation.mint({ officeId: 'office-a' })
      const t = parseOfficeToken(token)
      const wrongKey = generateSigningKey()
      using fake = impostor((_path, body) => {
        // Everything right except the key: the fields the office checks, signed by a key that is not the controller's.
        const at = Date.now()
        return { officeId: body.officeId, at, proof: signProof(DOMAINS.register, wrongKey, { officeId: t.officeId, tokenFingerprint: fingerprintOfToken(t), nonce: body.nonce as string, at }) }
      })
      await using o = await startOffice(fake.url, token, { dataDir: d.path })
      await waitFor(() => (fake.hits['/api/v1/federation/register'] ?? 0) >= 3, { what: 'three registration attempts' })
      expect(federationOf(o.platform).link?.state).toBe('controller-unverified')
      expect(fake.hits['/api/v1/federation/heartbeat']).toBeUndefined()
    })

    test('a replayed genuine registration answer does not verify for the next registration', async () => {
      using d = tmpDir()
      await using c = await startPlatform()
      const { token } = await c.client.federation.mint({ officeId: 'office-a' })
      let captured: unknown
      using fake = impostor(async (path, body) => {
        // Heartbeats fail outright, so the office registers again; the heartbeat domain never decides anything here.
        if (path.endsWith('/heartbeat')) return Response.json({ error: { code: 'unavailable', message: 'down' } }, { status: 503 })
        // The first registration is the controller's genuine answer; every later one gets that answer again.
        captured ??= await forward(c.url, path, body)
        return captured
      })
      await using o = await startOffice(fake.url, token, { dataDir: d.path })
      await waitFor(() => (fake.hits['/api/v1/federation/register'] ?? 0) >= 4, { what: 'three replays of the registration answer' })
      // Only the genuine answer (for its own fresh nonce) ever let the office go on to heartbeat.
      expect(fake.hits['/api/v1/federation/heartbeat']).toBe(1)
      expect(federationOf(o.platform).link?.state).toBe('controller-unverified')
    })

    test('a man in the middle cannot acknowledge a break-glass report: it is re-sent until the controller signs', async () => {
      using d = tmpDir()
      await using c = await startPlatform()
      const { token } = await c.client.federation.mint({ officeId: 'office-a' })
      await (await startOffice(c.url, token, { dataDir: d.path })).close()
      await breakGlass(d.path)
      const sent: unknown[][] = []
      using mitm = impostor(async (path, body) => {
        if (path.endsWith('/register')) return forward(c.url, path, body) // genuine: the office starts heartbeating
        sent.push(body.breakGlass as unknown[])
        const acknowledged = (body.breakGlass as { id: string }[]).map((r) => r.id)
        return { officeId: body.officeId, at: Date.now(), acknowledged, proof: signProof(DOMAINS.heartbeat, generateSigningKey(), { officeId: 'office-a', tokenFingerprint: 'x', nonce: body.nonce as string }) }
      })
      await using o = await startOffice(mitm.url, undefined, { dataDir: d.path })
      await waitFor(() => sent.length >= 2, { what: 'two heartbeats through the middle' })
      expect(sent[1]).toHaveLength(1) // still pending after the forged acknowledgement
      expect((await o.client.federation.localAuthority()).breakGlass?.reportedAt).toBeNull()
      expect((await c.client.federation.breakGlassReports()).reports).toEqual([])
    })
  })

  describe('break-glass reporting', () => {
    test('performed while the controller is down, it is reported on the first reconnect and then marked reported', async () => {
      using cd = tmpDir()
      using od = tmpDir()
      const port = await freePort()
      const c1 = await startPlatform({ dataDir: cd.path, port, keepDir: true })
      const { token } = await c1.client.federation.mint({ officeId: 'office-a' })
      await (await startOffice(c1.url, token, { dataDir: od.path })).close()
      await c1.close() // the controller is gone
      await breakGlass(od.path, 'superadmin')
      await using o = await startOffice(undefined, undefined, { dataDir: od.path })
      await waitFor(() => federationOf(o.platform).link?.state === 'unreachable', { what: 'unreachable' })
      expect((await o.client.federation.localAuthority()).breakGlass).toMatchObject({ account: 'superadmin', reportedAt: null })
      await using c2 = await startPlatform({ dataDir: cd.path, port, keepDir: true })
      const reports = await waitFor(async () => (await c2.client.federation.breakGlassReports()).reports.at(0), { what: 'report on the controller' })
      expect(reports).toMatchObject({ officeId: 'office-a', account: 'superadmin' })
      expect(Date.parse(reports.reportedAt)).toBeGreaterThan(Date.parse(reports.at))
      await waitFor(async () => (await o.client.federation.localAuthority()).breakGlass?.reportedAt, { what: 'acknowledged at the office' })
      expect((await c2.client.federation.breakGlassReports()).reports).toHaveLength(1)
    })
  })
})
