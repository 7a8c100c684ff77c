// A worker installed by install.sh (into a temporary root) joins a Platform
// started by the test, as the muster account, and is reported ready; doctor
// reads the receipt of that root.
import { expect, test } from 'bun:test'
import { chmodSync, cpSync, mkdirSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { musterBin, runMuster, startServe } from '../helpers/binary.ts'
import { freePort } from '../helpers/node-side.ts'
import { describeAsRoot } from '../helpers/root.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

const SCRIPT = resolve(import.meta.dir, '../../install.sh')

describeAsRoot('an installed worker', () => {
  test('joins as the muster account, runs its Agent, is ready; doctor reads its receipt', { timeout: 180_000 }, async () => {
    using dir = tmpDir('muster-installed-')
    chmodSync(dir.path, 0o755) // the account must reach the root's files
    const root = join(dir.path, 'root')
    mkdirSync(root, { mode: 0o755 })
    const bin = join(dir.path, 'muster')
    cpSync(await musterBin(), bin)
    const install = Bun.spawnSync(['sh', SCRIPT, '--role', 'worker', '--binary', bin, '--root', root], { env: { ...process.env, LC_ALL: 'C' } })
    expect(install.exitCode).toBe(0)
    const receipt = JSON.parse(readFileSync(join(root, 'etc/muster/receipt.json'), 'utf8')) as { uid: number; gid: number; dataDir: string; binary: string }
    const dataDir = join(root, receipt.dataDir)
    const installed = join(root, receipt.binary)

    await using serve = await startServe(join(dir.path, 'platform'), ['--enrollment-port', '0', '--enrollment-address', '127.0.0.1', '--no-local-node'], { MUSTER_PROBE_INTERVAL_MS: '300' })
    const [, enrollUrl, fingerprint] = (await serve.waitForLog(/enrollment listener on (https:\/\/\S+) .*fingerprint (sha256:[0-9a-f]{64})/)) as unknown as [string, string, string]
    const { token: apiToken } = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', join(dir.path, 'platform'), '--json'])).stdout) as { token: string }
    const env = { MUSTER_URL: serve.url, MUSTER_TOKEN: apiToken }
    const { token } = JSON.parse((await runMuster(['nodes', 'enroll-token', 'installed-1', '--json'], { env })).stdout) as { token: string }

    // As the account, the way an operator runs it: sudo -u muster muster worker join …
    const asAccount = ['setpriv', `--reuid=${receipt.uid}`, `--regid=${receipt.gid}`, '--clear-groups']
    const port = await freePort()
    const join_ = Bun.spawnSync([...asAccount, installed, 'worker', 'join', '--platform-url', enrollUrl, '--node-id', 'installed-1', '--platform-fingerprint', fingerprint, '--address', '127.0.0.1', '--port', String(port), '--data-dir', dataDir], {
      env: { PATH: process.env.PATH, HOME: dataDir, MUSTER_ENROLLMENT_TOKEN: token },
    })
    expect(join_.stderr.toString()).not.toContain(token)
    expect(join_.exitCode).toBe(0)

    // The Agent as the unit runs it: the account with CAP_SETUID, CAP_SETGID and CAP_KILL (else its replicas could read its key, and doctor fails).
    const withCaps = [...asAccount, '--inh-caps=+setuid,+setgid,+kill', '--ambient-caps=+setuid,+setgid,+kill']
    const agent = Bun.spawn([...withCaps, installed, 'agent', '--data-dir', dataDir], {
      env: { PATH: process.env.PATH, HOME: dataDir, MUSTER_AGENT_HOST: '127.0.0.1', MUSTER_AGENT_HEARTBEAT_MS: '300' },
      stdout: 'ignore',
      stderr: 'ignore',
    })
    try {
      await waitFor(async () => {
        const list = JSON.parse((await runMuster(['nodes', 'list', '--json'], { env })).stdout) as { nodes: { name: string; state: string }[] }
        return list.nodes.find((n) => n.name === 'installed-1')?.state === 'ready'
      }, { timeoutMs: 45_000, what: 'the installed worker ready' })

      const doctor = Bun.spawnSync([...asAccount, installed, 'doctor', '--root', root, '--data-dir', dataDir, '--json'], { env: { PATH: process.env.PATH, HOME: dataDir } })
      const report = JSON.parse(doctor.stdout.toString()) as { ok: boolean; role: string; checks: { name: string; status: string; message: string }[]; notes: string[] }
      expect(report.role).toBe('worker')
      const status = Object.fromEntries(report.checks.map((c) => [c.name, c.status]))
      expect(status).toMatchObject({ role: 'ok', receipt: 'ok', 'data-owner': 'ok', joined: 'ok', 'agent-port': 'ok' })
      expect(report.notes.join(' ')).toContain('cannot see a firewall')
      expect(doctor.exitCode).toBe(0)
    } finally {
      agent.kill('SIGTERM')
      await agent.exited
    }
  })
})
