// The Platforms this node can use (docs/storage-ha.md): several Platforms on one store
// act as one, and every enroll and heartbeat answer lists the live ones
// (`platforms`). The Agent keeps that list in worker/platforms.json, talks to
// one of them, and moves to the next when its current one fails — so no load
// balancer is needed in front of the Platforms.
//
// - The first choice is spread by a hash of the node's name, so a fleet that
//   joins through one Platform does not all heartbeat to it.
// - A move happens on a network failure or a 5xx, never on a refusal (a
//   revoked or unknown credential is refused by every Platform alike).
// - Each Platform is authenticated exactly as the joined one was (apiPin in
//   connect.ts): the same pin, CA or system roots. An https API is never
//   traded for a plain-http one from a list.
// - Trust refreshes go to the current Platform's enrollment listener first,
//   then the one joined through, then the others, each with the node's pins:
//   every Platform's certificates come from the one Platform CA in the store.
import type { DataDir } from '../datadir.ts'
import { sha256Hex } from '../crypto/tokens.ts'
import { MusterError } from '../errors.ts'
import { log } from '../log.ts'
import type { AgentConfig } from './files.ts'

export const PLATFORMS_FILE = 'worker/platforms.json'
const MAX_PLATFORMS = 32

export interface KnownPlatform {
  /** The Platform API (heartbeats, renewals, assignments). */
  url: string
  /** Its enrollment listener (trust refresh). */
  enrollmentUrl?: string
  id?: string
}

interface PlatformsFile {
  platforms: KnownPlatform[]
  current: string
  updatedAt: string
}

const origin = (raw: unknown, protocols: string[]): string | undefined => {
  if (typeof raw !== 'string' || raw.length > 300 || !URL.canParse(raw)) return undefined
  const u = new URL(raw)
  return protocols.includes(u.protocol) && !u.username && !u.password ? u.origin : undefined
}

/** The entries of a `platforms` answer this node may use; never plain http when it joined an https API. */
export function usablePlatforms(value: unknown, joinedApi: string): KnownPlatform[] {
  if (!Array.isArray(value)) return []
  const protocols = joinedApi.startsWith('https:') ? ['https:'] : ['https:', 'http:']
  const out: KnownPlatform[] = []
  for (const v of value.slice(0, MAX_PLATFORMS) as Record<string, unknown>[]) {
    const url = origin(v?.url, protocols)
    if (!url || out.some((p) => p.url === url)) continue
    const enrollmentUrl = origin(v.enrollmentUrl, ['https:'])
    const id = typeof v.id === 'string' && /^[A-Za-z0-9_-]{1,64}$/.test(v.id) ? v.id : undefined
    out.push({ url, ...(enrollmentUrl ? { enrollmentUrl } : {}), ...(id ? { id } : {}) })
  }
  return out
}

/** The first choice among `platforms` for this node: spread by a hash of its name. */
export function firstChoice(nodeId: string, platforms: KnownPlatform[]): string | undefined {
  const urls = platforms.map((p) => p.url).sort()
  if (urls.length === 0) return undefined
  return urls[Number.parseInt(sha256Hex(nodeId).slice(0, 8), 16) % urls.length]
}

export function readPlatformsFile(dataDir: DataDir): PlatformsFile | undefined {
  try {
    const f = JSON.parse(dataDir.readSecretText(PLATFORMS_FILE) ?? 'null') as PlatformsFile | null
    return f && Array.isArray(f.platforms) && typeof f.current === 'string' ? f : undefined
  } catch {
    return undefined
  }
}

/** Writes the list a join learned, with the node's first choice. */
export function rememberPlatforms(dataDir: DataDir, config: AgentConfig, answer: unknown, now = Date.now()): void {
  const platforms = usablePlatforms(answer, config.platformUrl)
  if (!platforms.some((p) => p.url === config.platformUrl)) platforms.unshift({ url: config.platformUrl })
  const current = firstChoice(config.nodeId, platforms) ?? config.platformUrl
  dataDir.writeSecret(PLATFORMS_FILE, `${JSON.stringify({ platforms, current, updatedAt: new Date(now).toISOString() } satisfies PlatformsFile, null, 2)}\n`)
}

/** Whether an error means the Platform itself failed (try another), not that it refused. */
export function isPlatformFailure(e: unknown): boolean {
  if (!(e instanceof MusterError)) return true
  if (e.code === 'platform-unreachable' || e.code === 'store-unavailable') return true
  const status = Number(e.detail?.status)
  return e.code === 'internal' && (!status || status >= 500)
}

export class PlatformChoice {
  private platforms: KnownPlatform[]
  private currentUrl: string
  /** Platforms tried since the last success: a failure moves on at once until each was tried. */
  private tried = new Set<string>()

  constructor(
    private readonly dataDir: DataDir,
    /** The node's configuration now (a trust answer may replace its pins or API URL). */
    private readonly configNow: () => AgentConfig,
  ) {
    const config = configNow()
    const f = readPlatformsFile(dataDir)
    this.platforms = usablePlatforms(f?.platforms, config.platformUrl)
    if (!this.platforms.some((p) => p.url === config.platformUrl)) this.platforms.unshift({ url: config.platformUrl, enrollmentUrl: config.enrollmentUrl })
    this.currentUrl = f && this.platforms.some((p) => p.url === f.current) ? f.current : (firstChoice(config.nodeId, this.platforms) ?? config.platformUrl)
  }

  get current(): string {
    return this.currentUrl
  }

  get known(): readonly KnownPlatform[] {
    return this.platforms
  }

  private get config(): AgentConfig {
    return this.configNow()
  }

  /** The node's configuration with the Platform it uses now. */
  connection(): AgentConfig {
    return { ...this.config, platformUrl: this.currentUrl }
  }

  /**
   * A trust answer named another API URL for the Platform it came from. A URL
   * already in the list is another live Platform: nothing moves. Otherwise the
   * API moved (a new --public-url): the old entry takes the new URL.
   */
  apiMoved(from: string, to: string): void {
    if (from === to || this.platforms.some((p) => p.url === to)) return
    const i = this.platforms.findIndex((p) => p.url === from)
    if (i >= 0) this.platforms[i] = { ...this.platforms[i]!, url: to }
    else this.platforms.unshift({ url: to })
    if (this.currentUrl === from || i < 0) this.currentUrl = to
    this.save()
  }

  /** Enrollment listeners to ask for trust keys, in order: the current Platform's, the joined one, the others. */
  trustUrls(): string[] {
    const mine = this.platforms.find((p) => p.url === this.currentUrl)?.enrollmentUrl
    const all = [mine, this.config.enrollmentUrl, ...this.platforms.map((p) => p.enrollmentUrl)]
    return [...new Set(all.filter((u): u is string => Boolean(u)))]
  }

  /** A Platform answered: keep the list it sent (the live Platforms). */
  succeeded(answer: unknown): void {
    this.tried.clear()
    const next = usablePlatforms(answer, this.config.platformUrl)
    if (next.length === 0) return
    // The one that answered stays in the list even if it named itself by another URL.
    if (!next.some((p) => p.url === this.currentUrl)) next.unshift(this.platforms.find((p) => p.url === this.currentUrl) ?? { url: this.currentUrl })
    if (JSON.stringify(next) === JSON.stringify(this.platforms)) return
    this.platforms = next
    this.save()
    log.info(`Platforms for this node: ${next.map((p) => p.url).join(', ')} (using ${this.currentUrl})`)
  }

  /**
   * The Platform at `url` failed. Moves to the next one in the list; true when
   * that one was not tried since the last success (so retry at once).
   */
  failed(url: string): boolean {
    if (url !== this.currentUrl) return true // another loop moved already
    this.tried.add(url)
    if (this.platforms.length < 2) return false
    const i = this.platforms.findIndex((p) => p.url === url)
    const next = this.platforms[(i + 1) % this.platforms.length]!.url
    this.currentUrl = next
    this.save()
    log.warn(`the Platform at ${url} does not answer; moving to ${next}`)
    return !this.tried.has(next)
  }

  private save(): void {
    this.dataDir.writeSecret(PLATFORMS_FILE, `${JSON.stringify({ platforms: this.platforms, current: this.currentUrl, updatedAt: new Date().toISOString() } satisfies PlatformsFile, null, 2)}\n`)
  }
}
