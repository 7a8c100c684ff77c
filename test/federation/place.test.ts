import { describe, expect, test } from 'bun:test'
import { ENGINES } from '../helpers/postgres.ts'
import { onEngine, startPlatform, type TestPlatform } from '../helpers/platform.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'
import { generateSigningKey } from '../../src/crypto/ed25519.ts'
import { b64url, randomBytes } from '../../src/crypto/tokens.ts'
import { MusterError } from '../../src/errors.ts'
import { DOMAINS } from '../../src/wire/federation-formats.ts'
import { registerPlacedProjectRunner, type PlacedProjectSpec } from '../../src/federation/placed-projects.ts'
import { signProof } from '../../src/federation/proofs.ts'
import { federationOf } from '../../src/federation/service.ts'
import { placedProjects } from '../../src/federation/office.ts'
import { startOffice, vouchedClient } from './_helpers.ts'
import type { OfficeProjectStatus as PlacedProjectStatus } from '../../src/wire/federation.ts'

const spec = { name: 'web', command: ['sleep', '1000'], env: { GREETING: 'hi' }, replicas: 2, cpu: 250, memory: 64 }

async function joined(d: string) {
  const c = await startPlatform()
  const { token } = await c.client.federation.mint({ officeId: 'office-a' })
  const o = await startOffice(c.url, token, { dataDir: d })
  await waitFor(() => federationOf(o.platform).link?.state === 'connected', { what: 'connected' })
  return { c, o }
}

/** A place call as the controller would sign it, with `edit` applied after signing. */
async function signedCall(c: TestPlatform, opts: { key?: ReturnType<typeof generateSigningKey>; issuedAt?: number; edit?: (b: Record<string, unknown>) => void } = {}) {
  const target = await federationOf(c.platform).controller.callTarget('office-a')
  const call = { call: 'place', officeId: 'office-a', nonce: b64url(randomBytes(32)), issuedAt: opts.issuedAt ?? Date.now(), payload: structuredClone(spec) }
  const body: Record<string, unknown> = { ...call, proof: signProof(DOMAINS.call, opts.key ?? target.key, { ...call, tokenFingerprint: target.fingerprint }) }
  opts.edit?.(body)
  return (url: string) => fetch(`${url}/api/office/calls`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
}

describe.each(ENGINES)('on %s', (engine) => {
  onEngine(engine)

  describe('placing projects on an office', () => {
    test('place is a signed call; the office stores it, hands it to the runner and reports it in heartbeats', async () => {
      using d = tmpDir()
      const { c, o } = await joined(d.path)
      try {
        const applied: PlacedProjectSpec[] = []
        // What the office's runner reports; the test changes it and watches it travel to the controller.
        let report: Pick<PlacedProjectStatus, 'state' | 'running' | 'detail'> = { state: 'pending', running: 1, detail: 'pulling image 3 of 7' }
        registerPlacedProjectRunner(o.platform, {
          apply: (s) => void applied.push(s),
          status: (s) => ({ name: s.name, replicas: s.replicas, ...report }),
        })
        const r = await c.client.federation.place('office-a', spec)
        // The answer is the office runner's status at that moment, for exactly what was applied.
        expect(r).toEqual({ officeId: 'office-a', project: { name: 'web', replicas: 2, state: 'pending', running: 1, detail: 'pulling image 3 of 7' } })
        expect(applied).toEqual([spec])
        const listed = (await (await vouchedClient(c, o)).federation.placedProjects()).projects
        expect(listed).toEqual([{ name: 'web', command: ['sleep', '1000'], envKeys: ['GREETING'], replicas: 2, cpu: 250, memory: 64, placedAt: expect.any(String), status: expect.objectContaining({ state: 'pending', running: 1 }) }])
        const first = await waitFor(async () => (await c.client.federation.offices()).offices[0]?.projects.at(0), { what: 'reported in a heartbeat' })
        expect(first).toMatchObject({ name: 'web', replicas: 2, state: 'pending', running: 1 })
        // The runner's status changes at the office; the next heartbeats carry the change.
        report = { state: 'running', running: 2 }
        const seen = await waitFor(async () => (await c.client.federation.offices()).offices[0]?.projects.find((x) => x.running === 2), { what: 'the change reported in a heartbeat' })
        expect(seen).toEqual({ name: 'web', replicas: 2, state: 'running', running: 2 })
      } finally {
        await o.close()
        await c.close()
      }
    })

    test('by default a placed project becomes a project of the office (origin controller); a local one of the same name is never replaced', async () => {
      using d = tmpDir()
      const { c, o } = await joined(d.path)
      try {
        const r = await c.client.federation.place('office-a', { name: 'web', command: ['sleep', '1000'], replicas: 2 })
        expect(r.project).toMatchObject({ name: 'web', replicas: 2, state: 'pending', running: 0 })
        expect(o.platform.projects.show('web')).toMatchObject({ origin: 'controller', replicas: 2, command: ['sleep', '1000'] })
        await o.platform.projects.deploy({ name: 'api', command: ['sleep', '1'], replicas: 1 })
        const err = await c.client.federation.place('office-a', { ...spec, name: 'api' }).catch((e: MusterError) => e)
        expect(err).toBeInstanceOf(MusterError)
        expect((err as MusterError).code).toBe('conflict')
        expect(o.platform.projects.show('api').origin).toBe('local')
        expect((await (await vouchedClient(c, o)).federation.placedProjects()).projects.map((p) => p.name)).toEqual(['web'])
      } finally {
        await o.close()
        await c.close()
      }
    })

    test('the office refuses a call that was edited, replayed, stale, or signed by another key', async () => {
      using d = tmpDir()
      const { c, o } = await joined(d.path)
      try {
        const refused = async (send: (url: string) => Promise<Response>) => {
          const res = await send(o.url)
          return [res.status, ((await res.json()) as { error?: { code: string } }).error?.code]
        }
        const good = await signedCall(c)
        expect((await good(o.url)).status).toBe(200)
        expect(await refused(good)).toEqual([403, 'federation-refused'])
        expect(await refused(await signedCall(c, { edit: (b) => ((b.payload as { replicas: number }).replicas = 50) }))).toEqual([403, 'federation-refused'])
        expect(await refused(await signedCall(c, { edit: (b) => ((b.payload as { command: string[] }).command = ['sh', '-c', 'evil']) }))).toEqual([403, 'federation-refused'])
        expect(await refused(await signedCall(c, { issuedAt: Date.now() - 10 * 60_000 }))).toEqual([403, 'federation-refused'])
        expect(await refused(await signedCall(c, { issuedAt: Date.now() + 10 * 60_000 }))).toEqual([403, 'federation-refused'])
        expect(await refused(await signedCall(c, { issuedAt: Date.now() + 60 * 60_000 }))).toEqual([403, 'federation-refused'])
        // inside the two-minute window on either side: accepted (each call has a fresh nonce)
        expect((await (await signedCall(c, { issuedAt: Date.now() - 90_000 }))(o.url)).status).toBe(200)
        expect((await (await signedCall(c, { issuedAt: Date.now() + 90_000 }))(o.url)).status).toBe(200)
        expect(await refused(await signedCall(c, { key: generateSigningKey() }))).toEqual([403, 'federation-refused'])
        expect(await refused(await signedCall(c, { edit: (b) => (b.officeId = 'office-b') }))).toEqual([403, 'federation-refused'])
        expect((await (await vouchedClient(c, o)).federation.placedProjects()).projects).toHaveLength(1)
      } finally {
        await o.close()
        await c.close()
      }
    })

    test('a revoked office keeps its projects; the controller can no longer place there', async () => {
      using d = tmpDir()
      const { c, o } = await joined(d.path)
      try {
        await c.client.federation.place('office-a', spec)
        const reader = await vouchedClient(c, o) // a revoked office is vouched for no more
        await c.client.federation.revoke('office-a')
        await waitFor(() => federationOf(o.platform).link?.state === 'revoked', { what: 'revoked' })
        // the session vouched under the revoked membership ended with it; the projects stay
        expect(((await reader.federation.placedProjects().catch((e: MusterError) => e)) as MusterError).code).toBe('unauthorized')
        expect((await placedProjects(federationOf(o.platform))).projects.map((p) => p.name)).toEqual(['web'])
        const err = await c.client.federation.place('office-a', { ...spec, name: 'api' }).catch((e: MusterError) => e)
        expect((err as MusterError).code).toBe('federation-token-revoked')
      } finally {
        await o.close()
        await c.close()
      }
    })

    test('an unreachable office is a clear error, and a bad spec is invalid-request', async () => {
      using d = tmpDir()
      const { c, o } = await joined(d.path)
      await o.close()
      try {
        expect(((await c.client.federation.place('office-a', spec).catch((e) => e)) as MusterError).code).toBe('office-unreachable')
        expect(((await c.client.federation.place('office-a', { ...spec, replicas: -1 }).catch((e) => e)) as MusterError).code).toBe('invalid-request')
      } finally {
        await c.close()
      }
    })
  })
})
