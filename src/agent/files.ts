// The node's files in the data directory (docs/operations.md): worker/agent.key and
// agent.crt, agent.json (how to reach and authenticate the Platform),
// node-credential and trust.json. Every one is 0600 in a 0700 folder.
import { DataDir } from '../datadir.ts'
import { MusterError } from '../errors.ts'
import type { TrustKey } from '../wire/nodes.ts'

export const WORKER = {
  dir: 'worker',
  key: 'worker/agent.key',
  cert: 'worker/agent.crt',
  config: 'worker/agent.json',
  credential: 'worker/node-credential',
  trust: 'worker/trust.json',
} as const

/**
 * How the node authenticates a Platform URL: pins (the Platform CA's key, or
 * the exact certificate of a listener from before the CA), a CA file, or the
 * system roots. `also` holds further pins the Platform asked the node to
 * accept (a prepared CA replacement, the old listener certificate).
 */
export type PlatformPin = { fingerprint: string; also?: string[] } | { caPem: string } | { system: true }

export interface AgentConfig {
  nodeId: string
  agentId: string
  /** The URL the node joined through (the enrollment listener); trust refreshes go here, pinned. */
  enrollmentUrl: string
  /** The Platform API: heartbeats, renewals and assignments. */
  platformUrl: string
  pin: PlatformPin
  /** The CA that signed the API's own certificate (serve --tls-cert), given at join as --platform-ca-file beside a pin. */
  apiCaPem?: string
  addresses: string[]
  port: number
  /** The Agent's own URL as the Platform dials it; empty when the node joined heartbeat-only (never dialled). */
  url: string
  joinedAt: string
  joinedWith: string
}

export interface TrustFile {
  keys: TrustKey[]
  updatedAt: string
}

export function readAgentConfig(dataDir: DataDir): AgentConfig | undefined {
  const text = dataDir.readSecretText(WORKER.config)
  if (text === undefined) return undefined
  try {
    const c = JSON.parse(text) as AgentConfig
    if (typeof c.nodeId !== 'string' || typeof c.enrollmentUrl !== 'string' || typeof c.platformUrl !== 'string' || !c.pin) throw new Error('fields missing')
    return c
  } catch (e) {
    throw new MusterError('not-configured', `${dataDir.path(WORKER.config)} is not a valid agent configuration (${(e as Error).message}); join again after removing ${dataDir.path(WORKER.dir)}.`)
  }
}

/** The joined node's configuration, or a refusal that says how to join. */
export function requireJoined(dataDir: DataDir): AgentConfig {
  const c = readAgentConfig(dataDir)
  if (!c) throw new MusterError('not-configured', `${dataDir.root} has not joined a Platform: run \`muster worker join --data-dir ${dataDir.root} …\` first.`)
  return c
}

export function writeAgentConfig(dataDir: DataDir, c: AgentConfig): void {
  dataDir.writeSecret(WORKER.config, `${JSON.stringify(c, null, 2)}\n`)
}

export function readCredential(dataDir: DataDir): string {
  const c = dataDir.readSecretText(WORKER.credential)?.trim()
  if (!c) throw new MusterError('not-configured', `${dataDir.path(WORKER.credential)} is missing: join again after removing ${dataDir.path(WORKER.dir)}.`)
  return c
}

export function writeCredential(dataDir: DataDir, credential: string): void {
  dataDir.writeSecret(WORKER.credential, `${credential}\n`)
}

export function readTrustFile(dataDir: DataDir): TrustFile | undefined {
  const text = dataDir.readSecretText(WORKER.trust)
  if (text === undefined) return undefined
  try {
    const t = JSON.parse(text) as TrustFile
    return Array.isArray(t.keys) ? t : undefined
  } catch {
    return undefined
  }
}

export function writeTrustFile(dataDir: DataDir, keys: TrustKey[], now: number): void {
  dataDir.writeSecret(WORKER.trust, `${JSON.stringify({ keys, updatedAt: new Date(now).toISOString() } satisfies TrustFile, null, 2)}\n`)
}

/** The generation inside `mnc_<name>.<generation>.<mac>`. */
export function credentialGeneration(credential: string): number | undefined {
  const m = /^mnc_[a-z0-9-]+\.(\d+)\./.exec(credential)
  return m ? Number(m[1]) : undefined
}
