// Real Agents for update tests on this machine: a node joined with a given
// muster binary (an older build of this tree), its Agent started from it, and
// what the tests read of it: the PID in worker/agent.pid (the same process
// after an update, a new one after a rollback without systemd), the journal,
// the replicas' PIDs and start times. The releases: the old build and
// dist/muster, signed with a fresh release key and uploaded.
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { readJournal, type Journal } from '../../src/agent/update/journal.ts'
import { procStat } from '../../src/replicas/procs.ts'
import { DataDir } from '../../src/datadir.ts'
import { publishRelease } from '../../src/releases/publish.ts'
import { newReleaseKey, type ReleaseKeyFile } from '../../src/signed/releases.ts'
import { musterBin, runMuster, startMuster, type Daemon } from './binary.ts'
import { freePort, type ListenerPlatform } from './node-side.ts'
import { waitFor } from './tmp.ts'

/** The data directories of update tests carry the test run's pid: `muster-update…-<pid>-…`. */
export const updateDirPrefix = (kind: string) => `muster-update-${kind}-${process.pid}-`

function processes(): { pid: number; argv: string[] }[] {
  const out: { pid: number; argv: string[] }[] = []
  for (const e of readdirSync('/proc')) {
    const pid = Number(e)
    if (!pid || pid === process.pid) continue
    try {
      out.push({ pid, argv: readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0') })
    } catch {}
  }
  return out
}
const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM'
  }
}
const dataDirOf = (argv: string[]) => argv[argv.indexOf('--data-dir') + 1]

/** Kills the Agents and watchdogs running on a data directory under `root`, after asking them to stop their replicas (a rollback without systemd starts the old Agent detached: nothing else would end it). */
export async function killAgentsUnder(root: string): Promise<void> {
  const mine = processes().filter((p) => p.argv.includes('agent') && dataDirOf(p.argv)?.startsWith(root))
  for (const d of new Set(mine.map((p) => dataDirOf(p.argv)!))) if (existsSync(d)) await runMuster(['agent', '--stop-replicas', '--data-dir', d], { timeoutMs: 30_000, bin: await musterBin() }).catch(() => {})
  for (const p of processes()) if (p.argv.includes('agent') && dataDirOf(p.argv)?.startsWith(root)) try { process.kill(p.pid, 'SIGKILL') } catch {}
}

let swept = false
/** Agents of update-test runs that died before their afterAll (a mutant run's timeout): their replicas stopped, they and their data directory removed. */
async function sweepStale(): Promise<void> {
  if (swept) return
  swept = true
  for (const p of processes()) {
    const d = p.argv.includes('agent') ? dataDirOf(p.argv) : undefined
    const run = d && /^(.*\/muster-update-[a-z]+-(\d+)-[^/]+)/.exec(d)
    if (!run || alive(Number(run[2]))) continue
    await killAgentsUnder(run[1]!)
    rmSync(run[1]!, { recursive: true, force: true })
  }
}

export interface UpdateNode {
  name: string
  dataDir: string
  /** The process first started (after a rollback without systemd, another one runs: pid()). */
  agent: Daemon
  pid(): number | undefined
  journal(): Journal
  /** project/replica → "pid start-time" of the running replicas. */
  replicas(): Record<string, string>
  log(): string
  /** Starts the Agent again from the service's binary, as systemd would after it died. */
  restart(): Promise<void>
  stop(): Promise<void>
}

export async function joinNode(p: ListenerPlatform, name: string, bin: string, root: string, env: Record<string, string> = {}, labels: string[] = []): Promise<UpdateNode> {
  await sweepStale()
  const dataDir = join(root, name)
  const { token } = await p.client.nodes.createEnrollment({ nodeId: name })
  const joined = await runMuster(['worker', 'join', '--platform-url', p.enrollUrl, '--node-id', name, '--platform-fingerprint', p.fingerprint, '--data-dir', dataDir, '--port', String(await freePort()), '--address', '127.0.0.1', ...labels.flatMap((l) => ['--label', l])], { bin, stdin: `${token}\n` })
  if (joined.code !== 0) throw new Error(`join ${name}: ${joined.stderr}`)
  const agentEnv = { MUSTER_AGENT_HEARTBEAT_MS: '300', MUSTER_AGENT_LOG_MAX_BYTES: '100000', ...env }
  const daemons = [await startMuster(['agent', '--data-dir', dataDir], { bin, env: agentEnv })]
  const agent = daemons[0]!
  const d = new DataDir(dataDir)
  const pid = () => {
    try {
      const v = JSON.parse(readFileSync(join(dataDir, 'worker', 'agent.pid'), 'utf8')) as { pid?: number; startTime?: string }
      return v.pid !== undefined && procStat(v.pid)?.startTime === v.startTime ? v.pid : undefined
    } catch {
      return undefined
    }
  }
  const node: UpdateNode = {
    name,
    dataDir,
    agent,
    pid,
    journal: () => readJournal(d),
    replicas: () => {
      try {
        const recs = (JSON.parse(readFileSync(join(dataDir, 'worker', 'replicas.json'), 'utf8')) as { replicas: { project: string; replica: number; pid: number; startTime: string }[] }).replicas
        return Object.fromEntries(recs.filter((r) => procStat(r.pid)?.startTime === r.startTime).map((r) => [`${r.project}/${r.replica}`, `${r.pid} ${r.startTime}`]))
      } catch {
        return {}
      }
    },
    log: () => daemons.map((d) => d.log()).join(''),
    async restart() {
      daemons.push(await startMuster(['agent', '--data-dir', dataDir], { bin, env: agentEnv }))
    },
    async stop() {
      const running = pid()
      if (running !== undefined) {
        try {
          process.kill(running, 'SIGTERM')
        } catch {}
        await waitFor(() => procStat(running) === null || procStat(running)?.state === 'Z', { timeoutMs: 15_000, what: `${name}'s Agent to stop` }).catch(() => process.kill(running, 'SIGKILL'))
      }
      for (const d of daemons) await d.stopLeavingReplicas()
      await runMuster(['agent', '--stop-replicas', '--data-dir', dataDir], { timeoutMs: 30_000, bin: await musterBin() })
    },
  }
  await waitFor(async () => {
    const n = p.platform.fabric.registry.get(name)
    return (await p.platform.rollouts.nodeAgent(name)) !== null && n !== undefined && p.platform.fabric.registry.state(n).state === 'ready'
  }, { timeoutMs: 30_000, what: `${name} ready and reporting what it runs` })
  return node
}

/** The old build (sequence 1) and dist/muster (sequence 2) released under a new key. */
export async function releaseBoth(p: ListenerPlatform, old: { bin: string; version: string }): Promise<{ key: ReleaseKeyFile }> {
  const key = newReleaseKey()
  await publishRelease(p.client, { binary: old.bin, key, level: 1 })
  await publishRelease(p.client, { binary: await musterBin(), key, level: 1 })
  return { key }
}

/** Waits until the rollout is in one of `states` with no node updating any more (or throws with the nodes' states). */
export async function rolloutReaches(p: ListenerPlatform, id: string, states: string[], timeoutMs = 90_000): Promise<Awaited<ReturnType<ListenerPlatform['client']['rollouts']['status']>>> {
  return waitFor(async () => {
    const s = await p.client.rollouts.status(id)
    return states.includes(s.state) && s.nodes.every((n) => !['downloading', 'installing', 'restarting'].includes(n.state)) ? s : null
  }, { timeoutMs, intervalMs: 100, what: `rollout ${id} to be ${states.join(' or ')}` }).catch(async (e) => {
    throw new Error(`${(e as Error).message}: ${JSON.stringify((await p.client.rollouts.status(id)).nodes.map((n) => [n.name, n.state, n.error]))}`)
  })
}
