// `muster demo --ha`: two Platforms on a throwaway PostgreSQL (docs/storage-ha.md),
// the second holding a copy of the first's master key; a worker joins through
// each, a project runs on both, then the first Platform is killed (kill -9)
// and the fleet carries on: the nodes stay ready, the survivor takes the
// background loops over, and a new project runs. Everything — the database
// cluster included — lives in one temp directory removed at the end.
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createClient, type Client } from '../client/index.ts'
import { freePort } from '../addresses.ts'
import { openHostStore } from '../context/host-store.ts'
import { MusterError } from '../errors.ts'
import { Demo, until, type Child, type DemoReporter } from './demo.ts'
import { startThrowawayPostgres } from './postgres.ts'
import { killServeHard } from '../swap/kill.ts'

export interface HaDemoResult {
  dir: string
  database: string
  platforms: { name: string; apiUrl: string; enrollmentUrl: string; fingerprint: string }[]
  killed: string
  survivor: string
  /** Seconds from the kill until the survivor ran every background loop. */
  takeoverSeconds: number
  nodes: string[]
  projects: string[]
  passwordFile: string
}

interface Started {
  name: string
  dir: string
  child: Child
  apiUrl: string
  enrollmentUrl: string
  fingerprint: string
}

export class HaDemo extends Demo {
  private database = ''

  constructor(reporter: DemoReporter) {
    super(reporter)
  }

  private async platform(name: string, dir: string): Promise<Started> {
    // The store's URL in the environment, as an operator gives one with a password (never on argv).
    const child = this.spawn(name, ['serve', '--data-dir', dir, '--port', '0', '--enrollment-port', '0', '--enrollment-address', '127.0.0.1', '--no-local-node'], { MUSTER_PROBE_INTERVAL_MS: '1000', MUSTER_DATABASE_URL: this.database })
    const apiUrl = await until(`${name} to listen`, 30_000, async () => {
      if (child.proc.exitCode !== null) throw new MusterError('internal', `${name} exited: ${child.log().trim()}`)
      return child.log().match(/listening on (http\S+)/)?.[1]
    })
    const m = await until(`${name}'s enrollment listener`, 20_000, async () => child.log().match(/enrollment listener on (https:\/\/\S+) .*fingerprint (sha256:[0-9a-f]{64})/))
    return { name, dir, child, apiUrl, enrollmentUrl: m[1]!, fingerprint: m[2]! }
  }

  async startHa(): Promise<HaDemoResult> {
    const r = this.reporter
    await r.step('Starting a throwaway PostgreSQL', async () => {
      // Its own directory: as root the cluster runs as the postgres user, who cannot enter the demo's 0700 one.
      const pgDir = mkdtempSync(join(tmpdir(), 'muster-demo-pg-'))
      const pg = await startThrowawayPostgres(pgDir).catch((e: unknown) => {
        rmSync(pgDir, { recursive: true, force: true })
        throw e
      })
      this.afterStop = () => {
        pg.stop()
        rmSync(pgDir, { recursive: true, force: true })
      }
      this.database = pg.url
    })
    const a = await r.step('Starting platform-a on it', () => this.platform('platform-a', join(this.dir, 'platform-a')))
    const b = await r.step('Copying platform/master.key and starting platform-b on the same store', async () => {
      const dir = join(this.dir, 'platform-b')
      mkdirSync(join(dir, 'platform'), { recursive: true, mode: 0o700 })
      copyFileSync(join(a.dir, 'platform', 'master.key'), join(dir, 'platform', 'master.key'))
      return this.platform('platform-b', dir)
    })
    const host = await openHostStore(a.dir)
    const { token } = await host.auth.mintApiToken({ name: 'demo', role: 'superadmin' })
    await host.close()
    const clients: Record<string, Client> = { [a.name]: createClient({ url: a.apiUrl, token }), [b.name]: createClient({ url: b.apiUrl, token }) }
    const nodes = ['worker-1', 'worker-2']
    const via = [a, b]
    for (const [i, node] of nodes.entries()) {
      const p = via[i]!
      await r.step(`Joining ${node} through ${p.name}'s enrollment listener`, async () => {
        const { token: joinToken } = await clients[p.name]!.nodes.createEnrollment({ nodeId: node, ttlMinutes: 10 })
        const dataDir = join(this.dir, node)
        const args = ['worker', 'join', '--platform-url', p.enrollmentUrl, '--node-id', node, '--platform-fingerprint', p.fingerprint, '--address', '127.0.0.1', '--port', String(await freePort()), '--data-dir', dataDir]
        await this.run(`${node} join`, args, { MUSTER_ENROLLMENT_TOKEN: joinToken })
        this.spawn(`${node} agent`, ['agent', '--data-dir', dataDir], { MUSTER_AGENT_HOST: '127.0.0.1', MUSTER_AGENT_HEARTBEAT_MS: '1000' })
      })
    }
    const ready = (c: Client) => async () => {
      const list = await c.nodes.list()
      return nodes.every((n) => list.nodes.find((x) => x.name === n)?.state === 'ready')
    }
    await r.step('Waiting for both workers to be ready on both Platforms', () => until('both workers ready on both Platforms', 30_000, async () => (await ready(clients[a.name]!)()) && ready(clients[b.name]!)()))
    const runs = (c: Client, project: string, n: number) => async () => (await c.projects.show(project)).placements.filter((x) => x.state === 'running').length === n
    const command = ['sh', '-c', 'while true; do echo "hello from $MUSTER_PROJECT replica $MUSTER_REPLICA"; sleep 5; done']
    await r.step('Deploying hello (two replicas) on platform-b; platform-a places it', async () => {
      await clients[b.name]!.projects.deploy({ name: 'hello', replicas: 2, cpu: 50, memory: 16, command })
      await until('both replicas to run', 30_000, runs(clients[b.name]!, 'hello', 2))
    })
    const survivor = clients[b.name]!
    let takeoverSeconds = 0
    await r.step('Killing platform-a (kill -9); the workers move to platform-b by themselves', async () => {
      await killServeHard(a.child.proc)
      this.children.splice(this.children.indexOf(a.child), 1)
      const t0 = performance.now()
      await until('platform-b to run every background loop', 20_000, async () => {
        if (!(await ready(survivor)())) throw new MusterError('internal', 'a worker stopped being ready after the kill')
        const me = (await survivor.nodes.platform()).platforms?.find((p) => p.self)
        return ['placement', 'probes', 'trust-keys'].every((l) => me?.runs.includes(l))
      })
      takeoverSeconds = Math.round((performance.now() - t0) / 100) / 10
    })
    await r.step('Deploying after-failover (one replica) on the survivor', async () => {
      await survivor.projects.deploy({ name: 'after-failover', replicas: 1, cpu: 50, memory: 16, command })
      await until('the new replica to run', 30_000, runs(survivor, 'after-failover', 1))
      if (!(await runs(survivor, 'hello', 2)())) throw new MusterError('internal', 'hello stopped running after the kill')
    })
    return {
      dir: this.dir,
      database: this.database,
      platforms: [a, b].map(({ name, apiUrl, enrollmentUrl, fingerprint }) => ({ name, apiUrl, enrollmentUrl, fingerprint })),
      killed: a.name,
      survivor: b.name,
      takeoverSeconds,
      nodes,
      projects: ['hello', 'after-failover'],
      passwordFile: join(a.dir, 'platform', 'initial-superadmin-password'),
    }
  }
}
