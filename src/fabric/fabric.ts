// The enrollment authority: join tokens, the node registry, node credentials,
// trust keys, the audit log and rate limits, behind one service.
// import-circle: a hub; its steps (enroll, renew, heartbeat, listing, join
// tokens, background) live in files of their own that take the Fabric.
import { readFileSync } from 'node:fs'
import type { Context } from '../context/context.ts'
import { safeEqual, sha256Hex } from '../crypto/tokens.ts'
import { MusterError } from '../errors.ts'
import type { PlatformOptions } from '../context/options.ts'
import type { Db, Store } from '../store/db.ts'
import { auditVersion, insertAudit, listAudit } from '../store/enroll-audit.ts'
import { revokePendingEnrollments } from '../store/join-tokens.ts'
import { deleteNodeWithTombstone, insertNode, isTombstoned, updateNodeFields } from '../store/nodes.ts'
import { tokenDigester, type TokenDigest } from '../crypto/token-digest.ts'
import { NodeCredentials, parseCredential, PREVIOUS_GENERATION_GRACE_MS, type ParsedCredential } from './credentials.ts'
import { mintJoinToken } from './join-tokens.ts'
import { RateLimiter } from './rate-limit.ts'
import { KeyedLimit, RENEW_LIMIT } from './renew.ts'
import { advanceGeneration } from '../store/node-generation.ts'
import { DEFAULT_LIMITS, type FabricOptions, type FabricPlatform, type NodeInUseCheck } from './types.ts'
import { Registry, type NodeEntry } from './registry.ts'
import { listNodes, type NodeQuery } from './listing.ts'
import { DEFAULT_LIMIT } from '../wire/paging.ts'
import { acceptHeartbeat } from './heartbeat.ts'
import { TrustKeys } from './trust-keys.ts'
import { startFabricLoops, trustSchedule } from './background.ts'
import { caWarning } from '../pki/platform-ca.ts'
import { NODE_NAME } from '../wire/validate.ts'
import { fields, log } from '../log.ts'
import { bearerToken } from '../auth/auth.ts'
import { assertPrivate } from '../datadir.ts'
import type { Labels } from '../wire/labels.ts'
import { DeclaredNodes, type NodesFileReload } from './nodes-file.ts'
import type { IdentityJoins } from './identity-join.ts'
import type { EnrollAnswer, EnrollmentEndpoint, EnrollmentToken, HeartbeatAnswer, HeartbeatBody, NodeAnchors, NodeDrained, NodeFacingPlatform, NodePage, NodeRemoved, NodeRevoked, NodeRotated, NodeView, PlatformInfo, PlatformView, TrustAnswer } from '../wire/nodes.ts'

export * from './types.ts'

export class Fabric {
  readonly db: Store
  readonly now: () => number
  readonly registry: Registry
  readonly trust: TrustKeys
  readonly credentials: NodeCredentials
  /** Digests of join-token secrets, keyed under master.key (src/crypto/token-digest.ts). */
  readonly digest: TokenDigest
  readonly limits: { enroll: RateLimiter; heartbeat: RateLimiter; trust: RateLimiter }
  /** Renewals per node (docs/security.md). */
  readonly renewLimit: KeyedLimit
  readonly inUseChecks: NodeInUseCheck[] = []
  /** Called after an accepted heartbeat that changed liveness, capacity or replica status (workloads listen here). */
  readonly heartbeatListeners: ((node: NodeEntry) => void)[] = []
  /** The node's assignment revision, carried by the heartbeat answer (the projects service sets this). */
  assignmentRevision: (node: string) => number | undefined = () => undefined
  /** Whether a log request waits for the node (the log relay, src/projects/logs.ts, sets this). */
  logRequestsFor: (node: string) => boolean = () => false
  /** Whether a rollout waits for the node (the rollouts service, src/rollouts/, sets this). */
  updateWanted: (node: string) => boolean = () => false
  /** Called when an operator changes a node (drain, revoke, remove, rebind); the change's answer waits for them. */
  readonly nodeChangeListeners: ((name: string) => void | Promise<void>)[] = []
  remoteDispatch: boolean
  enrollment: EnrollmentEndpoint | null = null
  /** Cloud identity joins (set by the cloud area when it starts; src/cloud/identity). */
  identity: IdentityJoins | null = null
  /** The live Platforms sharing the store, as nodes reach them (set once the Platform listens). */
  platforms: () => NodeFacingPlatform[] = () => []
  /** The live Platforms for operators, with the loops each runs. */
  platformsView: () => Promise<PlatformView[]> = async () => []
  /** SHA-256 of the legacy shared fleet token, compared in constant time. */
  private readonly fleetDigest: string | undefined

  private constructor(
    readonly ctx: Context,
    readonly options: FabricOptions,
    registry: Registry,
    private readonly platform: FabricPlatform,
    /** Nodes the operator declared in serve --nodes-file (reserved names; their fields win). */
    readonly declared: DeclaredNodes,
  ) {
    this.db = ctx.store
    this.now = ctx.now
    this.remoteDispatch = options.remoteDispatch
    this.fleetDigest = options.fleetToken ? sha256Hex(options.fleetToken) : undefined
    this.registry = registry
    this.trust = new TrustKeys(ctx.vault, this.now, trustSchedule(ctx))
    this.credentials = new NodeCredentials(ctx.masterKey)
    this.digest = tokenDigester(ctx.masterKey)
    this.limits = {
      enroll: new RateLimiter('enroll', options.enrollLimit, this.now),
      heartbeat: new RateLimiter('heartbeat', options.heartbeatLimit, this.now),
      trust: new RateLimiter('trust', options.trustLimit, this.now),
    }
    this.renewLimit = new KeyedLimit(RENEW_LIMIT, this.now)
    this.registry.startFlushing()
    ctx.onClose(() => this.registry.stop())
    // A node changed on another Platform sharing the store: reload it from there.
    ctx.changes.on('node', (name, local) => {
      if (!local) void this.registry.refresh(name).then(() => this.changed(name, false))
    })
    this.registry.onRemoteChange = (name) => void this.changed(name, false)
    this.registry.onRemoteHeartbeat = (n) => {
      for (const l of this.heartbeatListeners) l(n)
    }
    startFabricLoops(ctx, this)
  }

  static async open(ctx: Context, o: PlatformOptions, platform: FabricPlatform): Promise<Fabric> {
    let fleetToken: string | undefined
    if (o.fleetTokenFile) {
      assertPrivate(o.fleetTokenFile)
      fleetToken = readFileSync(o.fleetTokenFile, 'utf8').trim()
      if (fleetToken.length < 16) throw new MusterError('not-configured', `${o.fleetTokenFile}: the fleet token must be at least 16 characters.`)
    }
    const declared = DeclaredNodes.open(o.nodesFile)
    const staleAfterMs = o.nodeStaleAfterMs ?? 45_000
    const options: FabricOptions = {
      remoteDispatch: Boolean(o.remoteDispatch || o.enrollmentPort !== undefined),
      nodeAuth: o.nodeAuth ?? 'both',
      fleetToken,
      staleAfterMs,
      enrollLimit: o.enrollLimit ?? DEFAULT_LIMITS.enroll,
      heartbeatLimit: o.heartbeatLimit ?? DEFAULT_LIMITS.heartbeat,
      trustLimit: DEFAULT_LIMITS.trust,
    }
    return new Fabric(ctx, options, await Registry.load(ctx.store, ctx.now, staleAfterMs, ctx.changes.origin), platform, declared)
  }

  /** Reads the nodes file again (SIGHUP): checked whole first, a bad one is logged and the running set kept; changes apply at once. */
  reloadNodesFile(): Promise<NodesFileReload> {
    return this.declared.reloadFile(async (name) => {
      if (this.registry.get(name)) await this.changed(name, false)
    })
  }

  /** What placement and listings use: the nodes file's labels and drain win over the node's own. */
  nodeSettings(n: NodeEntry): { labels: Labels; drained: boolean; declared: boolean } {
    const d = this.declared.get(n.name)
    return { labels: d?.labels ?? n.labels, drained: d?.drained ?? n.drained, declared: d !== undefined }
  }

  requireNodesEnabled(): void {
    if (!this.remoteDispatch) {
      throw new MusterError('nodes-disabled', 'Nodes are disabled on this Platform: start it with --remote-dispatch or --enrollment-port.')
    }
  }

  requireEnrollment(): void {
    if (this.options.nodeAuth === 'legacy') throw new MusterError('not-found', 'No such route.')
    this.requireNodesEnabled()
  }

  /** Appends to the audit log (in `db`, when the entry belongs to a transaction); a name only when it has name shape, never a secret. Pruning is a leased loop (background.ts). */
  async audit(outcome: string, reason: string | null, nodeId: unknown, version: unknown, db: Db = this.db): Promise<void> {
    const name = typeof nodeId === 'string' && NODE_NAME.test(nodeId) ? nodeId : null
    await insertAudit(db, { at: this.now(), outcome, reason, node_id: name, version: auditVersion(version) })
  }

  /** The newest 500 entries of the last 30 days, whatever pruning has done yet. */
  async auditEntries() {
    return (await listAudit(this.db, this.now())).map((e) => ({
      id: e.id,
      at: new Date(e.at).toISOString(),
      outcome: e.outcome,
      reason: e.reason,
      nodeId: e.node_id,
      version: e.version,
    }))
  }

  async enrollAnswer(nodeId: string, certSha256: string, generation: number): Promise<EnrollAnswer> {
    return {
      nodeId,
      agentId: `agent-${nodeId}`,
      credential: this.credentials.issue(nodeId, certSha256, generation),
      trustKeys: this.trust.published(),
      ...this.nodeAnchors(),
      platforms: this.platforms(),
    }
  }

  async trustKeys(): Promise<TrustAnswer> {
    this.requireNodesEnabled()
    const release = this.limits.trust.admit()
    try {
      return { trustKeys: this.trust.published(), ...this.nodeAnchors() }
    } finally {
      release()
    }
  }

  /**
   * How a node authenticates this Platform from now on (enroll and trust
   * answers, which arrive over a connection its current pin authenticated):
   * the CA pin to keep, every pin to accept (a prepared CA replacement, the
   * listener's old certificate while it is served) and the API URL.
   */
  nodeAnchors(): NodeAnchors {
    return this.platform.nodeAnchors()
  }

  // ---- node credentials --------------------------------------------------

  /** The node a credential belongs to, or a refusal; checks generation and revocation. */
  authenticateNode(headers: Headers): Promise<NodeEntry> {
    return this.nodeForCredential(bearerToken(headers))
  }

  /** As authenticateNode, with the generation of the credential presented (renewal needs the current one). */
  async authenticateNodeCredential(headers: Headers): Promise<{ node: NodeEntry; generation: number }> {
    const bearer = bearerToken(headers)
    const node = await this.nodeForCredential(bearer)
    return { node, generation: parseCredential(bearer!)!.generation }
  }

  private credentialMatches(c: ParsedCredential, n: NodeEntry | undefined): boolean {
    return (
      n !== undefined &&
      n.certSha256 !== null &&
      (c.generation === n.generation || (c.generation === n.generation - 1 && this.now() < n.previousValidUntil)) &&
      this.credentials.verify(c, n.certSha256)
    )
  }

  private async nodeForCredential(bearer: string | undefined): Promise<NodeEntry> {
    const c = bearer ? parseCredential(bearer) : null
    if (!c) throw new MusterError('unauthorized', 'A node credential (Authorization: Bearer mnc_…) is required.')
    let n = this.registry.get(c.name)
    // Not known here, or a generation this Platform has not seen: another Platform on the
    // store may have enrolled or rotated it a moment ago. Look once in the store.
    if (!this.credentialMatches(c, n) && (!n || c.generation > n.generation)) n = await this.registry.refresh(c.name)
    if (!n || !this.credentialMatches(c, n)) throw new MusterError('unauthorized', 'Node credential not valid.')
    if (n.revokedAt !== null) throw new MusterError('node-revoked', `Node ${n.name} has been revoked.`)
    return n
  }

  /**
   * Issues the generation after `from` (default: the stored one); the previous keeps
   * working one hour. A compare-and-set in the store: when the node moved on meanwhile
   * (here or on another Platform), nothing is issued.
   */
  async nextGeneration(name: string, from?: number): Promise<{ generation: number; credential: string }> {
    const n = from === undefined ? await this.registry.refresh(name) : this.registry.get(name)
    if (!n || n.certSha256 === null) throw new MusterError('not-found', `No enrolled node ${name}.`)
    const generation = await advanceGeneration(this.db, name, from ?? n.generation, this.now() + PREVIOUS_GENERATION_GRACE_MS)
    await this.registry.refresh(name)
    if (generation === null) throw new MusterError('conflict', `The credential of ${name} changed meanwhile; nothing was issued. Try again.`)
    await this.ctx.changes.publish('node', name)
    return { generation, credential: this.credentials.issue(name, n.certSha256, generation) }
  }

  // ---- heartbeats ----------------------------------------------------------

  async heartbeat(headers: Headers, body: HeartbeatBody): Promise<HeartbeatAnswer> {
    const release = this.limits.heartbeat.admit()
    try {
      return acceptHeartbeat(this, await this.nodeForHeartbeat(headers, body.nodeId), body)
    } finally {
      release()
    }
  }

  /** The general path (the dedicated route tries src/fabric/heartbeat.ts first): every way to authenticate a heartbeat. */
  async nodeForHeartbeat(headers: Headers, nodeId: string | undefined): Promise<NodeEntry> {
    const bearer = bearerToken(headers) ?? ''
    if (bearer.startsWith('mnc_')) {
      if (this.options.nodeAuth === 'legacy') throw new MusterError('forbidden', 'This Platform runs with --node-auth legacy: node credentials are not accepted.')
      const n = await this.nodeForCredential(bearer)
      if (nodeId && nodeId !== n.name) throw new MusterError('forbidden', 'A node credential registers only its own node.')
      return n
    }
    if (!this.fleetDigest || !bearer || !safeEqual(sha256Hex(bearer), this.fleetDigest)) throw new MusterError('unauthorized', 'A node credential (Authorization: Bearer mnc_…) is required.')
    if (this.options.nodeAuth === 'enrolled') throw new MusterError('forbidden', 'The shared fleet token is no longer accepted (--node-auth enrolled): enroll this node.')
    if (!nodeId || !NODE_NAME.test(nodeId) || nodeId === 'local') throw new MusterError('invalid-request', 'Invalid nodeId: the shared fleet token needs a node name in the body.', { field: 'nodeId' })
    if (this.declared.has(nodeId)) throw new MusterError('forbidden', `Node ${nodeId} is declared in the nodes file: it joins only with an enrollment issued for it (muster nodes enroll-token ${nodeId}), never the shared fleet token.`)
    let n = this.registry.get(nodeId) ?? (await this.registry.refresh(nodeId))
    if (n && n.auth !== 'legacy') throw new MusterError('forbidden', `Node ${nodeId} is enrolled; it must use its own credential.`)
    if (!n) {
      // A removed name stays reserved for the shared token too: its next heartbeat must not bring it back.
      if (await isTombstoned(this.db, nodeId)) {
        const back = this.options.nodeAuth === 'legacy' ? 'give this machine another name' : `to reuse it on purpose: muster nodes enroll-token ${nodeId} --replace`
        throw new MusterError('forbidden', `Node ${nodeId} was removed and its name stays reserved; ${back}.`)
      }
      // Two first heartbeats may race (here or on another Platform): the primary key lets one insert win.
      if (await insertNode(this.db, { name: nodeId, auth: 'legacy', cert_sha256: null, cert_pem: null, url: null, token_id: null, version: null, enrolled_at: this.now() })) {
        log.info(`legacy node ${nodeId} registered with the shared fleet token`, fields({ node: nodeId }))
        await this.ctx.changes.publish('node', nodeId)
      }
      n = await this.registry.refresh(nodeId)
      if (!n) throw new MusterError('conflict', `Node ${nodeId} was removed while it registered; try again.`)
      if (n.auth !== 'legacy') throw new MusterError('forbidden', `Node ${nodeId} is enrolled; it must use its own credential.`)
    }
    if (n.revokedAt !== null) throw new MusterError('node-revoked', `Node ${nodeId} has been revoked.`)
    return n
  }

  // ---- operator actions on nodes -----------------------------------------

  private requireNode(name: string): NodeEntry {
    if (name === 'local') throw new MusterError('conflict', 'The local node is the Platform itself and cannot be changed this way.')
    const n = this.registry.get(name)
    if (!n) throw new MusterError('not-found', `No node named ${name}.`)
    return n
  }

  async revoke(name: string): Promise<NodeRevoked> {
    const n = this.requireNode(name)
    // A node revoked already keeps the time it was revoked.
    await this.registry.update(name, { revoked_at: n.revokedAt ?? this.now() })
    await this.changed(name)
    this.ctx.metrics.revocations.inc()
    log.info(`node ${name} revoked`, fields({ node: name }))
    return { nodeId: name, state: 'revoked' }
  }

  async rotate(name: string): Promise<NodeRotated> {
    const n = this.requireNode(name)
    if (n.certSha256 === null) throw new MusterError('conflict', `${name} has no certificate to rotate a credential for.`)
    const { generation } = await this.nextGeneration(name)
    return { nodeId: name, generation, previousValidUntil: new Date(this.now() + PREVIOUS_GENERATION_GRACE_MS).toISOString() }
  }

  async rebind(name: string, ttlMinutes = 60): Promise<EnrollmentToken> {
    const n = this.requireNode(name)
    const now = this.now()
    const expiresAt = now + ttlMinutes * 60_000
    const token = await this.db.tx(async (db) => {
      await revokePendingEnrollments(db, name, now)
      // The old credential dies now: no certificate, next generation, no grace.
      await updateNodeFields(db, name, { cert_sha256: null, cert_pem: null, url: null, generation: n.generation + 1, previous_valid_until: 0, revoked_at: null, auth: 'enrolled' })
      // a node that joined by its cloud identity: its machine may join so once more
      const cloudIdentity = this.identity ? await this.identity.rebound(db, name, now, expiresAt) : false
      const minted = await mintJoinToken(db, this.digest, { kind: 'enrollment', node_id: name, name_pattern: null, label: null, max_uses: 1, created_at: now, expires_at: expiresAt })
      return { ...minted, cloudIdentity }
    })
    await this.registry.refresh(name)
    await this.changed(name)
    log.info(`node ${name} rebound: its old credential no longer works${token.cloudIdentity ? '; its machine may join again by its cloud identity' : ''}`, fields({ node: name }))
    return { nodeId: name, token: token.token, expiresAt: new Date(expiresAt).toISOString(), ...(token.cloudIdentity ? { cloudIdentity: true } : {}) }
  }

  async drain(name: string, drained = true): Promise<NodeDrained> {
    this.requireNode(name)
    const declared = this.declared.get(name)?.drained
    if (declared !== undefined && declared !== drained) throw new MusterError('conflict', `Node ${name} is declared ${declared ? 'drained' : 'not drained'} in the nodes file ${this.declared.file}; change it there and reload the Platform.`)
    await this.registry.update(name, { drained: drained ? 1 : 0 })
    await this.changed(name)
    return { nodeId: name, drained }
  }

  /** Removes a node; a healthy one only with `force` (a working machine is stopped first: revoke or drain). */
  async remove(name: string, force = false): Promise<NodeRemoved> {
    const n = this.requireNode(name)
    for (const check of this.inUseChecks) {
      const why = check(name)
      if (why) throw new MusterError('node-in-use', `Node ${name} is in use: ${why}. Move or remove that first.`)
    }
    if (!force && this.registry.healthy(n)) {
      const seen = Math.max(0, Math.round((this.now() - (n.lastSeenAt ?? 0)) / 1000))
      throw new MusterError('node-healthy', `Node ${name} is healthy (last heartbeat ${seen}s ago). Stop it first: \`muster nodes revoke ${name}\` ends its credential at once, \`muster nodes drain ${name}\` moves its work away; or remove it anyway with --force (API: ?force=true).`)
    }
    await this.registry.flush()
    await deleteNodeWithTombstone(this.db, name, this.now())
    this.registry.reload(null, name)
    await this.changed(name)
    return { nodeId: name, removed: true }
  }

  /** Tells this Platform's listeners, and (when `publish`) the other Platforms on the store. */
  async changed(name: string, publish = true): Promise<void> {
    await Promise.all(this.nodeChangeListeners.map(async (l) => l(name)))
    if (publish) await this.ctx.changes.publish('node', name)
  }

  // ---- listing -------------------------------------------------------------

  /** One page of the node listing (src/fabric/listing.ts). */
  listNodes(query: NodeQuery = { limit: DEFAULT_LIMIT }): Promise<NodePage> {
    return listNodes(this, query)
  }

  /** The Platform's own node when it runs (serve --local-node): the Platform sets its view here. */
  localNode: (() => NodeView) | null = null

  /** `nodes platform`: where nodes enroll, the pins, the CA's lifetime and warnings (a CA with a year or less left). */
  async platformInfo(): Promise<PlatformInfo> {
    const pki = this.platform.pki
    const about = (ca: { pin: string; notAfter: Date }) => ({ fingerprint: ca.pin, notAfter: ca.notAfter.toISOString() })
    const warning = caWarning(pki.ca, this.now())
    return {
      remoteDispatch: this.remoteDispatch,
      enrollment: this.enrollment,
      ca: { ...about(pki.ca), ...(pki.next ? { next: about(pki.next) } : {}) },
      warnings: warning ? [warning] : [],
      platforms: await this.platformsView(),
    }
  }
}
