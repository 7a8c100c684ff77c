// 3b and 4, performed against `dist/muster serve` (the
// in-process tests beside each fix go deeper; these run the attacks as the
// review did, through the compiled binary):
//   - a superadmin API token planted in the store as the plain SHA-256 of a
//     chosen secret is no token;
//   - a project's env value never reaches the store's files in plain text;
//   - a fleet token whose name pattern is all `*` cannot freeze the Platform:
//     the enroll is answered at once and heartbeats keep being answered.
import { Database } from 'bun:sqlite'
import { describe, expect, test } from 'bun:test'
import { existsSync, readFileSync } from 'node:fs'
import { randomSecret, randomId, sha256Hex } from '../../src/crypto/tokens.ts'
import { VERSION } from '../../src/version.ts'
import { runMuster, startServeWithListener } from '../helpers/binary.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import { tmpDir } from '../helpers/tmp.ts'

const json = async <T>(args: string[], env: Record<string, string>): Promise<T> => {
  const r = await runMuster([...args, '--json'], { env })
  expect(r.stderr).toBe('')
  expect(r.code).toBe(0)
  return JSON.parse(r.stdout) as T
}

describe('attacks on the store and the enroll path, through dist/muster', () => {
  test('a planted plain-digest superadmin token is refused; an env value is nowhere in the store files; an all-* pattern freezes nothing', async () => {
    using dir = tmpDir()
    const data = `${dir.path}/platform`
    await using serve = await startServeWithListener(data)
    const env = serve.env
    const get = (token: string) => fetch(`${serve.url}/api/v1/nodes`, { headers: { authorization: `Bearer ${token}` } })

    // 1. A row written into api_tokens with the plain SHA-256 of a chosen secret (what worked before): 401, and the CLI says so.
    const id = randomId(16)
    const secret = randomSecret()
    const db = new Database(`${data}/muster.db`)
    db.run("INSERT INTO api_tokens (id, name, secret_hash, role, account, created_at, origin) VALUES (?1, 'planted', ?2, 'superadmin', NULL, ?3, 'host')", [id, sha256Hex(secret), Date.now()])
    db.close()
    const planted = `mat_${id}.${secret}`
    expect((await get(planted)).status).toBe(401)
    expect((await get(env.MUSTER_TOKEN)).status).toBe(200)
    const viaCli = await runMuster(['tokens', 'list'], { env: { MUSTER_URL: serve.url, MUSTER_TOKEN: planted } })
    expect(viaCli.code).toBe(1)
    const mint = await fetch(`${serve.url}/api/v1/api-tokens`, { method: 'POST', headers: { authorization: `Bearer ${planted}`, 'content-type': 'application/json' }, body: '{"name":"x","role":"superadmin"}' })
    expect(mint.status).toBe(401)

    // 2. An env value deployed through the CLI: sealed wherever the store keeps it (main file and WAL).
    const value = `s3cret-${randomSecret().slice(0, 20)}`
    const deployed = await runMuster(['projects', 'deploy', 'web', '--replicas', '1', '--env', `API_KEY=${value}`, '--', 'sleep', '60'], { env })
    expect(deployed.code).toBe(0)
    const shown = await json<{ env?: Record<string, string> }>(['projects', 'show', 'web'], env)
    expect(shown.env?.API_KEY).toBe(value) // a superadmin sees it through the API
    for (const f of ['muster.db', 'muster.db-wal']) {
      const path = `${data}/${f}`
      if (!existsSync(path)) continue
      const bytes = readFileSync(path)
      expect({ f, plain: bytes.includes(value) }).toEqual({ f, plain: false })
      expect({ f, digest: bytes.includes(sha256Hex(value)) }).toEqual({ f, digest: false })
    }

    // 3. A fleet token whose pattern is a run of `*` before one letter, and a 40-character name that does not match it:
    //    a backtracking matcher takes minutes on this; the enroll must be answered at once while a node's heartbeats are.
    const honest = await json<{ token: string }>(['nodes', 'join-token', 'create', '--max-uses', '2', '--name-pattern', 'h*'], env)
    const hb = await newCert('h1')
    const joined = await enrollRaw(serve.url, { token: honest.token, nodeId: 'h1', certPem: hb.certPem, version: VERSION })
    expect(joined.status).toBe(200)
    const { credential } = (await joined.json()) as { credential: string }
    const beat = async () => {
      const t = performance.now()
      const r = await fetch(`${serve.url}/api/v1/nodes/register`, { method: 'POST', headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' }, body: '{}' })
      expect(r.status).toBe(200)
      return performance.now() - t
    }
    await beat()
    const evil = await json<{ token: string }>(['nodes', 'join-token', 'create', '--max-uses', '5', '--name-pattern', `${'*'.repeat(30)}z`], env)
    const name = 'a'.repeat(40)
    const started = performance.now()
    const enrolling = enrollRaw(serve.url, { token: evil.token, nodeId: name, certPem: (await newCert(name)).certPem, version: VERSION })
    const beats: number[] = []
    for (let i = 0; i < 10; i++) beats.push(await beat())
    const refused = await enrolling
    const tookMs = performance.now() - started
    expect(refused.status).toBe(403) // the name does not match: the one refusal
    // Generous bounds for a loaded machine; the backtracking matcher took minutes here.
    expect(tookMs).toBeLessThan(5_000)
    expect(Math.max(...beats)).toBeLessThan(2_000)
  })
})
