// docs/security.md: the enrollment audit keeps two budgets of 500 entries / 30 days,
// one for refusals and invalid requests, one for enrolled, node-exists and
// worker-newer. The attack: anonymous junk used to push every
// enrollment record out.
import { describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { openStore } from '../../src/store/db.ts'
import { MIGRATIONS } from '../../src/store/migrations.ts'
import { listAudit } from '../../src/store/enroll-audit.ts'
import { VERSION } from '../../src/version.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import { onEngine, startPlatform } from '../helpers/platform.ts'
import { ENGINES, freshDatabase } from '../helpers/postgres.ts'
import { tmpDir } from '../helpers/tmp.ts'

const BAD_TOKEN = 'mjt_aaaaaaaaaaaaaaaa.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'

describe.each(ENGINES)('on %s', (engine) => {
  onEngine(engine)

  test('600+ refusals and invalid requests leave every enrollment record; each budget keeps at most 500', async () => {
    await using p = await startPlatform({ remoteDispatch: true })
    const fleet = await p.client.nodes.createJoinToken({ maxUses: 10 })
    const [maj, min, pat] = VERSION.split('.').map(Number) as [number, number, number]
    for (const name of ['w1', 'w2', 'w3']) expect((await enrollRaw(p.url, { token: fleet.token, nodeId: name, certPem: (await newCert(name)).certPem, version: VERSION })).status).toBe(200)
    expect((await enrollRaw(p.url, { token: fleet.token, nodeId: 'w1', certPem: (await newCert()).certPem })).status).toBe(409) // node-exists
    expect((await enrollRaw(p.url, { token: fleet.token, nodeId: 'w4', certPem: (await newCert()).certPem, version: `${maj}.${min}.${pat + 1}` })).status).toBe(409) // worker-newer
    const certPem = (await newCert()).certPem
    for (let batch = 0; batch < 13; batch++) {
      const junk = Array.from({ length: 50 }, (_, i) =>
        i % 5 === 0
          ? fetch(`${p.url}/api/v1/nodes/enroll`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"nodeId":"x"}' }) // invalid
          : enrollRaw(p.url, { token: BAD_TOKEN, nodeId: `junk-${batch}-${i}`, certPem }),
      )
      for (const r of await Promise.all(junk)) expect([400, 403]).toContain(r.status)
    }
    const entries = (await p.client.nodes.audit()).entries
    const outcomes = (o: string) => entries.filter((e) => e.outcome === o)
    expect(outcomes('enrolled').map((e) => e.nodeId).sort()).toEqual(['w1', 'w2', 'w3'])
    expect(outcomes('node-exists')).toHaveLength(1)
    expect(outcomes('worker-newer')).toHaveLength(1)
    expect(outcomes('refused').length + outcomes('invalid').length).toBe(500)
    expect(outcomes('invalid').length).toBeGreaterThan(0)
    // newest first across both budgets: the enrollment records came first, so they list last
    expect(entries.slice(-5).map((e) => e.outcome)).toEqual(['worker-newer', 'node-exists', 'enrolled', 'enrolled', 'enrolled'])

    // each record lives 30 days
    p.advance(29 * 86400_000)
    expect((await p.client.nodes.audit()).entries.filter((e) => e.outcome === 'enrolled')).toHaveLength(3)
    p.advance(2 * 86400_000)
    expect((await p.client.nodes.audit()).entries).toEqual([])
  })

  test('the migration puts existing records under their budget', async () => {
    using dir = tmpDir()
    const pg = engine === 'postgres' ? await freshDatabase({ empty: true }) : undefined
    const url = pg?.url ?? join(dir.path, 'muster.db')
    try {
      const before = MIGRATIONS.filter((m) => m.id < 120)
      const old = await openStore(url, before)
      const now = Date.now()
      for (const [i, outcome] of ['enrolled', 'refused', 'node-exists', 'invalid', 'worker-newer'].entries()) {
        await old.run('INSERT INTO enroll_audit (at, outcome, reason, node_id, version) VALUES (?1, ?2, NULL, NULL, NULL)', now + i, outcome)
      }
      await old.close()
      const store = await openStore(url)
      try {
        const rows = await store.all<{ outcome: string; budget: string }>('SELECT outcome, budget FROM enroll_audit ORDER BY id')
        expect(rows.map((r) => `${r.outcome}:${r.budget}`)).toEqual(['enrolled:enrollments', 'refused:refusals', 'node-exists:enrollments', 'invalid:refusals', 'worker-newer:enrollments'])
        expect((await listAudit(store, now)).map((r) => r.outcome)).toEqual(['worker-newer', 'invalid', 'node-exists', 'refused', 'enrolled'])
      } finally {
        await store.close()
      }
    } finally {
      await pg?.drop()
    }
  })

  test('a store made by a version without migrations 10 and 120 (later ones applied) takes them afterwards', async () => {
    using dir = tmpDir()
    const pg = engine === 'postgres' ? await freshDatabase({ empty: true }) : undefined
    const url = pg?.url ?? join(dir.path, 'muster.db')
    try {
      // What a data directory made by main before this work holds: every migration but these two, 110, 210, 401, 402 included.
      const without = MIGRATIONS.filter((m) => m.id !== 10 && m.id !== 120)
      expect(without.some((m) => m.id > 120)).toBe(true)
      const old = await openStore(url, without)
      await old.run("INSERT INTO enroll_audit (at, outcome, reason, node_id, version) VALUES (1, 'enrolled', NULL, 'w1', NULL)")
      await old.run("INSERT INTO api_tokens (id, name, secret_hash, role, account, created_at) VALUES ('aaaaaaaaaaaaaaaa', 'ci', 'x', 'operator', NULL, 1)")
      await old.close()
      const store = await openStore(url)
      try {
        const ids = (await store.all<{ id: number }>('SELECT id FROM schema_migrations ORDER BY id')).map((r) => r.id)
        expect(ids).toEqual(MIGRATIONS.map((m) => m.id).sort((a, b) => a - b))
        expect(await store.get('SELECT budget FROM enroll_audit')).toEqual({ budget: 'enrollments' })
        expect(await store.get('SELECT expires_at, origin FROM api_tokens')).toEqual({ expires_at: null, origin: 'host' })
      } finally {
        await store.close()
      }
    } finally {
      await pg?.drop()
    }
  })
})
