// whoever can write the store but does not hold
// platform/master.key cannot make a working credential. Digests of API tokens,
// sessions, join tokens and office tokens are HMACs under a key derived from
// master.key: a row holding the plain SHA-256 of a secret the writer chose
// (what made a superadmin token before) authenticates nothing. Rows an older
// version wrote are re-keyed once, at the upgrade, and keep working.
import { describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { tokenDigester } from '../../src/crypto/token-digest.ts'
import { b64url, randomBytes, randomId, randomSecret, sha256Hex } from '../../src/crypto/tokens.ts'
import { formatOfficeToken, tokenFingerprint } from '../../src/wire/federation-formats.ts'
import { openStore } from '../../src/store/db.ts'
import { MIGRATIONS } from '../../src/store/migrations.ts'
import { VERSION } from '../../src/version.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import { onEngine, startPlatform, type TestPlatform } from '../helpers/platform.ts'
import { ENGINES, freshDatabase } from '../helpers/postgres.ts'

const api = (p: TestPlatform, headers: Record<string, string>) => fetch(`${p.url}/api/v1/nodes`, { headers })

/** A row for an API token `mat_<id>.<secret>` of role superadmin with this digest, written straight into the store. */
async function plantApiToken(p: TestPlatform, digest: (secret: string) => string): Promise<string> {
  const id = randomId(16)
  const secret = randomSecret()
  await p.platform.store.run("INSERT INTO api_tokens (id, name, secret_hash, role, account, created_at, origin) VALUES (?1, 'planted', ?2, 'superadmin', NULL, ?3, 'host')", id, digest(secret), Date.now())
  return `mat_${id}.${secret}`
}

describe.each(ENGINES)('on %s', (engine) => {
  onEngine(engine)

  describe('a row written into the store without master.key', () => {
    test('an api_tokens row with the plain SHA-256 of a chosen secret is no token (401); one muster minted works', async () => {
      await using p = await startPlatform()
      expect((await api(p, { authorization: `Bearer ${p.token}` })).status).toBe(200)
      const plain = await plantApiToken(p, sha256Hex)
      const r = await api(p, { authorization: `Bearer ${plain}` })
      expect(r.status).toBe(401)
      // Nor a digest keyed under some other master key (another Platform's, a guessed one).
      const otherKey = await plantApiToken(p, tokenDigester(randomBytes(32)))
      expect((await api(p, { authorization: `Bearer ${otherKey}` })).status).toBe(401)
      // Nor can it mint: the planted row opens no route at all.
      const mint = await fetch(`${p.url}/api/v1/api-tokens`, { method: 'POST', headers: { authorization: `Bearer ${plain}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'x', role: 'superadmin' }) })
      expect(mint.status).toBe(401)
      // What muster stores is neither the secret nor its SHA-256.
      const stored = JSON.stringify(await p.platform.store.all('SELECT secret_hash FROM api_tokens'))
      const secret = p.token.split('.')[1]!
      expect(stored).not.toContain(secret)
      expect(stored).not.toContain(sha256Hex(secret))
    })

    test('a sessions row with the plain SHA-256 of a chosen session id opens no session', async () => {
      await using p = await startPlatform()
      const sid = randomSecret()
      await p.platform.store.run("INSERT INTO sessions (id_hash, account, created_at, expires_at, origin) VALUES (?1, 'superadmin', ?2, ?3, 'password')", sha256Hex(sid), Date.now(), Date.now() + 3600_000)
      expect((await api(p, { cookie: `muster_session=${sid}` })).status).toBe(401)
      // The same row keyed the way muster keys it is a session: the refusal is the key's doing.
      const keyed = randomSecret()
      await p.platform.store.run("INSERT INTO sessions (id_hash, account, created_at, expires_at, origin) VALUES (?1, 'superadmin', ?2, ?3, 'password')", tokenDigester(p.platform.masterKey)(keyed), Date.now(), Date.now() + 3600_000)
      expect((await api(p, { cookie: `muster_session=${keyed}` })).status).toBe(200)
    })

    test('a join_tokens row with the plain SHA-256 of a chosen secret enrolls nothing', async () => {
      await using p = await startPlatform({ remoteDispatch: true })
      const id = randomId(16)
      const secret = randomSecret()
      await p.platform.store.run("INSERT INTO join_tokens (id, secret_hash, kind, node_id, name_pattern, label, max_uses, created_at, expires_at) VALUES (?1, ?2, 'fleet', NULL, NULL, NULL, 10, ?3, ?4)", id, sha256Hex(secret), Date.now(), Date.now() + 3600_000)
      const cert = await newCert('planted')
      const r = await enrollRaw(p.url, { token: `mjt_${id}.${secret}`, nodeId: 'planted', certPem: cert.certPem, version: VERSION })
      expect(r.status).toBe(403)
      expect((await p.client.nodes.list()).nodes.map((n) => n.name)).not.toContain('planted')
      // A fleet token muster made enrolls.
      const fleet = await p.client.nodes.createJoinToken({ maxUses: 1 })
      expect((await enrollRaw(p.url, { token: fleet.token, nodeId: 'honest', certPem: (await newCert('honest')).certPem, version: VERSION })).status).toBe(200)
    })

    test('a federation_tokens row with the plain SHA-256 of a chosen secret registers no office', async () => {
      await using p = await startPlatform()
      // The controller exists (one honest office), so its key is known to whoever reads a token.
      const honest = await p.client.federation.mint({ officeId: 'office-a' })
      const controllerKey = honest.token.split(':')[2]!
      const secret = randomSecret()
      await p.platform.store.run("INSERT INTO federation_offices (office_id, created_at) VALUES ('office-x', ?1)", Date.now())
      await p.platform.store.run("INSERT INTO federation_tokens (office_id, secret_hash, created_at) VALUES ('office-x', ?1, ?2)", sha256Hex(secret), Date.now())
      const token = `mof1:office-x:${controllerKey}:${secret}`
      expect(token).toBe(formatOfficeToken('office-x', new Uint8Array(Buffer.from(controllerKey, 'base64url')), secret))
      const r = await fetch(`${p.url}/api/v1/federation/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token, officeId: 'office-x', advertiseUrl: 'http://127.0.0.1:9', nonce: b64url(randomBytes(32)) }) })
      expect(r.status).toBe(403)
      expect(((await r.json()) as { error: { code: string } }).error.code).toBe('federation-refused')
    })
  })

  describe('upgrading a store whose digests an older version wrote', () => {
    test('its rows are re-keyed once and keep working; a plain row planted after that is dead', { timeout: 60_000 }, async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'muster-rekey-'))
      const db = engine === 'postgres' ? await freshDatabase({ empty: true }) : undefined
      try {
        // The store as the version before keyed digests left it.
        const old = await openStore(db?.url ?? join(dataDir, 'muster.db'), MIGRATIONS.filter((m) => m.id !== 20 && m.id !== 310))
        const tokenId = randomId(16)
        const secret = randomSecret()
        const sid = randomSecret()
        const joinId = randomId(16)
        const joinSecret = randomSecret()
        const now = Date.now()
        await old.run("INSERT INTO api_tokens (id, name, secret_hash, role, account, created_at, origin) VALUES (?1, 'before', ?2, 'superadmin', NULL, ?3, 'host')", tokenId, sha256Hex(secret), now)
        await old.run("INSERT INTO accounts (name, role, password_hash, created_at) VALUES ('ops', 'operator', NULL, ?1)", now)
        await old.run("INSERT INTO sessions (id_hash, account, created_at, expires_at) VALUES (?1, 'ops', ?2, ?3)", sha256Hex(sid), now, now + 3600_000)
        await old.run("INSERT INTO join_tokens (id, secret_hash, kind, node_id, name_pattern, label, max_uses, created_at, expires_at) VALUES (?1, ?2, 'fleet', NULL, NULL, NULL, 1, ?3, ?4)", joinId, sha256Hex(joinSecret), now, now + 3600_000)
        const officeSecret = randomSecret()
        await old.run("INSERT INTO federation_offices (office_id, created_at) VALUES ('office-o', ?1)", now)
        await old.run("INSERT INTO federation_tokens (office_id, secret_hash, created_at) VALUES ('office-o', ?1, ?2)", sha256Hex(officeSecret), now)
        await old.close()

        await using p = await startPlatform({ dataDir, database: db?.url, remoteDispatch: true })
        expect((await api(p, { authorization: `Bearer mat_${tokenId}.${secret}` })).status).toBe(200)
        expect((await api(p, { cookie: `muster_session=${sid}` })).status).toBe(200)
        expect((await enrollRaw(p.url, { token: `mjt_${joinId}.${joinSecret}`, nodeId: 'w1', certPem: (await newCert('w1')).certPem, version: VERSION })).status).toBe(200)
        const rows = await p.platform.store.all<{ d: string }>('SELECT secret_hash AS d FROM api_tokens UNION ALL SELECT id_hash FROM sessions UNION ALL SELECT secret_hash FROM join_tokens')
        expect(rows.every((r) => r.d.startsWith('k1:'))).toBe(true)
        // An office token keeps the fingerprint both sides sign over; its digest is keyed like the rest.
        const office = await p.platform.store.get<{ secret_hash: string; fingerprint: string }>("SELECT secret_hash, fingerprint FROM federation_tokens WHERE office_id = 'office-o'")
        expect(office).toEqual({ secret_hash: tokenDigester(p.platform.masterKey)(officeSecret), fingerprint: tokenFingerprint('office-o', sha256Hex(officeSecret)) })
        // Later plain rows are never re-keyed, even with the record of the re-key deleted and the Platform restarted.
        const planted = await plantApiToken(p, sha256Hex)
        await p.platform.store.run('DELETE FROM token_digest_state')
        await p.close()
        await using again = await startPlatform({ dataDir, database: db?.url })
        expect((await api(again, { authorization: `Bearer ${planted}` })).status).toBe(401)
        expect((await api(again, { authorization: `Bearer mat_${tokenId}.${secret}` })).status).toBe(200)
      } finally {
        await db?.drop()
        rmSync(dataDir, { recursive: true, force: true })
      }
    })
  })
})
