// What a newcomer meets on the way from the demo to a second machine, through
// dist/muster: a prompt is drawn on stderr, so `--json` into a file stays JSON
// and the question is seen (the bootstrap runs `worker join --json >file` at a
// terminal); `nodes rebind` prints the lines to run on the machine, like
// enroll-token; doctor on a node whose credential is refused for good does not
// say "start the Agent", and its columns line up; Ctrl-C on the demo says what
// it did.
import { describe, expect, test } from 'bun:test'
import { chownSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { musterBin, runMuster, startMuster, startServe, startServeWithListener } from '../helpers/binary.ts'
import { freePort } from '../helpers/node-side.ts'
import { describeAsRoot } from '../helpers/root.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

// A pty interleaves \r\n and colour codes; read the screen as plain text.
const plain = (screen: string) => screen.replace(/[\r\n]/g, '').replace(/\u001b\[[0-9;?]*[a-zA-Z]/g, '')

describe('a newcomer', () => {
  test('a prompt is drawn on stderr: `login --json >file` at a terminal asks, and the file is JSON alone', { timeout: 120_000 }, async () => {
    using dir = tmpDir()
    const data = `${dir.path}/data`
    await using serve = await startServe(data)
    const pw = readFileSync(`${data}/platform/initial-superadmin-password`, 'utf8').trim()
    const bin = await musterBin()
    const home = `${dir.path}/home`
    const out = `${dir.path}/login.json`
    // `script` gives the command a pseudo-terminal; stdout goes to a file, as a script (or the bootstrap) sends it.
    const p = Bun.spawn(['script', '-q', '-e', '-c', `${bin} login --platform-url ${serve.url} --json >${out}`, '/dev/null'], {
      stdin: 'pipe',
      stdout: 'pipe',
      stderr: 'pipe',
      env: { ...process.env, HOME: home, XDG_CONFIG_HOME: `${home}/.config`, TERM: 'xterm' },
    })
    let screen = ''
    const reader = (async () => {
      for await (const chunk of p.stdout) screen += new TextDecoder().decode(chunk)
    })()
    try {
      await waitFor(() => /Account/.test(plain(screen)), { timeoutMs: 20_000, what: 'the Account question on the terminal' })
      p.stdin.write('superadmin\r')
      await p.stdin.flush()
      await waitFor(() => /Password/.test(plain(screen)), { timeoutMs: 20_000, what: 'the Password question on the terminal' })
      p.stdin.write(`${pw}\r`)
      await p.stdin.flush()
      expect(await p.exited).toBe(0)
    } finally {
      p.kill()
      p.stdin.end()
      await reader
    }
    const saved = JSON.parse(readFileSync(out, 'utf8')) as { account: string }
    expect(saved.account).toBe('superadmin')
    expect(plain(screen)).not.toContain(pw)
  })

  test('nodes rebind prints the lines to run on the machine; doctor on the revoked node names the way back and lines up', { timeout: 180_000 }, async () => {
    using dir = tmpDir()
    const work = `${dir.path}/worker`
    await using serve = await startServeWithListener(`${dir.path}/platform`)
    const enrolled = await runMuster(['nodes', 'enroll-token', 'w1', '--json'], { env: serve.env })
    const { token } = JSON.parse(enrolled.stdout) as { token: string }
    const join = ['worker', 'join', '--platform-url', serve.enrollUrl, '--node-id', 'w1', '--platform-fingerprint', serve.fingerprint, '--address', '127.0.0.1', '--port', String(await freePort()), '--data-dir', work]
    expect((await runMuster(join, { stdin: token })).code).toBe(0)
    const agent = await startMuster(['agent', '--data-dir', work], { env: { MUSTER_AGENT_HOST: '127.0.0.1', MUSTER_AGENT_HEARTBEAT_MS: '300' } })
    try {
      await agent.waitForLog(/is ready/)
      expect((await runMuster(['nodes', 'revoke', 'w1'], { env: serve.env })).code).toBe(0)
      await waitFor(() => agent.proc.exitCode !== null, { timeoutMs: 60_000, what: 'the revoked Agent to stop' })

      // doctor: the port is silent because the credential is dead, and says so instead of "start the Agent"
      const doctor = await runMuster(['doctor', '--data-dir', work, '--root', `${dir.path}/no-root`])
      expect(doctor.code).toBe(1)
      const lines = doctor.stdout.split('\n').filter((l) => /^(ok|warn|fail) /.test(l))
      const port = lines.find((l) => l.includes('agent-port'))!
      expect(port).toContain("the Agent stopped because the Platform refuses this node's credential")
      expect(port).not.toContain('start the Agent (')
      // every message starts in the same column, however long a check's name
      const starts = lines.map((l) => l.match(/^(ok|warn|fail) +\S+ +/)![0].length)
      expect(new Set(starts).size).toBe(1)

      // rebind: the token on stdout alone, then the same two lines as enroll-token on stderr; --json carries them
      const rebind = await runMuster(['nodes', 'rebind', 'w1'], { env: serve.env })
      expect(rebind.code).toBe(0)
      expect(rebind.stdout.trim()).toMatch(/^mjt_\S+$/)
      expect(rebind.stderr).toContain(`muster worker join --platform-url ${serve.enrollUrl} --node-id w1 --platform-fingerprint ${serve.fingerprint}`)
      expect(rebind.stderr).not.toContain(rebind.stdout.trim())
      const asJson = JSON.parse((await runMuster(['nodes', 'rebind', 'w1', '--json'], { env: serve.env })).stdout) as { token: string; joinCommand: string; bootstrapCommand: string | null }
      expect(asJson.joinCommand).toBe(`muster worker join --platform-url ${serve.enrollUrl} --node-id w1 --platform-fingerprint ${serve.fingerprint}`)
      expect(asJson.bootstrapCommand ?? '').not.toContain(asJson.token)
      // and the printed line works: the machine joins again with it
      expect((await runMuster([...asJson.joinCommand.split(' ').slice(1), '--address', '127.0.0.1', '--port', String(await freePort()), '--data-dir', work], { stdin: asJson.token })).code).toBe(0)
    } finally {
      await agent.stop()
    }
  })

  test('muster --help starts with the demo; the help of the commands met next has examples that use their own flags', async () => {
    const root = await runMuster(['--help'])
    const rootExamples = root.stdout.split('\nEXAMPLES\n')[1] ?? ''
    for (const line of ['  muster demo', '  muster serve --data-dir ./muster-data --host 10.0.0.5 --enrollment-port 7443', '  muster nodes enroll-token worker-1']) expect(rootExamples).toContain(line)
    for (const words of [['nodes', 'enroll-token'], ['nodes', 'rebind'], ['projects', 'logs'], ['accounts', 'add'], ['audit'], ['login']]) {
      const r = await runMuster([...words, '--help'])
      const [usage, examples] = r.stdout.split('\nEXAMPLES\n') as [string, string | undefined]
      expect({ words, examples: Boolean(examples) }).toEqual({ words, examples: true })
      for (const line of examples!.split('\n').filter((l) => l.startsWith('  muster '))) {
        expect(line).toStartWith(`  muster ${words.join(' ')}`)
        for (const f of line.match(/ --[a-z][a-z-]*/g) ?? []) expect({ words, flag: f.trim(), defined: usage.includes(`${f.trim()}=`) || usage.includes(`${f.trim()} `) }).toEqual({ words, flag: f.trim(), defined: true })
      }
    }
  })

  test('serve on SQLite: its start log has no lease lines (every lease is its own)', { timeout: 60_000 }, async () => {
    using dir = tmpDir()
    // the loops take their leases before the API listens, and the listener line comes last
    await using serve = await startServeWithListener(`${dir.path}/data`)
    expect(serve.log()).toContain('enrollment listener on')
    expect(serve.log()).not.toContain('now runs')
    expect(serve.log()).not.toContain('lease fence')
  })

  test('Ctrl-C on the demo stops it, says so, and removes its directory', { timeout: 120_000 }, async () => {
    const demo = await startMuster(['demo'])
    try {
      const [, where] = (await demo.waitForLog(/muster is running in (\S+)/, 90_000)) as unknown as [string, string]
      await demo.waitForLog(/Press Ctrl-C/, 90_000)
      expect(existsSync(where)).toBe(true)
      demo.proc.kill('SIGINT')
      expect(await demo.proc.exited).toBe(130)
      await waitFor(() => demo.log().includes('demo: stopped everything and removed its directory.'), { timeoutMs: 10_000, what: 'the goodbye line' })
      expect(existsSync(where)).toBe(false)
    } finally {
      await demo.stopLeavingReplicas()
    }
  })
})

describeAsRoot('sudo muster worker join', () => {
  test("on a data directory another account owns (install.sh's muster), what the join writes stays that account's", { timeout: 120_000 }, async () => {
    using dir = tmpDir()
    await using serve = await startServeWithListener(`${dir.path}/platform`)
    const { token } = JSON.parse((await runMuster(['nodes', 'enroll-token', 'w1', '--json'], { env: serve.env })).stdout) as { token: string }
    const work = `${dir.path}/var-lib-muster`
    mkdirSync(work, { mode: 0o700 })
    chownSync(work, 65534, 65534)
    const r = await runMuster(['worker', 'join', '--platform-url', serve.enrollUrl, '--node-id', 'w1', '--platform-fingerprint', serve.fingerprint, '--address', '127.0.0.1', '--port', String(await freePort()), '--data-dir', work], { stdin: token })
    expect(r.code).toBe(0)
    const owners = new Map<string, number>()
    const walk = (d: string) => {
      for (const name of readdirSync(d)) {
        const p = join(d, name)
        owners.set(p.slice(work.length + 1), statSync(p).uid)
        if (statSync(p).isDirectory()) walk(p)
      }
    }
    walk(work)
    expect(owners.get('worker/node-credential')).toBe(65534)
    expect([...owners].filter(([, uid]) => uid !== 65534)).toEqual([])
  })
})
