// Logs a machine reads, and logs that hold no secret (docs/monitoring.md): the
// compiled Platform and an Agent run a whole flow — a failed and a good
// password login, API tokens minted, an enrollment issued, a worker joined
// through the pinned listener, heartbeats, a credential renewal asked for by
// a rotation, a revocation — once with `--log-format json` and once with the
// human default. In JSON every line is one object with time, level and
// message, and the lines about the node carry its name; in both formats no
// password, token, credential or their secret halves appear anywhere.
import { afterAll, describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { runMuster, startMuster, startServeWithListener, type Daemon } from '../helpers/binary.ts'
import { freePort } from '../helpers/node-side.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

const dirs: ReturnType<typeof tmpDir>[] = []
const daemons: Daemon[] = []
afterAll(async () => {
  for (const d of daemons.reverse()) await d.stop().catch(() => {})
  for (const d of dirs) d[Symbol.dispose]()
})

/** Runs the flow; answers both logs and every secret it handled. */
async function flow(format: 'json' | 'human'): Promise<{ logs: string[]; secrets: string[] }> {
  const dir = tmpDir(`muster-logs-${format}-`)
  dirs.push(dir)
  const data = join(dir.path, 'platform')
  const extra = format === 'json' ? ['--log-format', 'json'] : []
  const serve = await startServeWithListener(data, ['--remote-dispatch', '--node-stale-seconds', '3', ...extra])
  daemons.push(serve)
  const password = readFileSync(join(data, 'platform/initial-superadmin-password'), 'utf8').trim()
  const cli = async (args: string[], opts: { stdin?: string; ok?: boolean } = {}) => {
    const r = await runMuster(args, { env: serve.env, stdin: opts.stdin })
    if ((opts.ok ?? true) && r.code !== 0) throw new Error(`muster ${args.join(' ')}: ${r.stderr}`)
    return r
  }
  // A wrong password, then the right one (the CLI mints a login token with it).
  expect((await cli(['login', '--platform-url', serve.url, '--identifier', 'superadmin'], { stdin: 'not-the-password\n', ok: false })).code).not.toBe(0)
  const login = await runMuster(['login', '--platform-url', serve.url, '--identifier', 'superadmin'], { stdin: `${password}\n` })
  expect(login.code).toBe(0)
  const metrics = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', data, '--role', 'metrics', '--json'])).stdout) as { token: string }
  const { token } = JSON.parse((await cli(['nodes', 'enroll-token', 'w1', '--json'])).stdout) as { token: string }
  const work = join(dir.path, 'w1')
  const joined = await runMuster(['worker', 'join', '--platform-url', serve.enrollUrl, '--node-id', 'w1', '--platform-fingerprint', serve.fingerprint, '--address', '127.0.0.1', '--port', String(await freePort()), '--data-dir', work], { env: { MUSTER_ENROLLMENT_TOKEN: token } })
  expect(joined.code).toBe(0)
  const credential = readFileSync(join(work, 'worker/node-credential'), 'utf8').trim()
  const agent = await startMuster(['agent', '--data-dir', work, ...extra], { env: { MUSTER_AGENT_HOST: '127.0.0.1', MUSTER_AGENT_HEARTBEAT_MS: '300' } })
  daemons.push(agent)
  await waitFor(async () => JSON.parse((await cli(['nodes', 'list', '--json'])).stdout).nodes.some((n: { name: string; state: string }) => n.name === 'w1' && n.state === 'ready'), { what: 'w1 ready' })
  // A rotation: the Agent trades its credential for the next one (a renewal with a proof).
  await cli(['nodes', 'rotate', 'w1'])
  await waitFor(() => readFileSync(join(work, 'worker/node-credential'), 'utf8').trim() !== credential, { what: 'the credential renewed' })
  const renewed = readFileSync(join(work, 'worker/node-credential'), 'utf8').trim()
  await cli(['nodes', 'revoke', 'w1'])
  await waitFor(() => agent.proc.exitCode !== null || /revoked/.test(agent.log()), { what: 'the Agent told of its revocation' })
  await agent.stop()
  await serve.stop()
  const secretOf = (t: string) => t.split('.').at(-1)!
  const secrets = [password, serve.env.MUSTER_TOKEN, metrics.token, token, credential, renewed]
  return { logs: [serve.log(), agent.log(), joined.stderr, joined.stdout, login.stderr], secrets: [...secrets, ...secrets.map(secretOf)].filter((s) => s.length >= 16) }
}

describe('logs: JSON lines on request, and never a secret', () => {
  test('--log-format json: one object a line with time, level, message; the node named as a field; no secret', { timeout: 180_000 }, async () => {
    const { logs, secrets } = await flow('json')
    const [serveLog, agentLog] = logs as [string, string]
    for (const [who, text] of [['serve', serveLog], ['agent', agentLog]] as const) {
      const lines = text.split('\n').filter((l) => l.trim() !== '')
      expect(lines.length).toBeGreaterThan(3)
      for (const line of lines) {
        let o: Record<string, unknown>
        try {
          o = JSON.parse(line)
        } catch {
          throw new Error(`${who}: not a JSON line: ${line}`)
        }
        expect(Object.keys(o).slice(0, 3)).toEqual(['time', 'level', 'message'])
        expect(new Date(o.time as string).toISOString()).toBe(o.time as string)
        expect(['debug', 'info', 'warn', 'error', 'fatal']).toContain(o.level as string)
      }
      // The lines about the node name it in a field.
      expect(lines.map((l) => JSON.parse(l) as { node?: string }).filter((o) => o.node === 'w1').length).toBeGreaterThan(0)
    }
    expect(serveLog).toContain('"message":"node w1 revoked","node":"w1"')
    for (const s of secrets) for (const text of logs) expect(text.includes(s) ? `a secret (${s.slice(0, 6)}…) in the logs` : 'clean').toBe('clean')
  })

  test('the human format (the default): no JSON, and no secret either', { timeout: 180_000 }, async () => {
    const { logs, secrets } = await flow('human')
    expect(logs[0]).toContain('node w1 revoked')
    expect(logs[0]).not.toContain('"level"')
    expect(logs[0]).not.toContain('node":')
    for (const s of secrets) for (const text of logs) expect(text.includes(s) ? `a secret (${s.slice(0, 6)}…) in the logs` : 'clean').toBe('clean')
  })
})
