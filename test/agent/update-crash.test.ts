// kill -9 of the Agent at each step of its update journal, a watchdog killed
// during the trial, and a full disk for the staging file (docs/upgrading.md
// "What a node does"): each ends with the node on the old version or the new
// one, never with a half-written binary — every file under versions/ is a
// whole release — and the replicas keep their PIDs throughout. Each step waits
// MUSTER_UPDATE_STEP_DELAY_MS after it is written, so the kill lands in it.
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { procStat } from '../../src/replicas/procs.ts'
import type { Step } from '../../src/agent/update/journal.ts'
import { VERSION } from '../../src/version.ts'
import { musterBin } from '../helpers/binary.ts'
import { buildWithVersion } from '../helpers/builds.ts'
import { startListenerPlatform, type ListenerPlatform } from '../helpers/node-side.ts'
import { asRoot } from '../helpers/root.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'
import { joinNode, killAgentsUnder, releaseBoth, rolloutReaches, updateDirPrefix, type UpdateNode } from '../helpers/update-nodes.ts'

const OLD = '0.0.9'
process.env.MUSTER_ROLLOUT_TICK_MS = '200'
const sha = (f: string) => createHash('sha256').update(readFileSync(f)).digest('hex')

describe('an update interrupted', () => {
  const dir = tmpDir(updateDirPrefix('crash'))
  let p: ListenerPlatform
  let released: Set<string>
  const nodes: UpdateNode[] = []
  beforeAll(async () => {
    p = await startListenerPlatform({ remoteDispatch: true, rescheduleGraceMs: 600_000 })
    await releaseBoth(p, { bin: await buildWithVersion(OLD), version: OLD })
    released = new Set((await p.client.releases.list()).releases.map((r) => r.sha256))
  })
  // A test that failed leaves no rollout running for the next.
  afterEach(async () => {
    const s = await p.client.rollouts.status().catch(() => null)
    if (s && ['running', 'paused', 'halted'].includes(s.state)) await p.client.rollouts.cancel(s.id)
  })
  afterAll(async () => {
    for (const n of nodes) await n.stop()
    await killAgentsUnder(dir.path)
    await p?.close()
    dir[Symbol.dispose]()
  })

  /** A node of its own (label case=NAME) with a replica, joined with the old build. */
  const node = async (name: string, env: Record<string, string> = {}) => {
    const n = await joinNode(p, name, await buildWithVersion(OLD), dir.path, { MUSTER_UPDATE_STEP_DELAY_MS: '1500', ...env }, [`case=${name}`])
    nodes.push(n)
    await p.client.projects.deploy({ name: `app-${name}`, replicas: 1, cpu: 10, memory: 8, command: ['sh', '-c', 'exec sleep 3600'], nodeLabels: { case: name } } as never)
    await waitFor(() => Object.keys(n.replicas()).length === 1, { timeoutMs: 30_000, what: `${name}'s replica` })
    return n
  }

  /** Every binary under versions/ is a whole release; no staging file is left. */
  const whole = (n: UpdateNode) => {
    const root = join(n.dataDir, 'versions')
    if (!existsSync(root)) return
    for (const f of readdirSync(root)) {
      expect(f.startsWith('.staging')).toBe(false)
      if (f === 'current' || f === 'previous') continue
      for (const g of readdirSync(join(root, f))) expect(released.has(sha(join(root, f, g)))).toBe(true)
    }
  }

  const killAt = async (n: UpdateNode, step: Step) => {
    const pid = await waitFor(() => (n.journal().step === step ? n.pid() : undefined), { timeoutMs: 60_000, intervalMs: 10, what: `${n.name} at step ${step}` })
    process.kill(pid, 'SIGKILL')
    await waitFor(() => procStat(pid) === null || procStat(pid)?.state === 'Z', { what: 'the Agent gone' })
    return pid
  }

  for (const step of ['downloading', 'staged', 'swapping'] as const) {
    test(`kill -9 at "${step}": the restarted Agent undoes it, the Platform asks again, and the update completes`, async () => {
      const n = await node(step)
      const replicas = n.replicas()
      const r = await p.client.rollouts.start({ version: VERSION, selector: [`case=${step}`] })
      await killAt(n, step)
      whole(n)
      await n.restart()
      const s = await rolloutReaches(p, r.id, ['done', 'halted'])
      expect(s.state).toBe('done')
      expect(n.log()).toContain(`update: the update to ${VERSION} was interrupted (${step}); the running version stays`)
      expect(n.replicas()).toEqual(replicas)
      expect(readlinkSync(join(n.dataDir, 'versions', 'current'))).toBe(`${VERSION}-2`)
      whole(n)
    })
  }

  test('kill -9 at "trial", before the new binary runs: the watchdog rolls back and starts the old Agent; the rollout halts', async () => {
    const n = await node('trial')
    const replicas = n.replicas()
    const r = await p.client.rollouts.start({ version: VERSION, selector: ['case=trial'] })
    const pid = await killAt(n, 'trial')
    const s = await rolloutReaches(p, r.id, ['done', 'halted'])
    expect(s.state).toBe('halted')
    expect(s.nodes[0]).toMatchObject({ state: 'rolled-back', error: `the new Agent (${VERSION}) exited during its health check` })
    expect(n.pid()).not.toBe(pid)
    expect(p.platform.fabric.registry.get('trial')?.version).toBe(OLD)
    expect(existsSync(join(n.dataDir, 'versions', 'current'))).toBe(false)
    expect(n.replicas()).toEqual(replicas)
    whole(n)
    await p.client.rollouts.cancel(r.id)
  })

  test('kill -9 of the new binary on trial: rolled back to the old; the replicas keep their PIDs', async () => {
    const n = await node('running', { MUSTER_UPDATE_STEP_DELAY_MS: '0' })
    const replicas = n.replicas()
    const r = await p.client.rollouts.start({ version: VERSION, selector: ['case=running'], healthTimeoutSeconds: 30 })
    await waitFor(() => /update: 0\.1\.0 on trial until/.test(n.log()) || n.log().includes(`${VERSION} on trial until`), { timeoutMs: 60_000, intervalMs: 10, what: 'the trial' })
    const pid = n.pid()!
    process.kill(pid, 'SIGKILL')
    const s = await rolloutReaches(p, r.id, ['done', 'halted'])
    expect(s.nodes[0]).toMatchObject({ state: 'rolled-back', error: `the new Agent (${VERSION}) exited during its health check` })
    expect(n.replicas()).toEqual(replicas)
    whole(n)
    await p.client.rollouts.cancel(r.id)
  })

  test('kill -9 of the watchdog during the trial: the new Agent judges itself and keeps the version', async () => {
    const n = await node('watchdog', { MUSTER_UPDATE_STEP_DELAY_MS: '0' })
    const replicas = n.replicas()
    const r = await p.client.rollouts.start({ version: VERSION, selector: ['case=watchdog'] })
    const wd = await waitFor(() => n.journal().update?.watchdog?.pid, { timeoutMs: 60_000, intervalMs: 10, what: 'the watchdog' })
    process.kill(wd, 'SIGKILL')
    const s = await rolloutReaches(p, r.id, ['done', 'halted'])
    expect(s.state).toBe('done')
    expect(n.replicas()).toEqual(replicas)
    whole(n)
  })

  ;(asRoot ? test : test.skip)(`a full disk for the staging file: the update fails with the reason, nothing is left, the Agent runs on${asRoot ? ' [root]' : ' [skipped: needs root for a tmpfs]'}`, async () => {
    const n = await node('disk', { MUSTER_UPDATE_STEP_DELAY_MS: '0' })
    const versions = join(n.dataDir, 'versions')
    mkdirSync(versions, { recursive: true, mode: 0o700 })
    const mount = Bun.spawnSync(['mount', '-t', 'tmpfs', '-o', 'size=24m,mode=0700', 'tmpfs', versions])
    expect(mount.exitCode).toBe(0)
    try {
      const pid = n.pid()
      const r = await p.client.rollouts.start({ version: VERSION, selector: ['case=disk'] })
      const s = await rolloutReaches(p, r.id, ['done', 'halted'])
      expect(s.nodes[0]!.state).toBe('failed')
      const mb = Math.ceil(statSync(await musterBin()).size / 1048576)
      expect(s.nodes[0]!.error).toBe(`no space left on the device for the staging file in ${versions} (the release needs ${mb} MB there): free some space; the running version is unchanged`)
      expect(readdirSync(versions)).toEqual([])
      expect(n.pid()).toBe(pid)
      expect(n.journal().step).toBeUndefined()
      await p.client.rollouts.cancel(r.id)
    } finally {
      Bun.spawnSync(['umount', '-l', versions])
    }
  })
})
