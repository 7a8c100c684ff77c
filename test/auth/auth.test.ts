import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { startPlatform } from '../helpers/platform.ts'

async function password(dataDir: string) {
  return readFileSync(`${dataDir}/platform/initial-superadmin-password`, 'utf8').trim()
}

describe('operators', () => {
  test('login sets an HttpOnly SameSite=Strict session cookie that authenticates; logout ends it', async () => {
    await using p = await startPlatform()
    const res = await fetch(`${p.url}/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ identifier: 'superadmin', password: await password(p.dataDir) }),
    })
    expect(res.status).toBe(200)
    const setCookie = res.headers.get('set-cookie') ?? ''
    expect(setCookie).toMatch(/^muster_session=[A-Za-z0-9_-]{43};/)
    expect(setCookie).toContain('HttpOnly')
    expect(setCookie).toContain('SameSite=Strict')
    const cookie = setCookie.split(';')[0]!
    const who = await fetch(`${p.url}/api/v1/whoami`, { headers: { cookie } })
    expect(who.status).toBe(200)
    expect(await who.json()).toMatchObject({ account: 'superadmin', role: 'superadmin', kind: 'session' })
    await fetch(`${p.url}/logout`, { method: 'POST', headers: { cookie } })
    expect((await fetch(`${p.url}/api/v1/whoami`, { headers: { cookie } })).status).toBe(401)
  })

  test('form login answers 303 with the cookie', async () => {
    await using p = await startPlatform()
    const body = new URLSearchParams({ identifier: 'superadmin', password: await password(p.dataDir) })
    const res = await fetch(`${p.url}/login`, { method: 'POST', body, redirect: 'manual' })
    expect(res.status).toBe(303)
    expect(res.headers.get('set-cookie')).toContain('muster_session=')
  })

  test('a wrong password and an unknown account get the same 401', async () => {
    await using p = await startPlatform()
    const login = (identifier: string, pw: string) =>
      fetch(`${p.url}/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ identifier, password: pw }) })
    const a = await login('superadmin', 'wrong-password')
    const b = await login('nobody', 'wrong-password')
    expect(a.status).toBe(401)
    expect(b.status).toBe(401)
    expect(await a.text()).toBe(await b.text())
    expect(a.headers.get('set-cookie')).toBeNull()
  })

  test('API token roles: 401 without credentials, 403 without the permission, 200 with it', async () => {
    await using p = await startPlatform()
    const viewer = (await p.platform.auth.mintApiToken({ name: 'v', role: 'viewer' })).token
    const operator = (await p.platform.auth.mintApiToken({ name: 'o', role: 'operator' })).token
    const mint = (token: string | undefined, role: string) =>
      fetch(`${p.url}/api/v1/api-tokens`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: JSON.stringify({ role }),
      })
    const none = await mint(undefined, 'viewer')
    expect(none.status).toBe(401)
    expect(await none.json()).toMatchObject({ error: { code: 'unauthorized' } })
    expect((await mint(viewer, 'operator')).status).toBe(403)
    expect((await mint(operator, 'superadmin')).status).toBe(403)
    const ok = await mint(operator, 'operator')
    expect(ok.status).toBe(200)
    const minted = (await ok.json()) as { token: string }
    expect(minted.token).toMatch(/^mat_[a-z2-7]{16}\.[A-Za-z0-9_-]{43}$/)
    expect((await fetch(`${p.url}/api/v1/whoami`, { headers: { authorization: `Bearer ${minted.token}` } })).status).toBe(200)
    // a tampered secret is not a credential
    const tampered = `${minted.token.slice(0, -1)}${minted.token.endsWith('A') ? 'B' : 'A'}`
    expect((await fetch(`${p.url}/api/v1/whoami`, { headers: { authorization: `Bearer ${tampered}` } })).status).toBe(401)
  })

  test('API tokens are stored as SHA-256 digests only', async () => {
    await using p = await startPlatform()
    const { token } = await p.platform.auth.mintApiToken({ name: 'x', role: 'viewer' })
    const secret = token.split('.')[1]!
    const rows = await p.platform.store.all('SELECT * FROM api_tokens')
    expect(JSON.stringify(rows)).not.toContain(secret)
  })
})

describe('HTTP contract', () => {
  test('a malformed body is 400 invalid-request naming the field', async () => {
    await using p = await startPlatform()
    const res = await fetch(`${p.url}/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ identifier: 7, password: 'x' }) })
    expect(res.status).toBe(400)
    const body = (await res.json()) as { error: { code: string; message: string } }
    expect(body.error.code).toBe('invalid-request')
    expect(body.error.message).toContain('identifier')
  })

  test('unparseable JSON is 400, never a stack trace', async () => {
    await using p = await startPlatform()
    const res = await fetch(`${p.url}/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"identifier":' })
    expect(res.status).toBe(400)
    const text = await res.text()
    expect(JSON.parse(text)).toMatchObject({ error: { code: 'invalid-request' } })
    expect(text).not.toMatch(/at .*\.ts:\d+/)
  })

  test('an unknown route is a JSON 404', async () => {
    await using p = await startPlatform()
    const res = await fetch(`${p.url}/api/v1/nope`)
    expect(res.status).toBe(404)
    expect(await res.json()).toEqual({ error: { code: 'not-found', message: 'No such route.' } })
  })

  test('healthz needs no auth', async () => {
    await using p = await startPlatform()
    const res = await fetch(`${p.url}/healthz`)
    expect(res.status).toBe(200)
    expect(await res.json()).toMatchObject({ ok: true, version: expect.stringMatching(/^\d+\.\d+\.\d+/) })
  })
})

describe('login CSRF', () => {
  test('a form login from another origin is refused; from the same origin it works', async () => {
    await using p = await startPlatform()
    const body = () => new URLSearchParams({ identifier: 'superadmin', password: readFileSync(`${p.dataDir}/platform/initial-superadmin-password`, 'utf8').trim() })
    const foreign = await fetch(`${p.url}/login`, { method: 'POST', body: body(), headers: { origin: 'https://evil.example' }, redirect: 'manual' })
    expect(foreign.status).toBe(403)
    expect(foreign.headers.get('set-cookie')).toBeNull()
    const same = await fetch(`${p.url}/login`, { method: 'POST', body: body(), headers: { origin: p.url }, redirect: 'manual' })
    expect(same.status).toBe(303)
  })
})

describe('request hygiene', () => {
  test('a validation error never repeats the body it refused (it can hold a secret)', async () => {
    await using p = await startPlatform()
    for (const [type, body] of [
      ['text/plain', '{"identifier":"superadmin","password":"SECRET-PASSWORD-123"}'],
      ['application/json', '"SECRET-PASSWORD-123"'],
      ['application/json', '{"identifier":"SECRET-PASSWORD-123","password":5}'],
    ] as const) {
      const r = await fetch(`${p.url}/login`, { method: 'POST', headers: { 'content-type': type }, body })
      expect(r.status).toBe(400)
      expect(await r.text()).not.toContain('SECRET-PASSWORD-123')
    }
  })

  test('changes made with the session cookie must be same-origin JSON; API tokens are unaffected', async () => {
    await using p = await startPlatform({ remoteDispatch: true })
    const login = await fetch(`${p.url}/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ identifier: 'superadmin', password: readFileSync(`${p.dataDir}/platform/initial-superadmin-password`, 'utf8').trim() }) })
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!
    const enroll = (headers: Record<string, string>, body: string) => fetch(`${p.url}/api/v1/nodes/enrollments`, { method: 'POST', headers: { cookie, ...headers }, body })
    expect((await enroll({ 'content-type': 'application/x-www-form-urlencoded' }, 'nodeId=w1')).status).toBe(403)
    expect((await enroll({ 'content-type': 'text/plain' }, '{"nodeId":"w1"}')).status).toBe(403)
    expect((await enroll({ 'content-type': 'application/json', origin: 'http://127.0.0.1:1' }, '{"nodeId":"w1"}')).status).toBe(403)
    expect((await p.client.nodes.list()).pendingEnrollments).toEqual([])
    expect((await enroll({ 'content-type': 'application/json', origin: p.url }, '{"nodeId":"w1"}')).status).toBe(200)
    const viaToken = await fetch(`${p.url}/api/v1/nodes/enrollments`, { method: 'POST', headers: { authorization: `Bearer ${p.token}`, 'content-type': 'application/json', origin: 'http://elsewhere' }, body: '{"nodeId":"w2"}' })
    expect(viaToken.status).toBe(200)
  })
})
