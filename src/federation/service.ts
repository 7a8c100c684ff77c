// Federation's service on a Platform: always a potential controller (it
// becomes one by minting), an office when the environment or the stored token
// says so. Installs the local-door gate on password login and starts the link.
import { MusterError } from '../errors.ts'
import type { Platform } from '../platform.ts'
import { Controller, DEFAULT_HEARTBEAT_SECONDS } from './controller.ts'
import { localAuthority, localDoorRefusal, resolveOfficeConfig } from './membership.ts'
import { OfficeLink } from './office-link.ts'

export interface Federation {
  controller: Controller
  /** Present when this Platform started as an office. */
  link?: OfficeLink
}

const services = new WeakMap<Platform, Federation>()

function heartbeatMs(env: Record<string, string | undefined>): number {
  const raw = env.MUSTER_FEDERATION_HEARTBEAT_SECONDS?.trim()
  if (!raw) return DEFAULT_HEARTBEAT_SECONDS * 1000
  const s = Number(raw)
  if (!Number.isFinite(s) || s < 0.05 || s > 3600) throw new MusterError('not-configured', `MUSTER_FEDERATION_HEARTBEAT_SECONDS must be a number of seconds between 0.05 and 3600, got "${raw}".`)
  return Math.round(s * 1000)
}

export async function startFederation(platform: Platform, env: Record<string, string | undefined> = process.env): Promise<Federation> {
  const intervalMs = heartbeatMs(env)
  const config = resolveOfficeConfig(platform.dataDir, platform.db, env, platform.now())
  // Read from disk on each login, so the door follows the file and the recorded acts, not how serve was started.
  platform.auth.loginGates.push(() => {
    const la = localAuthority(platform.dataDir, platform.db)
    return la.localLoginAllowed ? null : localDoorRefusal(la.officeId!)
  })
  const fed: Federation = { controller: new Controller(platform) }
  if (config) {
    fed.link = new OfficeLink(platform, config, intervalMs)
    fed.link.start()
  }
  services.set(platform, fed)
  return fed
}

export function federationOf(platform: Platform): Federation {
  const fed = services.get(platform)
  if (!fed) throw new MusterError('unavailable', 'Federation is not started on this Platform.')
  return fed
}
