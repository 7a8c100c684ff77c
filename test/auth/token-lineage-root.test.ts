// What a token of no account mints acts as it in the audit (docs/accounts-audit.md, the audit's
// principals): each token records the first token of its lineage, so a child, a grandchild and
// further are `token:<the root's id>`, never principals of their own with their own shares of the
// audit budget. Tokens minted by a version that recorded only the parent get their root at the
// upgrade, by following their parents, so descendants minted before it gain no names either.
import { describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomId, randomSecret, sha256Hex } from '../../src/crypto/tokens.ts'
import { openStore } from '../../src/store/db.ts'
import { MIGRATIONS } from '../../src/store/migrations.ts'
import { onEngine, startPlatform } from '../helpers/platform.ts'
import { ENGINES, freshDatabase } from '../helpers/postgres.ts'

describe.each(ENGINES)('on %s', (engine) => {
  onEngine(engine)

  test('a store whose tokens named only their parents: after the upgrade a great-grandchild writes as the root', { timeout: 60_000 }, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'muster-lineage-'))
    const db = engine === 'postgres' ? await freshDatabase({ empty: true }) : undefined
    try {
      // The store as the version before lineage roots left it (and before keyed digests, so plain
      // digests of chosen secrets are what that version would have written; the upgrade re-keys them).
      const old = await openStore(db?.url ?? join(dataDir, 'muster.db'), MIGRATIONS.filter((m) => m.id !== 20 && m.id !== 310 && m.id !== 45))
      const now = Date.now()
      const chain = Array.from({ length: 4 }, () => ({ id: randomId(16), secret: randomSecret() }))
      const other = { id: randomId(16), secret: randomSecret() }
      for (const [i, t] of chain.entries()) {
        await old.run("INSERT INTO api_tokens (id, name, secret_hash, role, account, created_at, origin, parent_id) VALUES (?1, ?2, ?3, 'operator', NULL, ?4, ?5, ?6)", t.id, `t${i}`, sha256Hex(t.secret), now, i === 0 ? 'host' : 'api', i === 0 ? null : chain[i - 1]!.id)
      }
      await old.run("INSERT INTO api_tokens (id, name, secret_hash, role, account, created_at, origin) VALUES (?1, 'other', ?2, 'operator', NULL, ?3, 'host')", other.id, sha256Hex(other.secret), now)
      await old.close()

      await using p = await startPlatform({ dataDir, database: db?.url })
      const roots = await p.platform.store.all<{ id: string; root_id: string | null }>('SELECT id, root_id FROM api_tokens ORDER BY id')
      const planted = new Set([...chain.map((t) => t.id), other.id])
      expect(new Map(roots.filter((r) => planted.has(r.id)).map((r) => [r.id, r.root_id]))).toEqual(new Map([...chain.map((t, i) => [t.id, i === 0 ? null : chain[0]!.id] as const), [other.id, null]]))

      // Each writes once (a token of its own); each entry is the root's, naming the token that wrote.
      const last = chain.at(-1)!
      for (const t of [chain[0]!, last, other]) {
        const res = await fetch(`${p.url}/api/v1/api-tokens`, { method: 'POST', headers: { authorization: `Bearer mat_${t.id}.${t.secret}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'new' }) })
        expect(res.status).toBe(200)
        // And what it mints now continues the lineage.
        const minted = (await res.json()) as { id: string }
        expect((await p.platform.store.get<{ root_id: string | null }>('SELECT root_id FROM api_tokens WHERE id = ?1', minted.id))?.root_id).toBe(t === other ? other.id : chain[0]!.id)
      }
      const mints = await p.platform.store.all<{ principal: string; token_id: string }>("SELECT principal, token_id FROM audit_log WHERE action = 'token.mint' AND token_id IS NOT NULL ORDER BY id")
      expect(mints).toEqual([
        { principal: `token:${chain[0]!.id}`, token_id: chain[0]!.id },
        { principal: `token:${chain[0]!.id}`, token_id: last.id },
        { principal: `token:${other.id}`, token_id: other.id },
      ])
    } finally {
      await db?.drop()
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
})
