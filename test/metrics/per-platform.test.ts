// Each Platform serves what it counted (src/metrics/platform.ts: a registry per
// Platform), also where several run in one process, as the whole suite does
// (`bun test` runs every file in one process): two Platforms side by side, one
// heartbeated and deployed to, the other idle. Each one's lease changes match
// the leases it holds; the idle one's heartbeats and assignment revision stay
// where they started. With families shared by the process, the idle Platform's
// /metrics showed the busy one's heartbeats and revision, and each showed the
// leases of both. Two Platforms on one PostgreSQL store (HA) split the
// leases: each one's /metrics shows the ones it holds and the changes it made.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { VERSION } from '../../src/version.ts'
import { startPair } from '../ha/pair.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import { startPlatform, type TestPlatform } from '../helpers/platform.ts'
import { ENGINES } from '../helpers/postgres.ts'
import { waitFor } from '../helpers/tmp.ts'

let busy: TestPlatform
let idle: TestPlatform
beforeAll(async () => {
  busy = await startPlatform({ remoteDispatch: true, engine: 'sqlite' })
  idle = await startPlatform({ remoteDispatch: true, engine: 'sqlite' })
})
afterAll(async () => {
  await busy?.close()
  await idle?.close()
})

/** Every sample of `name` in a Platform's /metrics text, by its label set (`{}` when it has none). */
async function samples(p: TestPlatform, name: string): Promise<{ labels: Record<string, string>; value: number }[]> {
  const text = await (await fetch(`${p.url}/metrics`, { headers: { authorization: `Bearer ${p.token}` } })).text()
  return text
    .split('\n')
    .filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `))
    .map((l) => {
      const m = /^[^{\s]+(?:\{(.*)\})? (\S+)$/.exec(l)!
      const labels = Object.fromEntries([...(m[1] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1]!, x[2]!]))
      return { labels, value: Number(m[2]) }
    })
}
const total = async (p: TestPlatform, name: string, where: Record<string, string> = {}) =>
  (await samples(p, name)).filter((s) => Object.entries(where).every(([k, v]) => s.labels[k] === v)).reduce((n, s) => n + s.value, 0)

describe('two Platforms in one process', () => {
  test('each counts its own heartbeats and assignment revision; the other reads none of them', async () => {
    const before = { busy: await total(busy, 'muster_heartbeats_total'), idle: await total(idle, 'muster_heartbeats_total') }
    const e = await busy.client.nodes.createEnrollment({ nodeId: 'beater' })
    const r = await enrollRaw(busy.url, { token: e.token, nodeId: 'beater', certPem: (await newCert('beater')).certPem, version: VERSION })
    const { credential } = (await r.json()) as { credential: string }
    for (let i = 0; i < 3; i++) {
      const b = await fetch(`${busy.url}/api/v1/nodes/register`, { method: 'POST', headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' }, body: JSON.stringify({ version: VERSION, capacity: { cpuMillis: 4000, memoryMB: 8192 } }) })
      expect(b.status).toBe(200)
    }
    await busy.client.projects.deploy({ name: 'counted', replicas: 1, cpu: 100, memory: 64, command: ['sleep', '60'] })
    expect(await total(busy, 'muster_heartbeats_total')).toBe(before.busy + 3)
    expect(await total(idle, 'muster_heartbeats_total')).toBe(before.idle)
    expect(await total(busy, 'muster_assignment_revision')).toBeGreaterThan(0)
    expect(await total(idle, 'muster_assignment_revision')).toBe(0)
  })

  test("each one's lease changes are its own: acquired once per lease it holds, none lost", async () => {
    for (const p of [busy, idle]) {
      const held = (await samples(p, 'muster_leases_held')).filter((s) => s.value === 1)
      expect(held.length).toBeGreaterThanOrEqual(5)
      expect(await total(p, 'muster_lease_changes_total', { change: 'acquired' })).toBe(held.length)
      expect(await total(p, 'muster_lease_changes_total', { change: 'lost' })).toBe(0)
    }
  })
})

describe.if(ENGINES.includes('postgres'))('two Platforms on one PostgreSQL store', () => {
  test('the leases are split between them: each shows the ones it holds, acquired by it, and the other none of them', async () => {
    await using pair = await startPair()
    const held = async (p: TestPlatform) => (await samples(p, 'muster_leases_held')).filter((s) => s.value === 1).map((s) => s.labels.lease!).sort()
    const [a, b] = [await held(pair.a), await held(pair.b)]
    expect(a.length + b.length).toBeGreaterThanOrEqual(5)
    expect(a.filter((l) => b.includes(l))).toEqual([])
    for (const [p, mine] of [[pair.a, a], [pair.b, b]] as const) {
      expect(await total(p, 'muster_lease_changes_total', { change: 'acquired' })).toBe(mine.length)
      await waitFor(async () => (await total(p, 'muster_platforms_live')) === 2, { what: 'each Platform seeing both live' })
    }
  })
})
