// `muster demo`: a Platform with its enrollment listener and two workers that
// join it over the real pinned enrollment, each a separate process of this
// same binary, then a sample project with two replicas. Everything lives in a
// temp directory that is removed at the end.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createClient, type Client } from '../client/index.ts'
import { MusterError } from '../errors.ts'
import { freePort } from '../addresses.ts'
import { openHostStore } from '../context/host-store.ts'

export interface DemoReporter {
  /** Runs one step, showing progress; throws what the step threw. */
  step<T>(title: string, fn: () => Promise<T>): Promise<T>
}

export interface DemoResult {
  dir: string
  apiUrl: string
  enrollmentUrl: string
  fingerprint: string
  token: string
  passwordFile: string
  /** The Platform's data directory. */
  platformDir: string
  nodes: string[]
  project: string
}

export interface Child {
  name: string
  proc: Bun.Subprocess<'ignore', 'pipe', 'pipe'>
  log: () => string
}

/** How to start this same program again: the compiled binary, or bun and the entry file. */
function selfCommand(): string[] {
  const entry = process.argv[1] ?? ''
  return entry && !entry.startsWith('/$bunfs') && entry.endsWith('.ts') ? [process.execPath, entry] : [process.execPath]
}

export async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined | null | false>): Promise<T> {
  const deadline = Date.now() + timeoutMs
  let last: unknown
  for (;;) {
    try {
      const v = await probe()
      if (v) return v
    } catch (e) {
      last = e
    }
    if (Date.now() > deadline) throw new MusterError('unavailable', `Timed out waiting for ${what}${last ? ` (${(last as Error).message})` : ''}.`)
    await Bun.sleep(100)
  }
}

export class Demo {
  readonly dir = mkdtempSync(join(tmpdir(), 'muster-demo-'))
  protected readonly children: Child[] = []
  private client: Client | undefined
  /** Run after every process stopped, before the directory is removed (the HA demo's PostgreSQL). */
  protected afterStop: (() => void) | undefined

  constructor(protected readonly reporter: DemoReporter) {}

  protected spawn(name: string, args: string[], env: Record<string, string> = {}): Child {
    const proc = Bun.spawn([...selfCommand(), ...args], { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe', env: { ...process.env, NO_COLOR: '1', MUSTER_LOG_LEVEL: '3', ...env } })
    let out = ''
    const dec = new TextDecoder()
    const pump = async (s: ReadableStream<Uint8Array>) => {
      for await (const c of s) out = (out + dec.decode(c)).slice(-64_000)
    }
    void pump(proc.stdout)
    void pump(proc.stderr)
    const child = { name, proc, log: () => out }
    this.children.push(child)
    return child
  }

  protected async run(name: string, args: string[], env: Record<string, string> = {}): Promise<string> {
    const c = this.spawn(name, args, env)
    const code = await c.proc.exited
    this.children.splice(this.children.indexOf(c), 1)
    if (code !== 0) throw new MusterError('internal', `${name} failed (exit ${code}): ${c.log().trim().split('\n').slice(-3).join(' / ')}`)
    return c.log()
  }

  async start(): Promise<DemoResult> {
    const r = this.reporter
    const platformDir = join(this.dir, 'platform-data')
    const platform = await r.step('Starting a Platform with an enrollment listener', async () => {
      const child = this.spawn('platform', ['serve', '--data-dir', platformDir, '--port', '0', '--enrollment-port', '0', '--enrollment-address', '127.0.0.1', '--no-local-node'], {
        MUSTER_PROBE_INTERVAL_MS: '1000',
      })
      const apiUrl = await until('the Platform to listen', 20_000, async () => {
        if (child.proc.exitCode !== null) throw new MusterError('internal', `the Platform exited: ${child.log().trim()}`)
        return child.log().match(/listening on (http\S+)/)?.[1]
      })
      const m = await until('the enrollment listener', 20_000, async () => child.log().match(/enrollment listener on (https:\/\/\S+) .*fingerprint (sha256:[0-9a-f]{64})/))
      const host = await openHostStore(platformDir)
      const { token } = await host.auth.mintApiToken({ name: 'demo', role: 'superadmin' })
      await host.close()
      this.client = createClient({ url: apiUrl, token })
      return { apiUrl, enrollmentUrl: m[1]!, fingerprint: m[2]!, token }
    })
    const client = this.client!
    const nodes = ['worker-1', 'worker-2']
    for (const node of nodes) {
      await r.step(`Joining ${node} over the pinned enrollment listener`, async () => {
        const { token } = await client.nodes.createEnrollment({ nodeId: node, ttlMinutes: 10 })
        const dataDir = join(this.dir, node)
        const port = await freePort()
        await this.run(`${node} join`, ['worker', 'join', '--platform-url', platform.enrollmentUrl, '--node-id', node, '--platform-fingerprint', platform.fingerprint, '--address', '127.0.0.1', '--port', String(port), '--data-dir', dataDir], {
          MUSTER_ENROLLMENT_TOKEN: token,
        })
        this.spawn(`${node} agent`, ['agent', '--data-dir', dataDir], { MUSTER_AGENT_HOST: '127.0.0.1', MUSTER_AGENT_HEARTBEAT_MS: '1000' })
      })
    }
    await r.step('Waiting for both workers to be ready', () =>
      until('both workers to be ready', 30_000, async () => {
        const list = await client.nodes.list()
        return nodes.every((n) => list.nodes.find((x) => x.name === n)?.state === 'ready')
      }),
    )
    const project = 'hello'
    await r.step('Deploying project hello with two replicas', async () => {
      await client.projects.deploy({
        name: project,
        replicas: 2,
        cpu: 50,
        memory: 16,
        command: ['sh', '-c', 'while true; do echo "hello from $MUSTER_PROJECT replica $MUSTER_REPLICA"; sleep 5; done'],
      })
      await until('both replicas to run', 30_000, async () => {
        const p = await client.projects.show(project)
        const running = p.placements.filter((x) => x.state === 'running')
        return running.length === 2 && new Set(running.map((x) => x.node)).size === 2
      })
    })
    return { dir: this.dir, ...platform, platformDir, passwordFile: join(platformDir, 'platform', 'initial-superadmin-password'), nodes, project }
  }

  /** A child that stopped on its own (the demo is broken), or null. */
  exited(): string | null {
    const c = this.children.find((x) => x.proc.exitCode !== null)
    return c ? `${c.name} exited (${c.proc.exitCode}): ${c.log().trim().split('\n').slice(-3).join(' / ')}` : null
  }

  /** Stops every process (agents first, with SIGUSR2 so they stop their replicas, which outlive a plain stop) and removes the directory. */
  async stop(): Promise<void> {
    const order = [...this.children].sort((a, b) => Number(a.name.startsWith('platform')) - Number(b.name.startsWith('platform')))
    for (const c of order) {
      if (c.proc.exitCode === null) c.proc.kill(c.name.endsWith(' agent') ? 'SIGUSR2' : 'SIGTERM')
      const t = setTimeout(() => c.proc.kill('SIGKILL'), 10_000)
      await c.proc.exited
      clearTimeout(t)
    }
    this.children.length = 0
    this.afterStop?.()
    rmSync(this.dir, { recursive: true, force: true })
  }
}
