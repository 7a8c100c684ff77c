// docs/security.md through dist/muster: a project's env values (passwords, keys) are
// shown only to server.projects.manage; a viewer sees the keys with "***", on
// the API and in `muster projects show|list`.
import { expect, test } from 'bun:test'
import { runMuster, startServe } from '../helpers/binary.ts'
import { tmpDir } from '../helpers/tmp.ts'

test('a viewer token reads env keys, never env values', async () => {
  using dir = tmpDir()
  await using serve = await startServe(`${dir.path}/platform`)
  const admin = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', `${dir.path}/platform`, '--json'])).stdout) as { token: string }
  const mint = async (role: string) => {
    const res = await fetch(`${serve.url}/api/v1/api-tokens`, { method: 'POST', headers: { authorization: `Bearer ${admin.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: `t-${role}`, role }) })
    expect(res.status).toBe(200)
    return ((await res.json()) as { token: string }).token
  }
  const viewer = await mint('viewer')
  const operator = await mint('operator')
  const secret = `hunter2-${crypto.randomUUID()}`
  const deployed = await runMuster(['projects', 'deploy', 'db', '--replicas', '0', '--env', `DB_PASSWORD=${secret}`, '--env', 'MODE=prod', '--', 'sleep', '1'], { env: { MUSTER_URL: serve.url, MUSTER_TOKEN: admin.token } })
  expect(deployed.code).toBe(0)

  // The API, as a viewer: keys kept, values masked, in the list and in one project.
  const api = (path: string, token: string) => fetch(`${serve.url}${path}`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.text())
  for (const path of ['/api/v1/projects', '/api/v1/projects/db']) {
    const text = await api(path, viewer)
    expect(text).not.toContain(secret)
    expect(text).not.toContain('prod')
    expect(text).toContain('"DB_PASSWORD":"***"')
  }
  // Those who may change projects (operator, superadmin) see the values.
  for (const token of [operator, admin.token]) expect(await api('/api/v1/projects/db', token)).toContain(secret)

  // The CLI, as a viewer.
  const asViewer = { MUSTER_URL: serve.url, MUSTER_TOKEN: viewer }
  const shown = await runMuster(['projects', 'show', 'db', '--json'], { env: asViewer })
  expect(shown.code).toBe(0)
  expect((JSON.parse(shown.stdout) as { env: Record<string, string> }).env).toEqual({ DB_PASSWORD: '***', MODE: '***' })
  const human = await runMuster(['projects', 'show', 'db'], { env: asViewer })
  expect(human.stdout).toContain('DB_PASSWORD=***')
  expect(human.stdout + human.stderr).not.toContain(secret)
  const list = await runMuster(['projects', 'list', '--json'], { env: asViewer })
  expect(list.stdout).not.toContain(secret)
  expect((JSON.parse(list.stdout) as { projects: { env: Record<string, string> }[] }).projects[0]!.env).toEqual({ DB_PASSWORD: '***', MODE: '***' })
  // …and as the superadmin, who deployed it.
  const own = await runMuster(['projects', 'show', 'db'], { env: { MUSTER_URL: serve.url, MUSTER_TOKEN: admin.token } })
  expect(own.stdout).toContain(`DB_PASSWORD=${secret}`)
})
