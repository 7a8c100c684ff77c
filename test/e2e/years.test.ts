// Three years unattended (docs/security.md; acceptance): the compiled
// Platform and a running Agent under libfaketime share one timestamp file; the
// test moves their wall clock forward in 100-day steps through three years and
// restarts the Platform at several points (once while the clock jumps), while
// the Agent keeps running. Throughout the node stays ready, a project deployed
// at each step runs, the pin never changes and nothing joins again — though
// trust keys roll over and the server certificates are renewed. Timers keep
// real (monotonic) time, so the steps take seconds.
import { describe, expect, test } from 'bun:test'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { runMuster, startMuster, startServe, type Daemon } from '../helpers/binary.ts'
import { freePort } from '../helpers/node-side.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1'
const DAY = 86_400_000

interface Node {
  name: string
  state: string
  lastSeenAt: string | null
  certificateSha256: string | null
}

describe('three years of wall clock', () => {
  test('a Platform restarted along the way and a running Agent: ready throughout, every new project runs, no re-join', { timeout: 240_000 }, async () => {
    expect(existsSync(LIBFAKETIME) ? 'installed' : `missing ${LIBFAKETIME}: apt-get install faketime`).toBe('installed')
    using dir = tmpDir()
    const clockFile = `${dir.path}/faketime`
    let offsetDays = 0
    const setClock = (days: number) => {
      offsetDays = days
      writeFileSync(clockFile, `+${days}d\n`)
    }
    setClock(0)
    const fakeNow = () => Date.now() + offsetDays * DAY
    const fake = { FAKETIME_TIMESTAMP_FILE: clockFile, FAKETIME_NO_CACHE: '1', DONT_FAKE_MONOTONIC: '1', LD_PRELOAD: LIBFAKETIME }
    const data = `${dir.path}/platform`
    const work = `${dir.path}/w1`
    const [apiPort, enrollPort, agentPort] = [await freePort(), await freePort(), await freePort()]
    // The API binds every interface, so it serves HTTPS from the Platform CA; nodes and the CLI use it over loopback with the pin.
    const serveArgs = ['--host', '0.0.0.0', '--port', String(apiPort), '--public-url', `https://127.0.0.1:${apiPort}`, '--enrollment-port', String(enrollPort), '--enrollment-address', '127.0.0.1', '--no-local-node']
    const startPlatform = () => startServe(data, serveArgs, { ...fake, MUSTER_PROBE_INTERVAL_MS: '500' })
    const daemons: Daemon[] = []
    let serve = await startPlatform()
    daemons.push(serve)
    const [, pin] = (await serve.waitForLog(/enrollment listener on .* fingerprint (sha256:[0-9a-f]{64})/)) as unknown as [string, string]
    const { token: api } = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', data, '--json'], { env: fake })).stdout) as { token: string }
    const env = { ...fake, MUSTER_URL: `https://127.0.0.1:${apiPort}`, MUSTER_TOKEN: api, MUSTER_PLATFORM_FINGERPRINT: pin }
    const cli = async (args: string[]) => {
      const r = await runMuster(args, { env })
      if (r.code !== 0) throw new Error(`muster ${args.join(' ')}: ${r.stderr}`)
      return r.stdout
    }
    expect(JSON.parse(await cli(['nodes', 'platform', '--json'])).ca.fingerprint).toBe(pin)

    const { token } = JSON.parse(await cli(['nodes', 'enroll-token', 'w1', '--json'])) as { token: string }
    const joined = await runMuster(['worker', 'join', '--platform-url', `https://127.0.0.1:${enrollPort}`, '--node-id', 'w1', '--platform-fingerprint', pin, '--address', '127.0.0.1', '--port', String(agentPort), '--data-dir', work], { stdin: token, env: fake })
    expect(joined.code).toBe(0)
    const identity = readFileSync(`${work}/worker/agent.crt`, 'utf8')
    const agent = await startMuster(['agent', '--data-dir', work], { env: { ...fake, MUSTER_AGENT_HEARTBEAT_MS: '300', MUSTER_AGENT_TICK_MS: '300', MUSTER_AGENT_HOST: '127.0.0.1' } })
    daemons.push(agent)
    const kids = new Set<string>()
    const w1 = async () => (JSON.parse(await cli(['nodes', 'list', '--json'])).nodes as Node[]).find((n) => n.name === 'w1')

    try {
      for (let step = 0; step <= 11; step++) {
        const days = step * 100
        const restart = days === 300 || days === 700 || days === 1000
        if (restart && days === 700) {
          // off while the clock jumps
          await serve.stop()
          setClock(days)
          serve = await startPlatform()
          daemons.push(serve)
        } else {
          setClock(days)
          if (restart) {
            await serve.stop()
            serve = await startPlatform()
            daemons.push(serve)
          }
        }
        const since = fakeNow() - 1000
        const ready = await waitFor(async () => {
          const n = await w1()
          return n?.state === 'ready' && Date.parse(n.lastSeenAt ?? '') >= since ? n : null
        }, { timeoutMs: 30_000, what: `w1 ready on day ${days}` })
        expect(ready.certificateSha256).toBe(new Bun.CryptoHasher('sha256').update(Buffer.from(identity.replace(/-----[^-]+-----|\s/g, ''), 'base64')).digest('hex'))
        const project = `day-${days}`
        await cli(['projects', 'deploy', project, '--replicas', '1', '--cpu', '10', '--memory', '8', '--', 'sh', '-c', 'sleep 3600'])
        await waitFor(async () => JSON.parse(await cli(['projects', 'show', project, '--json'])).placements?.[0]?.state === 'running', { timeoutMs: 30_000, what: `${project} running` })
        for (const k of JSON.parse(readFileSync(`${work}/worker/trust.json`, 'utf8')).keys as { kid: string }[]) kids.add(k.kid)
      }
      // the pin the node joined with is the pin it holds; the CA is the same; the keys rolled over
      expect(JSON.parse(readFileSync(`${work}/worker/agent.json`, 'utf8')).pin).toEqual({ fingerprint: pin })
      expect(JSON.parse(await cli(['nodes', 'platform', '--json'])).ca.fingerprint).toBe(pin)
      expect(kids.size).toBeGreaterThanOrEqual(3)
      const held = (JSON.parse(readFileSync(`${work}/worker/trust.json`, 'utf8')).keys as { kid: string }[]).map((k) => k.kid)
      expect(held).not.toContain([...kids][0]) // the first key expired and left the node's set
      expect(agent.proc.exitCode).toBeNull()
      expect(agent.log()).not.toMatch(/refused (assignments|POST)/) // nothing signed was ever refused
    } finally {
      for (const d of daemons.reverse()) await d.stop()
    }
  })
})
