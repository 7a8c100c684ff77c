// A fake cloud machine that boots for real on 127.0.0.1: it reads its
// first-boot data, downloads muster from the URL in it and checks the SHA-256
// (as install.sh --from does), then runs `worker join` with the token file on
// stdin and `agent`, the way join.sh does. Only the account, systemd and the
// machine's own addresses differ: it listens on 127.0.0.1 in a temp dir.
import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { freePort } from '../../src/addresses.ts'
import { readFirstBoot } from './first-boot.ts'

export interface BootedMachine {
  joined: Promise<{ code: number; stdout: string; stderr: string }>
  /** The join's and the Agent's output so far. */
  log(): string
  stop(): Promise<void>
}

export function bootMachine(userData: string, dir: string): BootedMachine {
  let out = ''
  let agent: Bun.Subprocess | undefined
  let stopped = false
  const pump = async (s: ReadableStream<Uint8Array>) => {
    for await (const c of s) out += new TextDecoder().decode(c)
  }
  const joined = (async () => {
    const boot = readFirstBoot(userData)
    const root = join(dir, 'root')
    for (const f of boot.files.values()) {
      mkdirSync(join(root, f.path, '..'), { recursive: true })
      writeFileSync(join(root, f.path), f.content, { mode: Number.parseInt(f.permissions, 8) })
    }
    // install.sh --from URL --sha256 HEX: download, check, only then install
    const res = await fetch(boot.env.MUSTER_BINARY_URL!)
    if (!res.ok) throw new Error(`binary download answered ${res.status}`)
    const bytes = new Uint8Array(await res.arrayBuffer())
    const sha = new Bun.CryptoHasher('sha256').update(bytes).digest('hex')
    if (sha !== boot.env.MUSTER_BINARY_SHA256) throw new Error(`binary checksum ${sha} is not ${boot.env.MUSTER_BINARY_SHA256}`)
    const bin = join(dir, 'muster')
    writeFileSync(bin, bytes)
    chmodSync(bin, 0o755)
    const data = join(dir, 'data')
    const env = { PATH: process.env.PATH, HOME: dir, NO_COLOR: '1', MUSTER_AGENT_HOST: '127.0.0.1', MUSTER_AGENT_HEARTBEAT_MS: '300' }
    const tokenFile = join(root, 'root/muster-first-boot/enrollment-token')
    const j = Bun.spawn([bin, 'worker', 'join', '--platform-url', boot.env.MUSTER_PLATFORM_URL!, '--node-id', boot.env.MUSTER_NODE_ID!, '--platform-fingerprint', boot.env.MUSTER_PLATFORM_FINGERPRINT!, '--data-dir', data, '--address', '127.0.0.1', '--port', String(await freePort())], {
      env,
      stdin: Bun.file(tokenFile),
      stdout: 'pipe',
      stderr: 'pipe',
    })
    const [stdout, stderr, code] = await Promise.all([new Response(j.stdout).text(), new Response(j.stderr).text(), j.exited])
    out += stdout + stderr
    if (code !== 0) return { code, stdout, stderr }
    rmSync(tokenFile)
    if (!stopped) {
      agent = Bun.spawn([bin, 'agent', '--data-dir', data], { env, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
      void pump(agent.stdout as ReadableStream<Uint8Array>)
      void pump(agent.stderr as ReadableStream<Uint8Array>)
    }
    return { code, stdout, stderr }
  })()
  return {
    joined,
    log: () => out,
    async stop() {
      stopped = true
      await joined.catch(() => {})
      if (agent && agent.exitCode === null) {
        agent.kill('SIGTERM')
        await agent.exited
      }
    },
  }
}
