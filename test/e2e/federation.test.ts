// Federation through dist/muster: a controller and two offices as separate
// `muster serve` processes on loopback, driven the way an operator would.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { joinWorker, runMuster, startMuster, startServe, type Daemon } from '../helpers/binary.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'
import { freePort, openVouchLink } from '../federation/_helpers.ts'

const dirs = tmpDir('muster-e2e-federation-')
const cDir = `${dirs.path}/controller`
const aDir = `${dirs.path}/office-a`
const bDir = `${dirs.path}/office-b`
const FAST = { MUSTER_FEDERATION_HEARTBEAT_SECONDS: '0.2' }
let controller: Daemon & { url: string }
let env: Record<string, string>
const ports = { a: 0, b: 0 }
const tokens = { a: '', b: '' }
const running: Daemon[] = []

async function office(dir: string, port: number, join?: { token: string }, args: string[] = []): Promise<Daemon> {
  const extra = join ? { MUSTER_CONTROLLER_URL: controller.url, MUSTER_ADVERTISE_URL: `http://127.0.0.1:${port}`, MUSTER_JOIN_TOKEN: join.token } : {}
  const d = await startMuster(['serve', '--data-dir', dir, '--port', String(port), ...args], { env: { ...FAST, ...extra } })
  running.push(d)
  await d.waitForLog(/listening on/)
  return d
}

async function json<T>(args: string[], extraEnv: Record<string, string> = {}): Promise<T> {
  const dashes = args.indexOf('--')
  const argv = dashes < 0 ? [...args, '--json'] : [...args.slice(0, dashes), '--json', ...args.slice(dashes)]
  const r = await runMuster(argv, { env: { ...env, ...extraEnv } })
  if (r.code !== 0) throw new Error(`muster ${args.join(' ')} exited ${r.code}: ${r.stderr}`)
  return JSON.parse(r.stdout) as T
}

/** The office serving on `port` now (never the controller). */
const officeOn = (port: number) => running.find((d) => d !== controller && d.proc.exitCode === null && d.log().includes(`:${port}`))

let joinedBoth: Promise<void> | undefined
/**
 * office-a and office-b minted and joined, both fresh. Every test starts from here (the first
 * one to ask does the work), so each passes alone with -t as well as after the others.
 */
function bothJoined(): Promise<void> {
  joinedBoth ??= (async () => {
    tokens.a = (await json<{ officeId: string; token: string }>(['federation', 'mint', 'office-a', '--label', 'Office A'])).token
    tokens.b = (await json<{ token: string }>(['federation', 'mint', 'office-b'])).token
    await office(aDir, ports.a, { token: tokens.a })
    // office-b takes nodes: a controller's project never runs on an office's local node (docs/security.md)
    await office(bDir, ports.b, { token: tokens.b }, ['--enrollment-port', '0', '--enrollment-address', '127.0.0.1'])
    await waitFor(async () => {
      const o = await offices()
      return o.offices.length === 2 && o.offices.every((x) => x.fresh)
    }, { what: 'both offices fresh', timeoutMs: 30_000 })
  })()
  return joinedBoth
}

let loggedInOnce: Promise<void> | undefined
/** `muster login` to the controller as superadmin, once (the vouch commands use the token it saves); each test that needs it asks. */
function loggedIn(): Promise<void> {
  loggedInOnce ??= (async () => {
    writeFileSync(`${dirs.path}/cpw`, password(cDir), { mode: 0o600 })
    const li = await runMuster(['login', '--platform-url', controller.url, '--identifier', 'superadmin', '--password-file', `${dirs.path}/cpw`], { env: { XDG_CONFIG_HOME: env.XDG_CONFIG_HOME } })
    if (li.code !== 0) throw new Error(`muster login exited ${li.code}: ${li.stderr}`)
  })()
  return loggedInOnce
}

type Offices = { offices: { officeId: string; fresh: boolean; status: string; advertiseUrl: string | null; projects: { name: string; state: string; running: number }[] }[] }
const offices = () => json<Offices>(['federation', 'offices'])
const login = (port: number, identifier: string, password: string) =>
  fetch(`http://127.0.0.1:${port}/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ identifier, password }) })
const password = (dir: string) => readFileSync(`${dir}/platform/initial-superadmin-password`, 'utf8').trim()

beforeAll(async () => {
  controller = await startServe(cDir, [], FAST)
  running.push(controller)
  const { token } = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', cDir, '--json'])).stdout) as { token: string }
  env = { MUSTER_URL: controller.url, MUSTER_TOKEN: token, XDG_CONFIG_HOME: `${dirs.path}/config` }
  ports.a = await freePort()
  ports.b = await freePort()
})

afterAll(async () => {
  for (const d of running) await d.stop()
  dirs[Symbol.dispose]()
})

describe('federation through dist/muster', () => {
  test('mint, join two offices, directory, tokens', async () => {
    await bothJoined()
    expect(tokens.a).toMatch(/^mof1:office-a:[A-Za-z0-9_-]{43}:[A-Za-z0-9_-]{43}$/)
    const again = await runMuster(['federation', 'mint', 'office-a'], { env })
    expect(again.stderr).toContain('--rotate')
    expect(again.code).toBe(1)
    const bad = await runMuster(['federation', 'mint', 'Office_A'], { env })
    expect(bad.code).toBe(2)
    const dir = (await offices()).offices
    expect(dir.map((o) => [o.officeId, o.status, o.advertiseUrl])).toEqual([
      ['office-a', 'active', `http://127.0.0.1:${ports.a}`],
      ['office-b', 'active', `http://127.0.0.1:${ports.b}`],
    ])
    const listed = await json<{ tokens: Record<string, unknown>[] }>(['federation', 'tokens'])
    expect(listed.tokens.map((t) => Object.keys(t).sort())).toEqual([
      ['createdAt', 'label', 'lastSeenAt', 'officeId', 'status'],
      ['createdAt', 'label', 'lastSeenAt', 'officeId', 'status'],
    ])
    expect(JSON.stringify(listed)).not.toContain(tokens.a.split(':')[3]!)
  })

  test('the local door is closed with one answer; a vouch from the controller opens a session', async () => {
    await bothJoined()
    const answers = await Promise.all([login(ports.a, 'superadmin', password(aDir)), login(ports.a, 'superadmin', 'nope'), login(ports.a, 'ghost', 'x')].map(async (r) => [(await r).status, await (await r).text()]))
    expect(answers[0]![0]).toBe(403)
    expect(new Set(answers.map((a) => JSON.stringify(a))).size).toBe(1)
    await loggedIn()
    const asMe = { MUSTER_TOKEN: '' } // use the token `muster login` saved, which names the account
    const v = await json<{ vouch: string; redeemUrl: string; expiresAt: string }>(['federation', 'vouch', 'office-a', '--platform-url', controller.url], asMe)
    expect(v.vouch).toMatch(/^mfv2:office-a:superadmin:superadmin:\d+:/)
    const res = await openVouchLink(v.redeemUrl)
    expect(res.status).toBe(303)
    const cookie = res.headers.get('set-cookie')!.split(';')[0]!
    expect(await (await fetch(`http://127.0.0.1:${ports.a}/api/v1/whoami`, { headers: { cookie } })).json()).toMatchObject({ account: 'superadmin', kind: 'session' })
    const again = await openVouchLink(v.redeemUrl)
    expect(again.status).toBe(409)
    const at = await fetch(`http://127.0.0.1:${ports.a}/api/v1/office/local-authority`, { headers: { cookie } })
    expect(await at.json()).toMatchObject({ joined: true, officeId: 'office-a', localLoginAllowed: false, controller: { state: 'connected' } })
  })

  test('place a project on an office; it is reported back in heartbeats', { timeout: 180_000 }, async () => {
    await bothJoined()
    await loggedIn()
    // A worker joins office-b. A session the controller vouched for cannot enroll it (an enrollment outlives the
    // session): the office's own people do, from its host, with a break-glass token (recorded, reported).
    const officeB = officeOn(ports.b)!
    const [, enrollUrl, fingerprint] = (await officeB.waitForLog(/enrollment listener on (https:\/\/\S+) .*fingerprint (sha256:[0-9a-f]{64})/)) as unknown as [string, string, string]
    const v = await json<{ redeemUrl: string }>(['federation', 'vouch', 'office-b', '--platform-url', controller.url], { MUSTER_TOKEN: '' })
    const cookie = (await openVouchLink(v.redeemUrl)).headers.get('set-cookie')!.split(';')[0]!
    const refused = await fetch(`http://127.0.0.1:${ports.b}/api/v1/nodes/enrollments`, { method: 'POST', headers: { cookie, 'content-type': 'application/json' }, body: '{"nodeId":"b-w1"}' })
    expect(refused.status).toBe(403)
    const own = JSON.parse((await runMuster(['admin', 'api-token', '--break-glass', '--data-dir', bDir, '--json'])).stdout) as { token: string }
    const enrollment = await fetch(`http://127.0.0.1:${ports.b}/api/v1/nodes/enrollments`, { method: 'POST', headers: { authorization: `Bearer ${own.token}`, 'content-type': 'application/json' }, body: '{"nodeId":"b-w1"}' })
    expect(enrollment.status).toBe(200)
    await using _agent = await joinWorker(dirs.path, 'b-w1', { enrollUrl, fingerprint }, ((await enrollment.json()) as { token: string }).token)
    const r = await json<{ officeId: string; project: { name: string; replicas: number } }>(['federation', 'place', 'office-b', 'web', '--replicas', '2', '--env', 'A=1', '--', 'sleep', '100'])
    expect(r).toMatchObject({ officeId: 'office-b', project: { name: 'web', replicas: 2 } })
    // The office runs it on its worker and reports that in its heartbeats.
    await waitFor(async () => (await offices()).offices.find((o) => o.officeId === 'office-b')?.projects.some((p) => p.name === 'web' && p.state === 'running' && p.running === 2), {
      what: 'web reported running',
      timeoutMs: 45_000,
    })
    // Without a command, the controller's own project of that name is what is placed.
    expect((await runMuster(['federation', 'place', 'office-b', 'api'], { env })).code).toBe(1) // no such project here
    expect((await runMuster(['projects', 'deploy', 'api', '--replicas', '0', '--cpu', '10', '--', 'sleep', '101'], { env })).code).toBe(0)
    const placed = await json<{ project: { name: string; replicas: number } }>(['federation', 'place', 'office-b', 'api', '--replicas', '1'])
    expect(placed.project).toMatchObject({ name: 'api', replicas: 1 })
    const cmdNoReplicas = await runMuster(['federation', 'place', 'office-b', 'web', '--', 'sleep', '1'], { env })
    expect(cmdNoReplicas.code).toBe(2)
  })

  test('break-glass refuses while serving; done offline it is reported to the controller on reconnect', async () => {
    await bothJoined()
    const busy = await runMuster(['admin', 'break-glass', '--data-dir', bDir])
    expect(busy.code).toBe(1)
    expect(busy.stderr).toContain('stop it first')
    await officeOn(ports.b)!.stop()
    const bg = await runMuster(['admin', 'break-glass', 'superadmin', '--data-dir', bDir, '--json'])
    expect(bg.code).toBe(0)
    const out = JSON.parse(bg.stdout) as { localLoginAllowed: boolean; account: string; password: string }
    expect(out).toEqual({ localLoginAllowed: true, account: 'superadmin', password: expect.any(String) })
    await office(bDir, ports.b) // no variables: the stored membership
    const reports = await waitFor(async () => (await json<{ reports: { officeId: string; account: string }[] }>(['federation', 'break-glass'])).reports.at(0), { what: 'break-glass reported' })
    expect(reports).toMatchObject({ officeId: 'office-b', account: 'superadmin' })
    expect((await login(ports.b, 'superadmin', out.password)).status).toBe(200)
  })

  test('revoke stops one office heartbeating; detach leaves, keeps data, opens the door', async () => {
    await bothJoined()
    expect((await runMuster(['federation', 'revoke', 'office-a'], { env })).code).toBe(0)
    await waitFor(async () => (await offices()).offices.find((o) => o.officeId === 'office-a')?.fresh === false, { what: 'office-a no longer fresh', timeoutMs: 45_000 })
    // office-b heartbeats on (fresh means a heartbeat in the last 3 intervals, so wait for one rather than sample)
    await waitFor(async () => (await offices()).offices.find((o) => o.officeId === 'office-b')?.fresh, { what: 'office-b still fresh', timeoutMs: 45_000 })
    expect((await offices()).offices.find((o) => o.officeId === 'office-a')?.status).toBe('revoked')
    await officeOn(ports.a)!.stop()
    const detached = await runMuster(['admin', 'detach', '--data-dir', aDir])
    expect(detached.code).toBe(0)
    expect(detached.stderr).toContain('unset MUSTER_JOIN_TOKEN')
    expect(detached.stderr).toContain('muster federation revoke office-a')
    expect(existsSync(`${aDir}/platform/office-join-token`)).toBe(false)
    await office(aDir, ports.a)
    expect((await login(ports.a, 'superadmin', password(aDir))).status).toBe(200)
  })

  test('an office refuses to start on a token that disagrees with the stored one, or a malformed token', async () => {
    await bothJoined()
    await officeOn(ports.b)!.stop()
    const mismatch = await runMuster(['serve', '--data-dir', bDir, '--port', '0'], { env: { MUSTER_CONTROLLER_URL: controller.url, MUSTER_ADVERTISE_URL: 'http://127.0.0.1:1', MUSTER_JOIN_TOKEN: tokens.a } })
    expect(mismatch.code).toBe(1)
    expect(mismatch.stderr).toContain("'office-a'")
    expect(mismatch.stderr).toContain("'office-b'")
    const malformed = await runMuster(['serve', '--data-dir', `${dirs.path}/fresh`, '--port', '0'], { env: { MUSTER_CONTROLLER_URL: controller.url, MUSTER_ADVERTISE_URL: 'http://127.0.0.1:1', MUSTER_JOIN_TOKEN: 'mof1:nope' } })
    expect(malformed.code).toBe(1)
    expect(malformed.stderr).toContain('mof1:<office_id>:<controller_verify_key>:<secret>')
  })
})
