// `muster worker join` (SPEC §7): one linear pipeline. The Platform is
// authenticated before a byte of the request is written, the agent key never
// leaves the machine, and a retry enrolls the same certificate.
import { readFileSync } from 'node:fs'
import { connect } from 'node:tls'
import { isIP } from 'node:net'
import { certNames, defaultAddresses, httpsUrl, isLoopback, normaliseAddresses } from '../addresses.ts'
import { authenticateByPin, PinMismatchError } from '../crypto/pin.ts'
import { certCovers, generateKeyAndCert } from '../crypto/x509.ts'
import { DataDir } from '../datadir.ts'
import { MusterError } from '../errors.ts'
import type { EnrollResult } from '../client/nodes.ts'
import { NODE_NAME } from '../http/validate.ts'
import { log } from '../log.ts'
import { VERSION } from '../version.ts'
import { applyAnchors } from './anchors.ts'
import { enrollmentClient } from './connect.ts'
import { readAgentConfig, WORKER, writeAgentConfig, writeCredential, writeTrustFile, type PlatformPin } from './files.ts'
import { checkTrustSet } from './trust.ts'

export const AGENT_CERT_DAYS = 3650
const MAX_RATE_LIMIT_TRIES = 5
const MAX_RETRY_AFTER_S = 60

export interface JoinOptions {
  dataDir: string
  platformUrl: string
  nodeId: string
  fingerprint?: string
  caFile?: string
  /** Addresses the Platform dials this node by; default first routable IPv4 and localhost. */
  addresses?: string[]
  port?: number
  /** Give no address: the Platform never dials this node (ready on heartbeats alone); the Agent listens on loopback only. */
  heartbeatOnly?: boolean
  /** Labels to carry (worker join --label), sent at enroll. */
  labels?: Record<string, string>
  /** Asked only once the Platform is authenticated. */
  readToken: () => Promise<string>
  now?: () => number
}

export interface JoinResult {
  nodeId: string
  agentId: string
  dataDir: string
  start: string
  /** True when this data directory had already joined this Platform under this name. */
  alreadyJoined: boolean
}

const shellQuote = (s: string) => (/^[A-Za-z0-9_./:=@-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`)
export const startCommand = (dataDir: string) => `muster agent --data-dir ${shellQuote(dataDir)}`

export async function joinPlatform(o: JoinOptions): Promise<JoinResult> {
  const now = o.now ?? Date.now
  const dataDir = new DataDir(o.dataDir)
  // 1. check the request: an https URL, a name, and how the Platform is authenticated
  const url = checkPlatformUrl(o.platformUrl)
  if (!NODE_NAME.test(o.nodeId) || o.nodeId === 'local') throw new MusterError('invalid-request', `--node-id ${o.nodeId}: expected a name like worker-1 (lowercase letters, digits, dashes; not "local")`)
  const pin = pinFrom(o)
  const port = o.port ?? 7381
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new MusterError('invalid-request', `--port ${port}: expected 1-65535`)
  const given = normaliseAddresses(o.addresses ?? [], '--address')
  if (o.heartbeatOnly && given.length > 0) throw new MusterError('invalid-request', 'Give --address or --heartbeat-only, not both.')
  const addresses = o.heartbeatOnly ? ['127.0.0.1'] : given.length > 0 ? given : defaultAddresses()

  // 2. one machine joins one Platform: a repeat is a no-op, another Platform is refused
  const existing = readAgentConfig(dataDir)
  if (existing) {
    if (existing.enrollmentUrl === url && existing.nodeId === o.nodeId) {
      return { nodeId: existing.nodeId, agentId: existing.agentId, dataDir: dataDir.root, start: startCommand(dataDir.root), alreadyJoined: true }
    }
    throw new MusterError(
      'conflict',
      `${dataDir.root} already joined ${existing.enrollmentUrl} as ${existing.nodeId}. A machine joins one Platform; to join another, stop its Agent and remove the worker directory on purpose: rm -rf ${shellQuote(dataDir.path(WORKER.dir))}`,
    )
  }

  // 3. the agent key and certificate: made once and kept, so a retry enrolls the same certificate
  const cert = await loadOrCreateAgentCert(dataDir, o.nodeId, addresses)

  // 4. authenticate the Platform on a bare TLS handshake, before any request byte
  await authenticatePlatform(url, pin)

  // 5. the join token, asked for only now; it is never written anywhere
  const token = (await o.readToken()).trim()
  if (!token) throw new MusterError('not-configured', 'The enrollment token is empty.')

  // 6. enroll, waiting out 429 Retry-After a bounded number of times
  //    (without an address when heartbeat-only: the Platform then never dials the node)
  const agentUrl = o.heartbeatOnly ? '' : httpsUrl(addresses[0]!, port)
  const labels = o.labels && Object.keys(o.labels).length > 0 ? { labels: o.labels } : {}
  const answer = await enrollWithRetry(() => enrollmentClient({ enrollmentUrl: url, pin }).nodes.enroll({ token, nodeId: o.nodeId, certPem: cert, ...(agentUrl ? { url: agentUrl } : {}), version: VERSION, ...labels }))

  // 7. check the answer before keeping anything
  if (answer.nodeId !== o.nodeId || typeof answer.credential !== 'string' || !answer.credential.startsWith(`mnc_${o.nodeId}.`)) {
    throw new MusterError('internal', 'The Platform answered the enrollment for another node or without a credential; nothing was written.')
  }
  let keys
  try {
    keys = checkTrustSet(answer.trustKeys, now())
  } catch (e) {
    throw new MusterError('internal', `The Platform's trust keys are unusable (${(e as Error).message}); nothing was written.`)
  }
  const platformUrl = checkApiUrl(answer.platformUrl, answer.insecureNodeTraffic === true, url)

  // 8. write credential, trust keys, then agent.json (its presence means "joined"), all 0600
  writeCredential(dataDir, answer.credential)
  writeTrustFile(dataDir, keys, now())
  // The answer came over the connection the pin authenticated: take the pins it names (the CA's).
  const { config } = applyAnchors({
    nodeId: answer.nodeId,
    agentId: answer.agentId,
    enrollmentUrl: url,
    platformUrl,
    pin,
    addresses,
    port,
    url: agentUrl,
    joinedAt: new Date(now()).toISOString(),
    joinedWith: VERSION,
  }, { caFingerprint: answer.caFingerprint, pins: answer.pins })
  writeAgentConfig(dataDir, config)
  log.info(`joined ${url} as ${answer.nodeId}; heartbeats go to ${platformUrl}`)
  return { nodeId: answer.nodeId, agentId: answer.agentId, dataDir: dataDir.root, start: startCommand(dataDir.root), alreadyJoined: false }
}

function checkPlatformUrl(raw: string): string {
  let u: URL
  try {
    u = new URL(raw)
  } catch {
    throw new MusterError('invalid-request', `--platform-url ${raw}: not a URL`)
  }
  if (u.protocol !== 'https:') {
    throw new MusterError(
      'invalid-request',
      `Refusing ${u.origin}: the join token, the node credential and the trust keys would cross an unauthenticated link. Use the Platform's https enrollment listener (\`muster nodes platform\` shows its URL and fingerprint).`,
    )
  }
  if (u.username || u.password || (u.pathname !== '/' && u.pathname !== '') || u.search) throw new MusterError('invalid-request', `--platform-url ${raw}: give only https://HOST[:PORT]`)
  return u.origin
}

function pinFrom(o: JoinOptions): PlatformPin {
  if (o.fingerprint && o.caFile) throw new MusterError('invalid-request', 'Give --platform-fingerprint or --platform-ca-file, not both.')
  if (o.fingerprint) {
    const fp = o.fingerprint.trim().toLowerCase()
    if (!/^sha256:[0-9a-f]{64}$/.test(fp)) throw new MusterError('invalid-request', '--platform-fingerprint: expected sha256: and 64 hex digits (from `muster nodes platform`)')
    return { fingerprint: fp }
  }
  if (o.caFile) {
    let caPem: string
    try {
      caPem = readFileSync(o.caFile, 'utf8')
    } catch (e) {
      throw new MusterError('not-configured', `Cannot read --platform-ca-file ${o.caFile}: ${(e as Error).message}`)
    }
    if (!caPem.includes('-----BEGIN CERTIFICATE-----')) throw new MusterError('invalid-request', `--platform-ca-file ${o.caFile}: no PEM certificate in it`)
    return { caPem }
  }
  return { system: true }
}

async function loadOrCreateAgentCert(dataDir: DataDir, nodeId: string, addresses: string[]): Promise<string> {
  const key = dataDir.readSecretText(WORKER.key)
  const cert = dataDir.exists(WORKER.cert) ? dataDir.readSecretText(WORKER.cert) : undefined
  if (key && cert) {
    if (certCovers(cert, certNames(addresses))) return cert
    log.warn(`the agent certificate does not cover ${addresses.join(', ')}: making a new one`)
  }
  const fresh = await generateKeyAndCert({ commonName: nodeId, ...certNames(addresses), days: AGENT_CERT_DAYS })
  dataDir.writeSecret(WORKER.key, fresh.keyPem)
  dataDir.writeSecret(WORKER.cert, fresh.certPem)
  return fresh.certPem
}

/** A TLS handshake that checks the pin or the CA; nothing is written on it. */
async function authenticatePlatform(url: string, pin: PlatformPin): Promise<void> {
  const u = new URL(url)
  const port = Number(u.port || 443)
  const host = u.hostname.replace(/^\[(.*)\]$/, '$1')
  try {
    if ('fingerprint' in pin) {
      // The chain must lead to a CA with the pinned key (or be the pinned certificate); nothing is written.
      try {
        await authenticateByPin(host, port, [pin.fingerprint])
      } catch (e) {
        if (!(e instanceof PinMismatchError)) throw e
        throw new MusterError('forbidden', `The Platform at ${url} presented certificate ${e.seen}, which neither is nor chains to the pinned ${pin.fingerprint}; nothing was sent.`)
      }
      return
    }
    await new Promise<void>((resolve, reject) => {
      const s = connect({ host, port, ...(isIP(host) ? {} : { servername: host }), ...('caPem' in pin ? { ca: pin.caPem } : {}), rejectUnauthorized: true })
      s.setTimeout(10_000, () => s.destroy(new Error('TLS handshake timed out')))
      s.once('error', reject)
      s.once('secureConnect', () => {
        s.destroy()
        resolve()
      })
    })
  } catch (e) {
    if (e instanceof MusterError) throw e
    const err = e as { code?: string; message?: string }
    const tlsProblem = /CERT|SELF_SIGNED|ALTNAME|certificate/i.test(`${err.code} ${err.message}`)
    if (tlsProblem) throw new MusterError('forbidden', `The Platform at ${url} could not be authenticated (${err.message}); nothing was sent.`)
    throw new MusterError('platform-unreachable', `Cannot reach the Platform at ${url}: ${err.code === 'ECONNREFUSED' ? 'connection refused' : err.message}`)
  }
}

async function enrollWithRetry(call: () => Promise<EnrollResult>): Promise<EnrollResult> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call()
    } catch (e) {
      if (!(e instanceof MusterError) || e.code !== 'rate-limited' || attempt >= MAX_RATE_LIMIT_TRIES) throw e
      const wait = Math.min(MAX_RETRY_AFTER_S, Math.max(1, Number(e.detail?.retryAfterSeconds) || 1))
      log.warn(`the Platform is busy (429); retrying in ${wait}s`)
      await Bun.sleep(wait * 1000)
    }
  }
}

/**
 * The Platform API URL from the answer (the join URL when it sent none):
 * https, or plain http only on this machine (loopback) or where the operator
 * allowed it on the Platform (--allow-insecure-node-traffic). SPEC §16.3.
 */
function checkApiUrl(raw: unknown, insecureAllowed: boolean, fallback: string): string {
  if (typeof raw !== 'string' || !raw) return fallback
  let u: URL
  try {
    u = new URL(raw)
  } catch {
    throw new MusterError('internal', `The Platform sent an unusable API URL (${raw}); nothing was written.`)
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new MusterError('internal', `The Platform sent an unusable API URL (${raw}); nothing was written.`)
  if (isLoopback(u.hostname) && !isLoopback(new URL(fallback).hostname)) {
    log.warn(`the Platform gives its API as ${u.origin}, a loopback address: unless this node runs on the Platform's machine, start serve with --host (or --public-url) so nodes can reach it`)
  }
  if (u.protocol === 'http:' && !isLoopback(u.hostname)) {
    if (!insecureAllowed) {
      throw new MusterError(
        'forbidden',
        `The Platform gives its API as ${u.origin}: plain http to another machine would carry this node's credential unencrypted, so nothing was written. Serve the Platform API over HTTPS (serve --host ADDR, or --tls-cert), then join again with the same token.`,
      )
    }
    log.warn(`the Platform API is plain http (${u.origin}), allowed by its operator (--allow-insecure-node-traffic): heartbeats and the node credential rely on the link being private.`)
  }
  return u.origin
}
