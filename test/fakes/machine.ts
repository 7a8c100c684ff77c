// A fake cloud machine that boots for real on 127.0.0.1: it reads its
// first-boot data, downloads muster from the URL in it and checks the SHA-256
// (as install.sh --from does), then runs `worker join` with the token file on
// stdin and `agent`, the way join.sh does: heartbeat-only unless the data asks
// for a probe (then its "public" address is 127.0.0.1), labelled with its
// role. Only the account, systemd and the machine's own addresses differ: it
// listens on 127.0.0.1 in a temp dir.
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
    const reach = boot.env.MUSTER_PROBE === 'yes' ? ['--address', '127.0.0.1'] : ['--heartbeat-only']
    // join.sh passes --label role=…; `worker join --label` arrives with node labels (the lead's part).
    const label = (await supportsLabel(bin)) ? ['--label', `role=${boot.env.MUSTER_ROLE}`] : []
    const j = Bun.spawn([bin, 'worker', 'join', '--platform-url', boot.env.MUSTER_PLATFORM_URL!, '--node-id', boot.env.MUSTER_NODE_ID!, '--platform-fingerprint', boot.env.MUSTER_PLATFORM_FINGERPRINT!, '--data-dir', data, ...label, ...reach, '--port', String(await freePort())], {
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
        // A machine going away: its Agent stops its replicas too (they outlive a plain SIGTERM).
        agent.kill('SIGUSR2')
        await agent.exited
      }
    },
  }
}

const labelSupport = new Map<string, Promise<boolean>>()

/** Whether this muster's `worker join` takes --label (the first-boot script always passes it). */
function supportsLabel(bin: string): Promise<boolean> {
  let known = labelSupport.get(bin)
  if (!known) {
    known = (async () => {
      const p = Bun.spawn([bin, 'worker', 'join', '--help'], { stdout: 'pipe', stderr: 'pipe', env: { PATH: process.env.PATH, NO_COLOR: '1' } })
      const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited])
      return /--label\b/.test(out + err)
    })()
    labelSupport.set(bin, known)
  }
  return known
}
