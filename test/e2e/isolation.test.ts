// Any project reading its node's private key, performed
// through dist/muster: a project finds the Agent's data directory in
// /proc/$PPID/cmdline and reads worker/agent.key and node-credential, and
// the Agent's environ and open files. With replicas run as a separate account
// (root Agent with --run-as; and the install.sh way, an Agent account holding
// CAP_SETUID, CAP_SETGID and CAP_KILL as ambient capabilities) every read
// fails and the replica holds no capability; run as root on purpose
// (`--run-as root`, the control) the same project reads the key, so the attack
// is real, and doctor fails that node. What each replica saw comes back
// through the log relay. (A root Agent given no account runs each project as a
// uid of its own: test/e2e/containment.test.ts.)
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { chmodSync, cpSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { musterBin, runMuster, startMuster, startServeWithListener, type Daemon } from '../helpers/binary.ts'
import { freePort } from '../helpers/node-side.ts'
import { describeAsRoot } from '../helpers/root.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

// What the project does: everything a replica could try to act as its node.
const ATTACK = [
  'D=$(tr "\\000" "\\n" < /proc/$PPID/cmdline | sed -n "/^--data-dir$/{n;p;}")',
  'echo "DATADIR:$D"',
  'echo "KEY:$(cat "$D/worker/agent.key" 2>/dev/null | head -c 60 || true)"',
  'echo "CRED:$(cat "$D/worker/node-credential" 2>/dev/null || true)"',
  'echo "ENVIRON:$(tr "\\000" " " < /proc/$PPID/environ 2>/dev/null | head -c 200 || true)"',
  'echo "FDS:$(ls /proc/$PPID/fd 2>/dev/null | wc -l)"',
  'echo "CMDLINE:$(tr "\\000" " " < /proc/$PPID/cmdline)"',
  'echo "UID:$(id -u) GROUPS:$(id -G)"',
  'grep -E "^Cap(Prm|Eff|Amb):" /proc/self/status | tr "\\t" " "',
  'echo ATTACK-DONE',
  'sleep 600',
].join('; ')

const accounts: string[] = []
const tag = crypto.randomUUID().slice(0, 6)

function useradd(name: string): { uid: number; gid: number } {
  const r = Bun.spawnSync(['useradd', '--system', '--user-group', '--no-create-home', '--shell', '/usr/sbin/nologin', name])
  if (r.exitCode !== 0) throw new Error(`useradd ${name}: ${r.stderr.toString()}`)
  accounts.push(name)
  const id = (flag: string) => Number(Bun.spawnSync(['id', flag, name]).stdout.toString().trim())
  return { uid: id('-u'), gid: id('-g') }
}

describeAsRoot('replica isolation', () => {
  let runAs: { uid: number; gid: number }
  let agentAccount: { uid: number; gid: number }
  beforeAll(() => {
    runAs = useradd(`mr-${tag}`)
    agentAccount = useradd(`ma-${tag}`)
  })
  afterAll(() => {
    for (const a of accounts) Bun.spawnSync(['userdel', a])
  })

  test('a project cannot read its node\'s key, credential or Agent environment; without isolation it can', { timeout: 300_000 }, async () => {
    using dir = tmpDir()
    chmodSync(dir.path, 0o711) // the Agent account reaches its data directory below
    await using serve = await startServeWithListener(`${dir.path}/platform`, ['--no-local-node'])
    const bin = join(dir.path, 'muster')
    cpSync(await musterBin(), bin)
    chmodSync(bin, 0o755)
    const agents: Daemon[] = []
    const join_ = async (node: string) => {
      const { token } = JSON.parse((await runMuster(['nodes', 'enroll-token', node, '--json'], { env: serve.env })).stdout) as { token: string }
      const data = `${dir.path}/${node}`
      const r = await runMuster(['worker', 'join', '--platform-url', serve.enrollUrl, '--node-id', node, '--platform-fingerprint', serve.fingerprint, '--address', '127.0.0.1', '--port', String(await freePort()), '--data-dir', data], { env: { MUSTER_ENROLLMENT_TOKEN: token } })
      expect(r.code).toBe(0)
      return data
    }
    const agentEnv = { MUSTER_AGENT_HOST: '127.0.0.1', MUSTER_AGENT_HEARTBEAT_MS: '300' }
    try {
      // 1. root Agent, replicas as mr-…;  2. root Agent told to run them as root (the control);
      // 3. an Agent running as ma-… with the capabilities install.sh's unit grants, as ambient ones.
      const rootIso = await join_('iso-root')
      const open = await join_('open')
      const capIso = await join_('iso-caps')
      for (const d of [capIso]) Bun.spawnSync(['chown', '-R', `${agentAccount.uid}:${agentAccount.gid}`, d])
      agents.push(await startMuster(['agent', '--data-dir', rootIso, '--run-as', `mr-${tag}`], { env: agentEnv }))
      agents.push(await startMuster(['agent', '--data-dir', open, '--run-as', 'root'], { env: agentEnv }))
      const caps = ['setpriv', `--reuid=${agentAccount.uid}`, `--regid=${agentAccount.gid}`, '--clear-groups', '--inh-caps=+setuid,+setgid,+kill', '--ambient-caps=+setuid,+setgid,+kill']
      const capAgent = Bun.spawn([...caps, bin, 'agent', '--data-dir', capIso, '--run-as', `mr-${tag}`], { env: { PATH: process.env.PATH, HOME: '/', NO_COLOR: '1', ...agentEnv }, stdout: 'pipe', stderr: 'pipe' })
      let capLog = ''
      void (async () => {
        for await (const c of capAgent.stderr) capLog += new TextDecoder().decode(c)
      })()
      try {
        await waitFor(async () => {
          const list = JSON.parse((await runMuster(['nodes', 'list', '--json'], { env: serve.env })).stdout) as { nodes: { name: string; state: string }[] }
          return ['iso-root', 'open', 'iso-caps'].every((n) => list.nodes.find((x) => x.name === n)?.state === 'ready')
        }, { timeoutMs: 60_000, what: `three workers ready (iso-caps log: ${capLog})` })
        // One replica of the attack on each node.
        expect((await runMuster(['projects', 'deploy', 'attack', '--replicas', '3', '--cpu', '10', '--', 'sh', '-c', ATTACK], { env: serve.env })).code).toBe(0)
        const seen = async (node: string) => {
          const p = JSON.parse((await runMuster(['projects', 'show', 'attack', '--json'], { env: serve.env })).stdout) as { placements: { replica: number; node: string }[] }
          const replica = p.placements.find((x) => x.node === node)!.replica
          return waitFor(async () => {
            const r = await runMuster(['projects', 'logs', 'attack', '--replica', String(replica), '--json'], { env: serve.env, timeoutMs: 60_000 })
            const lines = r.code === 0 ? (JSON.parse(r.stdout) as { lines: string[] }).lines : []
            return lines.includes('ATTACK-DONE') ? lines : null
          }, { timeoutMs: 90_000, what: `the attack's report from ${node}` })
        }
        const field = (lines: string[], k: string) => lines.find((l) => l.startsWith(`${k}:`))?.slice(k.length + 1) ?? ''

        // The control: run as root on purpose, the project reads the key and the credential.
        const control = await seen('open')
        expect(field(control, 'KEY')).toContain('PRIVATE KEY')
        expect(field(control, 'CRED')).toMatch(/^mnc_open\./)
        expect(field(control, 'ENVIRON')).toMatch(/^[A-Z_]+=/)

        for (const [node, data] of [['iso-root', rootIso], ['iso-caps', capIso]] as const) {
          const lines = await seen(node)
          const credential = readFileSync(`${data}/worker/node-credential`, 'utf8').trim()
          const keyPem = readFileSync(`${data}/worker/agent.key`, 'utf8')
          const all = lines.join('\n')
          // it found the data directory (the cmdline is public) …
          expect(field(lines, 'DATADIR')).toBe(data)
          // … and could read nothing in it, nor the Agent's environment or open files
          expect(field(lines, 'KEY')).toBe('')
          expect(field(lines, 'CRED')).toBe('')
          expect(field(lines, 'ENVIRON')).toBe('')
          expect(field(lines, 'FDS')).toBe('0')
          expect(all).not.toContain(credential)
          expect(all).not.toContain(keyPem.split('\n')[1]!)
          // the cmdline holds nothing secret
          expect(field(lines, 'CMDLINE')).not.toContain('mnc_')
          // it runs as the separate account, in no other group, with no capability at all
          expect(field(lines, 'UID')).toBe(`${runAs.uid} GROUPS:${runAs.gid}`)
          for (const set of ['CapPrm', 'CapEff', 'CapAmb']) expect(lines.find((l) => l.startsWith(`${set}:`))).toBe(`${set}: 0000000000000000`)
        }
        // Each Agent recorded what doctor reports.
        expect(JSON.parse(readFileSync(`${rootIso}/worker/isolation.json`, 'utf8'))).toMatchObject({ isolated: true, user: `mr-${tag}`, uid: runAs.uid })
        expect(JSON.parse(readFileSync(`${open}/worker/isolation.json`, 'utf8'))).toMatchObject({ isolated: false })
        expect(agents[1]!.log()).toContain('replicas run as root and can read this node\'s key and credential: this Agent was told to run them as root (--run-as root)')
        const doctor = async (data: string) => (JSON.parse((await runMuster(['doctor', '--data-dir', data, '--json'])).stdout) as { checks: { name: string; status: string; message: string }[] }).checks.find((c) => c.name === 'replica-isolation')
        expect(await doctor(open)).toMatchObject({ status: 'fail', message: expect.stringContaining('can read this node\'s key and credential') })
        expect(await doctor(rootIso)).toMatchObject({ status: 'ok', message: expect.stringContaining(`replicas run as mr-${tag}`) })
      } finally {
        capAgent.kill('SIGUSR2')
        await capAgent.exited
      }
    } finally {
      for (const a of agents) await a.stop()
    }
  })
})
