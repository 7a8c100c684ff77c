// `muster worker join` (docs/nodes.md): one linear pipeline. The Platform is
// authenticated before a byte of the request is written, the agent key never
// leaves the machine, and a retry enrolls the same certificate.
import { readFileSync, rmSync } from 'node:fs'
import { certNames, defaultAddresses, httpsUrl, isLoopback, normaliseAddresses } from '../addresses.ts'
import { identityProofId, signEnrollProof } from '../crypto/enroll-proof.ts'
import { certCovers, generateKeyAndCert } from '../crypto/x509.ts'
import { DataDir } from '../datadir.ts'
import { MusterError } from '../errors.ts'
import type { EnrollResult } from '../client/nodes.ts'
import { NODE_NAME } from '../wire/validate.ts'
import { log } from '../log.ts'
import { VERSION } from '../version.ts'
import { applyAnchors } from './anchors.ts'
import { awsIdentityDocument, azureAttestedDocument, gcpIdentityToken, serverId, type CloudIdentityName, type SignedIdentity } from './cloud-metadata.ts'
import { enrollmentClient } from './connect.ts'
import { readAgentConfig, WORKER, writeAgentConfig, writeCredential, writeTrustFile, type AgentConfig, type PlatformPin } from './files.ts'
import { authenticatePlatform, checkPlatformApi, checkTokenShape } from './join-checks.ts'
import { askStandingOf, isDead, type Standing } from './standing.ts'
import { PLATFORMS_FILE } from './platform-choice.ts'
import { checkTrustSet } from '../signed/keys.ts'
import { rememberPlatforms } from './platform-choice.ts'
import { learnReleaseKeys } from './update/release-keys.ts'

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
  /**
   * Ask the metadata service of this cloud (docs/cloud.md): at aws, gcp and azure its signed identity
   * replaces the token; at hetzner and digitalocean the server id the first-boot token is bound to.
   */
  cloudIdentity?: CloudIdentityName
  /** Asked only once the Platform is authenticated (and not at all for a signed cloud identity). */
  readToken: () => Promise<string>
  now?: () => number
}

export interface JoinResult {
  nodeId: string
  agentId: string
  dataDir: string
  start: string
  /** True when this data directory had already joined this Platform under this name (and its credential works). */
  alreadyJoined: boolean
  /** Set when the directory had joined, but its credential was dead: it enrolled again with the new token. */
  replaced?: Exclude<Standing, 'valid'>
}

const shellQuote = (s: string) => (/^[A-Za-z0-9_./:=@-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`)
export const startCommand = (dataDir: string) => `muster agent --data-dir ${shellQuote(dataDir)}`

export async function joinPlatform(o: JoinOptions): Promise<JoinResult> {
  const now = o.now ?? Date.now
  const dataDir = new DataDir(o.dataDir)
  // 1. check the request: an https URL, a name, and how the Platform is authenticated
  const url = checkPlatformUrl(o.platformUrl)
  if (!NODE_NAME.test(o.nodeId) || o.nodeId === 'local') throw new MusterError('invalid-request', `--node-id ${o.nodeId}: expected a name like worker-1 (lowercase letters, digits, dashes; not "local")`)
  const { pin, apiCaPem } = pinFrom(o)
  const port = o.port ?? 7381
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new MusterError('invalid-request', `--port ${port}: expected 1-65535`)
  const given = normaliseAddresses(o.addresses ?? [], '--address')
  if (o.heartbeatOnly && given.length > 0) throw new MusterError('invalid-request', 'Give --address or --heartbeat-only, not both.')
  const addresses = o.heartbeatOnly ? ['127.0.0.1'] : given.length > 0 ? given : defaultAddresses()

  // 2. one machine joins one Platform: a repeat is a no-op while its credential works, enrolls again
  //    when the Platform holds it dead (revoked, removed, rebound); another Platform is refused
  const existing = readAgentConfig(dataDir)
  let replaced: Exclude<Standing, 'valid'> | undefined
  if (existing) {
    if (existing.enrollmentUrl !== url || existing.nodeId !== o.nodeId) {
      throw new MusterError(
        'conflict',
        `${dataDir.root} already joined ${existing.enrollmentUrl} as ${existing.nodeId}. A machine joins one Platform; to join another, stop its Agent and remove the worker directory on purpose: rm -rf ${shellQuote(dataDir.path(WORKER.dir))}`,
      )
    }
    replaced = await deadCredential(dataDir, existing)
    if (!replaced) return { nodeId: existing.nodeId, agentId: existing.agentId, dataDir: dataDir.root, start: startCommand(dataDir.root), alreadyJoined: true }
    log.info(`the credential in ${dataDir.path(WORKER.dir)} is dead (${replaced}): enrolling again with a new agent key`)
    retireJoin(dataDir)
  }

  // 3. the agent key and certificate: made once and kept, so a retry enrolls the same certificate
  const cert = await loadOrCreateAgentCert(dataDir, o.nodeId, addresses)

  // 4. authenticate the Platform on a bare TLS handshake, before any request byte; then the API the
  //    Agent will heartbeat to, reached and authenticated as the Agent will (a --tls-cert needs its CA)
  await authenticatePlatform(url, pin)
  await checkPlatformApi(url, pin, apiCaPem)

  // 5. what admits this machine, asked for only now: the cloud's signed identity from its metadata service
  //    (nothing secret is on the machine), or the join token, checked for shape here and never written anywhere
  const client = enrollmentClient({ enrollmentUrl: url, pin })
  const signed = o.cloudIdentity === 'aws' || o.cloudIdentity === 'gcp' || o.cloudIdentity === 'azure' ? o.cloudIdentity : null
  let admit: { token: string; machineId?: string } | { identity: { provider: SignedIdentity; document: string } }
  if (signed) admit = { identity: { provider: signed, document: await identityDocument(signed, url, o.nodeId, client) } }
  else {
    const token = (await o.readToken()).trim()
    if (!token) throw new MusterError('not-configured', 'The enrollment token is empty.')
    checkTokenShape(token)
    admit = o.cloudIdentity === 'hetzner' || o.cloudIdentity === 'digitalocean' ? { token, machineId: await serverId(o.cloudIdentity) } : { token }
  }

  // 6. enroll, waiting out 429 Retry-After a bounded number of times
  //    (without an address when heartbeat-only: the Platform then never dials the node)
  const agentUrl = o.heartbeatOnly ? '' : httpsUrl(addresses[0]!, port)
  const labels = o.labels && Object.keys(o.labels).length > 0 ? { labels: o.labels } : {}
  // Each attempt proves possession of the agent key afresh (docs/security.md), over the token or the cloud it names.
  const keyPem = dataDir.readSecretText(WORKER.key)!
  const proofOver = 'identity' in admit ? { tokenId: identityProofId(admit.identity.provider) } : { token: admit.token }
  const answer = await enrollWithRetry(url, () =>
    client.nodes.enroll({
      ...admit,
      nodeId: o.nodeId,
      certPem: cert,
      ...(agentUrl ? { url: agentUrl } : {}),
      version: VERSION,
      ...labels,
      ...signEnrollProof({ keyPem, certPem: cert, nodeId: o.nodeId, ...proofOver, nowMs: now() }),
    }),
  )

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
  learnReleaseKeys(dataDir, answer.releaseKeys)
  // The answer came over the connection the pin authenticated: take the pins it names (the CA's).
  const { config } = applyAnchors({
    nodeId: answer.nodeId,
    agentId: answer.agentId,
    enrollmentUrl: url,
    platformUrl,
    pin,
    ...(apiCaPem ? { apiCaPem } : {}),
    addresses,
    port,
    url: agentUrl,
    joinedAt: new Date(now()).toISOString(),
    joinedWith: VERSION,
  }, { caFingerprint: answer.caFingerprint, pins: answer.pins })
  rememberPlatforms(dataDir, config, answer.platforms, now())
  writeAgentConfig(dataDir, config)
  log.info(`joined ${url} as ${answer.nodeId}; heartbeats go to ${platformUrl}`)
  return { nodeId: answer.nodeId, agentId: answer.agentId, dataDir: dataDir.root, start: startCommand(dataDir.root), alreadyJoined: false, ...(replaced ? { replaced } : {}) }
}

/** The signed identity of this machine from its metadata service (Azure's carries a nonce the Platform gives first). */
async function identityDocument(cloud: SignedIdentity, url: string, nodeId: string, client: ReturnType<typeof enrollmentClient>): Promise<string> {
  if (cloud === 'aws') return awsIdentityDocument()
  if (cloud === 'gcp') return gcpIdentityToken(url)
  const { nonce } = await client.nodes.identityChallenge(nodeId)
  return azureAttestedDocument(nonce)
}

/** The standing of the credential this directory holds, when the Platform holds it dead; undefined when it works or cannot be told. */
async function deadCredential(dataDir: DataDir, existing: AgentConfig): Promise<Exclude<Standing, 'valid'> | undefined> {
  try {
    const r = await askStandingOf(dataDir, existing)
    return isDead(r.standing) ? r.standing : undefined
  } catch (e) {
    log.warn(`could not ask the Platform whether this node's credential still works (${(e as Error).message}); keeping the join`)
    return undefined
  }
}

/**
 * Takes the dead join apart before the new one: no configuration (so a retry
 * after a failure is an ordinary join), no credential, and a new agent key
 * and certificate (the old ones belong to a node an operator ended).
 */
function retireJoin(dataDir: DataDir): void {
  for (const f of [WORKER.config, WORKER.credential, PLATFORMS_FILE, WORKER.key, WORKER.cert]) rmSync(dataDir.path(f), { force: true })
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

/**
 * How the Platform is authenticated: a pin, a CA file, or the system roots.
 * A pin and a CA file together: the pin for the listener (and an API under
 * the Platform CA), the CA file for an API with its own --tls-cert.
 */
function pinFrom(o: JoinOptions): { pin: PlatformPin; apiCaPem?: string } {
  const caPem = o.caFile ? readCaFile(o.caFile) : undefined
  if (o.fingerprint) {
    const fp = o.fingerprint.trim().toLowerCase()
    if (!/^sha256:[0-9a-f]{64}$/.test(fp)) throw new MusterError('invalid-request', '--platform-fingerprint: expected sha256: and 64 hex digits (from `muster nodes platform`)')
    return { pin: { fingerprint: fp }, ...(caPem ? { apiCaPem: caPem } : {}) }
  }
  return { pin: caPem ? { caPem } : { system: true } }
}

function readCaFile(caFile: string): string {
  let caPem: string
  try {
    caPem = readFileSync(caFile, 'utf8')
  } catch (e) {
    throw new MusterError('not-configured', `Cannot read --platform-ca-file ${caFile}: ${(e as Error).message}`)
  }
  if (!caPem.includes('-----BEGIN CERTIFICATE-----')) throw new MusterError('invalid-request', `--platform-ca-file ${caFile}: no PEM certificate in it`)
  return caPem
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

async function enrollWithRetry(url: string, call: () => Promise<EnrollResult>): Promise<EnrollResult> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call()
    } catch (e) {
      // The wire carries one generic refusal (docs/nodes.md); the reason is the operator's to read.
      if (e instanceof MusterError && e.code === 'enrollment-refused') {
        throw new MusterError('enrollment-refused', `The Platform at ${url} refused the enrollment. The operator sees the reason in \`muster nodes audit\` (a token expired, used up, revoked, or for another name; for a cloud identity, \`identity: …\`); ask them for a new token if it is one of those.`)
      }
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
 * allowed it on the Platform (--allow-insecure-node-traffic). docs/security.md.
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
