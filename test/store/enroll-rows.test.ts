// An enroll's one read and one write (src/store/enroll-rows.ts), on both
// engines: the read gives what the separate reads give (every column of the
// token among them); the write takes the use, inserts the node and writes its
// audit entry together, writes nothing when the token has no use left, and
// spends no use when the name or the certificate is taken; and racing
// enrolls on a token with 100 uses enroll exactly 100 nodes.
import { describe, expect, test } from 'bun:test'
import { enrollReads, TOKEN_COLUMNS, writeEnrolledNode, type NewEnrolledNode } from '../../src/store/enroll-rows.ts'
import { getJoinToken, insertJoinToken } from '../../src/store/join-tokens.ts'
import { deleteNodeWithTombstone, insertNode, nodesByNameOrCert } from '../../src/store/nodes.ts'
import type { Store } from '../../src/store/db.ts'
import { ENGINES, freshStore } from '../helpers/postgres.ts'

const NOW = 1_760_000_000_000

async function token(store: Store, id: string, maxUses: number, over: { revoked?: boolean; expired?: boolean } = {}): Promise<void> {
  await insertJoinToken(store, { id, secret_hash: `h-${id}`, kind: 'fleet', node_id: null, name_pattern: null, label: null, max_uses: maxUses, created_at: NOW - 1000, expires_at: over.expired ? NOW - 1 : NOW + 3_600_000 })
  if (over.revoked) await store.run('UPDATE join_tokens SET revoked_at = ?2 WHERE id = ?1', id, NOW - 1)
}

const node = (name: string, cert: string, tokenId: string): NewEnrolledNode => ({ name, cert_sha256: cert, cert_pem: `pem ${name}`, url: null, token_id: tokenId, version: '0.1.0', labels: null, enrolled_at: NOW, auditReason: null, auditVersion: '0.1.0' })

const counts = async (store: Store, tokenId: string) => ({
  uses: Number((await getJoinToken(store, tokenId))!.uses),
  nodes: Number((await store.get<{ n: number }>('SELECT count(*) AS n FROM nodes'))!.n),
  audit: Number((await store.get<{ n: number }>("SELECT count(*) AS n FROM enroll_audit WHERE outcome = 'enrolled'"))!.n),
})

describe.each(ENGINES)('on %s', (engine) => {
  test('the one read gives what the separate reads give, every column of the token among them', async () => {
    await using s = await freshStore(engine)
    const store = s.store
    await token(store, 'tokaaaaaaaaaaaaa', 5)
    await insertNode(store, { name: 'named', auth: 'enrolled', cert_sha256: 'c-named', cert_pem: 'pem', url: null, token_id: 'tokaaaaaaaaaaaaa', version: '0.1.0', enrolled_at: NOW })
    await insertNode(store, { name: 'holder', auth: 'enrolled', cert_sha256: 'c-holder', cert_pem: 'pem', url: null, token_id: 'tokaaaaaaaaaaaaa', version: '0.1.0', enrolled_at: NOW })
    await insertNode(store, { name: 'gone', auth: 'enrolled', cert_sha256: 'c-gone', cert_pem: 'pem', url: null, token_id: null, version: null, enrolled_at: NOW })
    await deleteNodeWithTombstone(store, 'gone', NOW)
    const columns = Object.keys((await store.get<Record<string, unknown>>('SELECT * FROM join_tokens WHERE id = ?1', 'tokaaaaaaaaaaaaa'))!).sort()
    expect([...TOKEN_COLUMNS].sort() as string[]).toEqual(columns)
    for (const [name, cert] of [['named', 'c-holder'], ['named', 'c-none'], ['nobody', 'c-holder'], ['nobody', 'c-none'], ['gone', 'c-none'], ['named', 'c-named']] as const) {
      const r = await enrollReads(store, 'tokaaaaaaaaaaaaa', name, cert)
      const separate = await nodesByNameOrCert(store, name, cert)
      expect({ name, cert, named: r.named, holder: r.holder }).toEqual({ name, cert, ...separate })
      expect(r.token).toEqual(await getJoinToken(store, 'tokaaaaaaaaaaaaa'))
      expect(r.tombstoned).toBe(name === 'gone')
    }
    expect((await enrollReads(store, 'nosuchtoken00000', 'named', 'c-none')).token).toBeNull()
  })

  test('the write takes the use, the node and its audit entry together; nothing without a use; no use spent on a taken name', async () => {
    await using s = await freshStore(engine)
    const store = s.store
    await token(store, 'tokbbbbbbbbbbbbb', 1)
    await token(store, 'tokrevokedaaaaaa', 5, { revoked: true })
    await token(store, 'tokexpiredaaaaaa', 5, { expired: true })
    const row = await store.tx((t) => writeEnrolledNode(t, node('first', 'c1', 'tokbbbbbbbbbbbbb'), NOW))
    expect(row).toMatchObject({ name: 'first', cert_sha256: 'c1', auth: 'enrolled', token_id: 'tokbbbbbbbbbbbbb', generation: 1, enrolled_at: NOW, revoked_at: null })
    expect(await counts(store, 'tokbbbbbbbbbbbbb')).toEqual({ uses: 1, nodes: 1, audit: 1 })
    // used up, revoked, expired: nothing is written
    for (const id of ['tokbbbbbbbbbbbbb', 'tokrevokedaaaaaa', 'tokexpiredaaaaaa']) {
      expect(await store.tx((t) => writeEnrolledNode(t, node(`n-${id}`, `c-${id}`, id), NOW))).toBe('used-up')
    }
    expect(await counts(store, 'tokbbbbbbbbbbbbb')).toEqual({ uses: 1, nodes: 1, audit: 1 })
    // the name, then the certificate, taken: no use is spent (the caller rolls back what SQLite took)
    await token(store, 'tokccccccccccccc', 5)
    class Taken extends Error {}
    for (const n of [node('first', 'c-other', 'tokccccccccccccc'), node('other', 'c1', 'tokccccccccccccc')]) {
      const r = await store
        .tx(async (t) => {
          const w = await writeEnrolledNode(t, n, NOW)
          if (w === 'taken') throw new Taken()
          return w
        })
        .catch((e) => (e instanceof Taken ? 'taken' : Promise.reject(e)))
      expect(r).toBe('taken')
    }
    expect(await counts(store, 'tokccccccccccccc')).toEqual({ uses: 0, nodes: 1, audit: 1 })
  })

  test('150 racing writes on a token of 100 uses enroll exactly 100 nodes', async () => {
    await using s = await freshStore(engine)
    const store = s.store
    await token(store, 'tokddddddddddddd', 100)
    const results = await Promise.all(Array.from({ length: 150 }, (_, i) => store.tx((t) => writeEnrolledNode(t, node(`race-${i}`, `c-race-${i}`, 'tokddddddddddddd'), NOW), { group: true })))
    expect(results.filter((r) => r === 'used-up')).toHaveLength(50)
    expect(await counts(store, 'tokddddddddddddd')).toEqual({ uses: 100, nodes: 100, audit: 100 })
  })
})
