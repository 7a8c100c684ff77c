// A machine joins a Platform through dist/muster processes: serve with its
// enrollment listener, worker join pinned to the published fingerprint, the
// Agent, readiness, refresh-trust, doctor, and a clean SIGTERM (docs/nodes.md).
import { describe, expect, test } from 'bun:test'
import { mkdirSync, writeFileSync } from 'node:fs'
import { runMuster, startMuster, startServe } from '../helpers/binary.ts'
import { freePort } from '../helpers/node-side.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

interface Check {
  name: string
  status: string
  message: string
}

describe('worker through dist/muster', () => {
  test('join pinned to the listener, run the Agent, become ready, refresh trust, doctor, stop', { timeout: 180_000 }, async () => {
    using dir = tmpDir()
    const work = `${dir.path}/worker`
    await using serve = await startServe(`${dir.path}/platform`, ['--enrollment-port', '0', '--enrollment-address', '127.0.0.1'], { MUSTER_PROBE_INTERVAL_MS: '300' })
    const logged = await serve.waitForLog(/enrollment listener on (https:\/\/\S+) .*fingerprint (sha256:[0-9a-f]{64})/)
    const [, enrollUrl, fingerprint] = logged as unknown as [string, string, string]
    const minted = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', `${dir.path}/platform`, '--json'])).stdout) as { token: string }
    const env = { MUSTER_URL: serve.url, MUSTER_TOKEN: minted.token }

    const info = await runMuster(['nodes', 'platform', '--json'], { env })
    const published = JSON.parse(info.stdout)
    expect(published).toEqual({
      remoteDispatch: true,
      enrollment: { url: enrollUrl, addresses: ['127.0.0.1'], port: Number(new URL(enrollUrl).port), fingerprint, caFingerprint: fingerprint },
      ca: { fingerprint, notAfter: expect.any(String) },
      warnings: [],
      platforms: [expect.objectContaining({ url: serve.url, enrollmentUrl: enrollUrl, fingerprint, self: true })],
    })
    const { token } = JSON.parse((await runMuster(['nodes', 'enroll-token', 'w1', '--json'], { env })).stdout) as { token: string }
    const port = await freePort()
    const joinArgs = ['worker', 'join', '--node-id', 'w1', '--platform-fingerprint', fingerprint, '--address', '127.0.0.1', '--port', String(port), '--data-dir', work]

    const plain = await runMuster([...joinArgs, '--platform-url', serve.url], { stdin: token })
    expect(plain.code).toBe(1)
    expect(plain.stderr).toContain('would cross an unauthenticated link')

    const joined = await runMuster([...joinArgs, '--platform-url', enrollUrl, '--json'], { stdin: `${token}\n` })
    expect(joined.stderr).not.toContain(token)
    expect(joined.code).toBe(0)
    expect(JSON.parse(joined.stdout)).toEqual({ nodeId: 'w1', agentId: 'agent-w1', dataDir: work, start: `muster agent --data-dir ${work}` })
    const again = await runMuster([...joinArgs, '--platform-url', enrollUrl])
    expect(again.code).toBe(0)
    expect(again.stdout).toContain(`muster agent --data-dir ${work}`)

    await using agent = await startMuster(['agent', '--data-dir', work], { env: { MUSTER_AGENT_HEARTBEAT_MS: '300', MUSTER_AGENT_HOST: '127.0.0.1' } })
    await waitFor(
      async () => {
        const list = JSON.parse((await runMuster(['nodes', 'list', '--json'], { env })).stdout) as { nodes: { name: string; state: string }[] }
        return list.nodes.find((n) => n.name === 'w1')?.state === 'ready'
      },
      { timeoutMs: 45_000, what: 'w1 ready' },
    )

    const refreshed = await runMuster(['worker', 'refresh-trust', '--data-dir', work])
    expect(refreshed.code).toBe(0)
    expect(refreshed.stdout).toContain('Trust keys unchanged (1)')

    const root = `${dir.path}/root`
    mkdirSync(`${root}/etc/muster`, { recursive: true })
    writeFileSync(`${root}/etc/muster/receipt.json`, JSON.stringify({ role: 'worker', version: '0.0.1', installedAt: '2025-01-01T00:00:00Z', account: 'muster', dataDir: work, units: ['muster-agent.service'], files: [] }))
    const doctor = await runMuster(['doctor', '--data-dir', work, '--root', root, '--json'])
    const report = JSON.parse(doctor.stdout) as { ok: boolean; role: string; checks: Check[]; notes: string[] }
    expect(doctor.code).toBe(0)
    expect(report.role).toBe('worker')
    const status = Object.fromEntries(report.checks.map((c) => [c.name, c.status]))
    expect(status).toMatchObject({ role: 'ok', receipt: 'warn', 'data-owner': 'ok', 'data-modes': 'ok', joined: 'ok', 'agent-port': 'ok', platform: 'ok', 'platform-api': 'ok', 'trust-keys': 'ok' })
    expect(report.notes.join(' ')).toContain('cannot see a firewall')

    expect(await agent.stop('SIGTERM')).toBe(0)
    expect(agent.log()).toContain('agent w1 stopped')
    const after = await runMuster(['doctor', '--data-dir', work, '--root', root])
    expect(after.code).toBe(1)
    expect(after.stdout).toMatch(/fail\s+agent-port/)
  })
})
