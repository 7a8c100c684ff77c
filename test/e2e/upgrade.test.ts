// Upgrade in place (docs/security.md): a data directory and a node made by the
// version before the Platform CA — the listener pinned by its own
// self-signed certificate — keep working under this version with no re-join.
// The node learns the CA pin at its trust refresh while the old certificate is
// still served; when the listener's addresses change, the certificate comes
// from the CA and the node, holding the CA pin, carries on.
import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { certFingerprint } from '../../src/crypto/x509.ts'
import { runMuster, startMuster, startServe, type Daemon } from '../helpers/binary.ts'
import { freePort } from '../helpers/node-side.ts'
import { hasCommit, oldBinary, PRE_CA_COMMIT } from '../helpers/old-binary.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

const history = hasCommit(PRE_CA_COMMIT)
if (!history) process.stderr.write(`upgrade.test.ts: skipped, this checkout lacks ${PRE_CA_COMMIT} (a shallow clone); fetch the history to run it\n`)

interface Node {
  name: string
  state: string
  lastSeenAt: string | null
}

describe('upgrade from the listener pinned by its own certificate', () => {
  test.skipIf(!history)('an old data directory and an old node keep working, move to the CA pin, and survive new listener addresses', { timeout: 180_000 }, async () => {
    const old = await oldBinary(PRE_CA_COMMIT)
    using dir = tmpDir()
    const data = `${dir.path}/platform`
    const work = `${dir.path}/w1`
    const [apiPort, enrollPort, agentPort] = [await freePort(), await freePort(), await freePort()]
    const serveArgs = (addresses: string[]) => ['--port', String(apiPort), '--enrollment-port', String(enrollPort), ...addresses.flatMap((a) => ['--enrollment-address', a]), '--no-local-node', '--node-stale-seconds', '5']
    const serveEnv = { MUSTER_PROBE_INTERVAL_MS: '300' }
    const agentEnv = { MUSTER_AGENT_HEARTBEAT_MS: '300', MUSTER_AGENT_HOST: '127.0.0.1' }
    const started: Daemon[] = []
    const track = <T extends Daemon>(d: T) => (started.push(d), d)
    try {
      // 1. the old version: serve, join pinned to the listener's certificate, run the Agent
      let serve = track(await startServe(data, serveArgs(['127.0.0.1']), serveEnv, old))
      const [, legacyPin] = (await serve.waitForLog(/enrollment listener on https:\/\/\S+ .*fingerprint (sha256:[0-9a-f]{64})/)) as unknown as [string, string]
      const { token: api } = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', data, '--json'], { bin: old })).stdout) as { token: string }
      const env = { MUSTER_URL: serve.url, MUSTER_TOKEN: api }
      const { token } = JSON.parse((await runMuster(['nodes', 'enroll-token', 'w1', '--json'], { env, bin: old })).stdout) as { token: string }
      const joined = await runMuster(['worker', 'join', '--platform-url', `https://127.0.0.1:${enrollPort}`, '--node-id', 'w1', '--platform-fingerprint', legacyPin, '--address', '127.0.0.1', '--port', String(agentPort), '--data-dir', work], { stdin: token, bin: old })
      expect(joined.code).toBe(0)
      const agentJson = () => JSON.parse(readFileSync(`${work}/worker/agent.json`, 'utf8')) as { pin: { fingerprint: string; also?: string[] } }
      expect(agentJson().pin).toEqual({ fingerprint: legacyPin })
      let agent = track(await startMuster(['agent', '--data-dir', work], { env: agentEnv, bin: old }))
      const nodes = async () => JSON.parse((await runMuster(['nodes', 'list', '--json'], { env })).stdout).nodes as Node[]
      const readySince = (t: number) => waitFor(async () => (await nodes()).some((n) => n.name === 'w1' && n.state === 'ready' && Date.parse(n.lastSeenAt ?? '') > t), { timeoutMs: 30_000, what: 'w1 ready' })
      const runs = async (project: string) => {
        const deployed = await runMuster(['projects', 'deploy', project, '--replicas', '1', '--cpu', '10', '--memory', '8', '--', 'sh', '-c', 'sleep 600'], { env })
        expect(deployed.code).toBe(0)
        await waitFor(async () => JSON.parse((await runMuster(['projects', 'show', project, '--json'], { env })).stdout).placements?.[0]?.state === 'running', { timeoutMs: 30_000, what: `${project} running` })
      }
      await readySince(0)

      // 2. this version on the same data directory: the CA is made, the old certificate is still served
      await serve.stop()
      serve = track(await startServe(data, serveArgs(['127.0.0.1']), serveEnv))
      const info = JSON.parse((await runMuster(['nodes', 'platform', '--json'], { env })).stdout)
      const caPin = info.ca.fingerprint as string
      expect(info.enrollment.fingerprint).toBe(legacyPin)
      expect(info.enrollment.caFingerprint).toBe(caPin)
      expect(caPin).not.toBe(legacyPin)
      // the old Agent, still running the old version, does not notice
      await readySince(Date.now())
      await runs('before-agent-upgrade')

      // 3. the node's Agent upgraded: its trust refresh at start (over the old pin) brings the CA pin
      await agent.stop()
      agent = track(await startMuster(['agent', '--data-dir', work], { env: agentEnv }))
      await waitFor(() => agentJson().pin.fingerprint === caPin, { what: 'the CA pin in agent.json' })
      expect(agentJson().pin).toEqual({ fingerprint: caPin, also: [legacyPin] })
      await readySince(Date.now())
      await runs('after-agent-upgrade')

      // 4. new listener addresses: the certificate now comes from the CA; the node keeps working, no re-join
      await serve.stop()
      serve = track(await startServe(data, serveArgs(['127.0.0.1', 'localhost']), serveEnv))
      expect(serve.log()).toContain('now presents a certificate issued by the Platform CA')
      const after = JSON.parse((await runMuster(['nodes', 'platform', '--json'], { env })).stdout)
      expect(after.enrollment.fingerprint).toBe(caPin)
      await readySince(Date.now())
      await runs('after-new-addresses')
      const refreshed = await runMuster(['worker', 'refresh-trust', '--data-dir', work])
      expect(refreshed.code).toBe(0)
      expect(agentJson().pin).toEqual({ fingerprint: caPin }) // the old certificate's pin is gone with it
      // the same machine identity throughout: nothing joined again
      const listed = JSON.parse((await runMuster(['nodes', 'list', '--json'], { env })).stdout).nodes.find((n: { name: string }) => n.name === 'w1')
      expect(`sha256:${listed.certificateSha256}`).toBe(certFingerprint(readFileSync(`${work}/worker/agent.crt`, 'utf8')))
    } finally {
      for (const d of started.reverse()) await d.stop()
    }
  })
})
