// `muster serve`'s engine: opens the Platform, listens, and stops cleanly on
// SIGINT/SIGTERM. Run by the supervisor (src/swap/supervisor.ts), it also takes
// part in engine swaps: as the replacement it waits for the old engine to
// quiesce before it opens the store; as the old engine it quiesces, forwards
// and drains when told (src/swap/engine.ts).
import { readFileSync } from 'node:fs'
import { assertPrivate, DataDir } from '../datadir.ts'
import { MusterError } from '../errors.ts'
import { log } from '../log.ts'
import { Platform, type PlatformOptions } from './platform.ts'
import { serveLockHolder } from '../serve-lock.ts'
import { DeclaredNodes } from '../fabric/nodes-file.ts'
import { identityRoots } from '../cloud/identity/roots.ts'
import { untilStopSignal } from '../shutdown.ts'
import { handOver, quiesce, seedProbes, startHandoverServer, SupervisorLink } from '../swap/engine.ts'
import { watchSupervisor } from '../swap/orphan-watch.ts'
import type { ProbeState } from '../swap/protocol.ts'
import { VERSION } from '../version.ts'

/** Runs one engine. `role` is set when a supervisor started this process. */
export async function serve(options: PlatformOptions, role?: 'first' | 'takeover'): Promise<void> {
  if (!role) return serveAlone(options)
  // The supervisor holds platform/serve.lock for every engine it runs; nothing else may start one.
  if (serveLockHolder(new DataDir(options.dataDir)) !== process.ppid) throw new MusterError('already-running', 'This engine was not started by the muster serve holding the data directory.')
  const link = new SupervisorLink()
  // Should the supervisor die while this engine cannot run its event loop, a thread of its own ends it.
  watchSupervisor()
  // A SIGHUP meant for serve (a `pkill -HUP`, a closed terminal) must not end an engine.
  process.on('SIGHUP', () => log.info(`engine ${process.pid}: SIGHUP is for the muster serve process (pid ${process.ppid}), which replaces engines`))
  let probes: Record<string, ProbeState> = {}
  if (role === 'takeover') {
    // 1. started and checked what can be checked without the store: a bad file fails here, and the old engine keeps serving
    preflight(options)
    link.tell({ t: 'booted', version: VERSION })
    const m = await link.next()
    if (m?.t !== 'open') throw new MusterError('unavailable', 'The engine swap was called off.')
    options = { ...options, port: m.apiPort, enrollmentPort: m.enrollmentPort ?? undefined, takeover: true }
    probes = m.probes
  }
  let platform: Platform | undefined
  try {
    // 2. open the store and take the ports (a replacement steers them to itself)
    platform = await Platform.open({ ...options, lock: false })
    seedProbes(platform, probes)
    await platform.listen()
  } catch (e) {
    if (role === 'takeover') link.tell({ t: 'failed', message: (e as Error).message })
    await platform?.close()
    throw e
  }
  const handover = role === 'takeover' ? startHandoverServer(platform) : undefined
  link.tell({ t: 'serving', apiPort: platform.apiPort!, enrollmentPort: platform.listener?.port ?? null, handover: handover?.path ?? null, version: VERSION })
  try {
    await runEngine(platform, link, () => handover?.stop())
  } finally {
    handover?.stop()
  }
}

/**
 * What a replacement engine checks before the old one stops its services:
 * the files serve reads at start. Configuration re-read on SIGHUP (any file a
 * flag names) belongs here, so that a bad one is refused with the old engine
 * still serving, instead of after it quiesced.
 */
export function preflight(options: PlatformOptions): void {
  for (const file of [options.tlsKey, options.fleetTokenFile]) if (file) assertPrivate(file)
  for (const file of [options.tlsCert, options.tlsKey, options.fleetTokenFile]) if (file) readFileSync(file)
  // --nodes-file: a bad one is refused with its line and reason, and the old engine keeps the nodes it declared.
  if (options.nodesFile) DeclaredNodes.open(options.nodesFile)
  if (options.cloudIdentityRoots) identityRoots(options.cloudIdentityRoots)
}

/** A Platform without a supervisor (serve() called directly): SIGHUP reads the nodes file again. */
async function serveAlone(options: PlatformOptions): Promise<void> {
  const platform = await Platform.open(options)
  try {
    await platform.listen()
  } catch (e) {
    await platform.close()
    throw e
  }
  const onHup = () => void platform.reloadNodesFile().catch((e) => log.error(`nodes file reload: ${(e as Error).message}`))
  process.on('SIGHUP', onHup)
  try {
    await untilStopSignal()
  } finally {
    process.off('SIGHUP', onHup)
  }
  await platform.close()
}

/** 3. serve until stopped, or until the supervisor swaps this engine out. */
async function runEngine(platform: Platform, link: SupervisorLink, predecessorGone: () => void): Promise<void> {
  const stop = untilStopSignal().then(() => 'stop' as const)
  for (;;) {
    const m = await Promise.race([stop, link.next()])
    if (m === 'stop') return platform.close()
    if (m === null) {
      log.warn('the muster serve process is gone; stopping')
      return platform.close()
    }
    if (m.t === 'predecessor-gone') predecessorGone()
    else if (m.t === 'reload') void platform.reloadNodesFile().catch((e) => log.error(`nodes file reload: ${(e as Error).message}`))
    else if (m.t === 'quiesce') {
      const q = await Promise.race([stop, quiesce(platform)])
      if (q === 'stop') return platform.close()
      link.tell({ t: 'quiesced', ...q })
    } else if (m.t === 'release') {
      log.info(`engine ${process.pid}: a new engine serves; forwarding and draining`)
      await Promise.race([stop, handOver(platform, m.handover)])
      await platform.close()
      log.info(`engine ${process.pid}: drained`)
      return
    } else if (m.t === 'abort') {
      platform.gate.abandon()
      await platform.close()
      throw new MusterError('unavailable', 'The engine swap failed and this engine had already stopped its services; restart muster.')
    }
  }
}
