// CLI output a script can trust (docs/operations.md) through dist/muster: every byte
// reaches a slow reader on a pipe (over 1 MiB of JSON; a process.exit right
// after the write cut it at 64 KiB), `muster help`, "did you mean" for a
// mistyped command or flag, and EXAMPLES in the help of the first commands.
import { describe, expect, test } from 'bun:test'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { musterBin, runMuster } from '../helpers/binary.ts'
import { startPlatform } from '../helpers/platform.ts'
import { seedNodes } from '../helpers/seed-nodes.ts'
import { tmpDir } from '../helpers/tmp.ts'

/**
 * Runs `muster ARGS` into a reader that reads nothing until the command has
 * everything it will write (its last answer from the Platform came 3 s ago) or
 * has exited. A command that exits before its output is delivered has exited
 * by then with the rest of its output lost; one that waits is still there,
 * blocked on the full pipe, and delivers every byte once reading starts.
 */
async function throughSlowReader(args: string[], platformUrl: string, token: string): Promise<{ code: number; bytes: Buffer; exitedBeforeReading: boolean }> {
  let answers = 0
  let lastAnswerAt = 0
  const proxy = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(req) {
      const u = new URL(req.url)
      const res = await fetch(`${platformUrl}${u.pathname}${u.search}`, { method: req.method, headers: req.headers, body: req.method === 'GET' ? undefined : await req.arrayBuffer() })
      const body = await res.arrayBuffer()
      answers++
      lastAnswerAt = Date.now()
      return new Response(body, { status: res.status, headers: res.headers })
    },
  })
  using dir = tmpDir()
  const q = (a: string) => `'${a}'`
  const command = [await musterBin(), ...args].map(q).join(' ')
  const [code, go, out] = ['code', 'go', 'out'].map((f) => `${dir.path}/${f}`) as [string, string, string]
  // A real pipe between two shell commands: the reader takes nothing until told to.
  const script = `{ ${command}; echo $? > ${q(code)}; } | { while [ ! -e ${q(go)} ]; do sleep 0.05; done; cat > ${q(out)}; }`
  try {
    const p = Bun.spawn(['sh', '-c', script], { env: { ...process.env, MUSTER_URL: `http://127.0.0.1:${proxy.port}`, MUSTER_TOKEN: token, NO_COLOR: '1' }, stdout: 'ignore', stderr: 'inherit' })
    const deadline = Date.now() + 120_000
    while (!existsSync(code) && !(answers > 0 && Date.now() - lastAnswerAt > 3_000) && Date.now() < deadline) await Bun.sleep(50)
    const exitedBeforeReading = existsSync(code)
    writeFileSync(go, '')
    await p.exited
    return { code: Number(readFileSync(code, 'utf8')), bytes: readFileSync(out), exitedBeforeReading }
  } finally {
    proxy.stop(true)
  }
}

describe('CLI output', () => {
  test('over 1 MiB of JSON reaches a slow reader whole (nodes list --all --json)', { timeout: 180_000 }, async () => {
    const names = Array.from({ length: 4000 }, (_, i) => `n${String(i).padStart(5, '0')}`)
    const first = await startPlatform({ remoteDispatch: true, keepDir: true, nodeStaleAfterMs: 30 * 60_000 })
    await seedNodes(first.platform.store, names, (i) => (i % 5 === 0 ? 'revoked' : 'ready'), Date.now(), (i) => ({ rack: `r${i % 40}`, zone: 'eu-1' }))
    await first.close()
    await using p = await startPlatform({ remoteDispatch: true, dataDir: first.dataDir, nodeStaleAfterMs: 30 * 60_000 })
    const { code, bytes, exitedBeforeReading } = await throughSlowReader(['nodes', 'list', '--all', '--json'], p.url, p.token)
    expect(code).toBe(0)
    // More than a pipe holds: the command cannot have ended before anyone read it.
    expect(exitedBeforeReading).toBe(false)
    expect(bytes.length).toBeGreaterThan(1024 * 1024)
    const list = JSON.parse(bytes.toString('utf8')) as { nodes: { name: string }[] }
    expect(list.nodes.map((n) => n.name)).toEqual(names)
    expect(bytes.at(-1)).toBe(0x0a) // the last byte, the newline after the JSON
  })

  test('muster help, did you mean, and examples in --help', async () => {
    const help = await runMuster(['help'])
    expect(help.code).toBe(0)
    expect(help.stdout).toBe((await runMuster(['--help'])).stdout)
    const nodes = await runMuster(['help', 'nodes'])
    expect(nodes.code).toBe(0)
    expect(nodes.stdout).toBe((await runMuster(['nodes', '--help'])).stdout)
    expect((await runMuster(['help', 'worker', 'join'])).stdout).toContain('--platform-fingerprint')

    for (const [typed, meant] of [
      [['nodse', 'list'], 'muster nodes'],
      [['nodes', 'lst'], 'muster nodes list'],
      [['serv'], 'muster serve'],
      [['docter'], 'muster doctor'],
      [['worker', 'jion'], 'muster worker join'],
      [['hlep'], 'muster help'],
    ] as const) {
      const r = await runMuster([...typed])
      expect({ typed, code: r.code }).toEqual({ typed, code: 2 })
      expect(r.stderr).toContain(`Did you mean \`${meant}\`?`)
    }
    expect((await runMuster(['zzzzzz'])).stderr).not.toContain('Did you mean')
    const flag = await runMuster(['nodes', 'list', '--jsno'])
    expect(flag.code).toBe(2)
    expect(flag.stderr).toContain('unknown flag --jsno for `muster nodes list` (did you mean --json?)')

    for (const words of [['serve'], ['worker', 'join'], ['agent'], ['nodes', 'join-token', 'create'], ['nodes', 'list'], ['projects', 'deploy'], ['login'], ['doctor'], ['demo']]) {
      const r = await runMuster([...words, '--help'])
      expect({ words, code: r.code }).toEqual({ words, code: 0 })
      const examples = r.stdout.split('\nEXAMPLES\n')[1]
      expect({ words, examples: Boolean(examples) }).toEqual({ words, examples: true })
      // every example runs this command, with flags it defines
      for (const line of examples!.split('\n').filter((l) => l.startsWith('  muster '))) {
        expect(line).toStartWith(`  muster ${words.join(' ')}`)
        for (const f of line.match(/ --[a-z][a-z-]*/g) ?? []) expect({ words, flag: f.trim(), defined: r.stdout.includes(`${f.trim()}`) && r.stdout.split('\nEXAMPLES\n')[0]!.includes(f.trim()) }).toEqual({ words, flag: f.trim(), defined: true })
      }
    }
  })
})
