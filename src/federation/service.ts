// Federation's service on a Platform: always a potential controller (it
// becomes one by minting), an office when the environment or the stored token
// says so. Installs the local-door gate on password login and starts the link.
// import-circle: a hub; the office side (office.ts, office-link.ts) takes the Federation.
import type { Auth } from '../auth/auth.ts'
import type { Context } from '../context/context.ts'
import { MusterError } from '../errors.ts'
import type { Projects } from '../projects/service.ts'
import { Controller, DEFAULT_HEARTBEAT_SECONDS } from './controller.ts'
import { localAuthority, localDoor, localDoorRefusal, resolveOfficeConfig } from './membership.ts'
import { OfficeLink } from './office-link.ts'
import { workloadsRunner, type PlacedProjectRunner } from './placed-projects.ts'
import { tunable } from '../tunables.ts'

export interface Federation {
  readonly ctx: Context
  readonly auth: Auth
  controller: Controller
  /** Present when this Platform started as an office. */
  link?: OfficeLink
  /** Runs what the controller places here (the Platform's own workloads unless a test swaps it). */
  placedRunner: PlacedProjectRunner
}

function heartbeatMs(env: Record<string, string | undefined>): number {
  const raw = tunable('MUSTER_FEDERATION_HEARTBEAT_SECONDS', env)?.trim()
  if (!raw) return DEFAULT_HEARTBEAT_SECONDS * 1000
  const s = Number(raw)
  if (!Number.isFinite(s) || s < 0.05 || s > 3600) throw new MusterError('not-configured', `MUSTER_FEDERATION_HEARTBEAT_SECONDS must be a number of seconds between 0.05 and 3600, got "${raw}".`)
  return Math.round(s * 1000)
}

export async function startFederation(ctx: Context, deps: { auth: Auth; projects: Projects }, env: Record<string, string | undefined> = process.env): Promise<Federation> {
  const intervalMs = heartbeatMs(env)
  const config = await resolveOfficeConfig(ctx.dataDir, ctx.store, env, ctx.now())
  // Read from disk on each login, so the door follows the file and the recorded acts, not how serve was started.
  deps.auth.loginGates.push(async () => {
    const la = await localAuthority(ctx.dataDir, ctx.store)
    return la.localLoginAllowed ? null : localDoorRefusal(la.officeId!)
  })
  // Local API tokens and password sessions follow the same door (item 5).
  deps.auth.door = () => localDoor(ctx.dataDir, ctx.store)
  const fed: Federation = { ctx, auth: deps.auth, controller: new Controller(ctx), placedRunner: workloadsRunner(deps.projects) }
  if (config) {
    fed.link = new OfficeLink(fed, config, intervalMs)
    fed.link.start()
  }
  return fed
}

/** The federation service of a Platform (tests reach it this way). */
export function federationOf(p: { federation: Federation }): Federation {
  return p.federation
}
