// The log relay on the Platform: `muster projects logs`
// reads a replica's output on its node without dialling the node. The
// Platform asked stores a request; the node learns from a heartbeat answer
// (`logs: true`) that one waits, fetches it over its own authenticated
// connection (signed with the trust key), and uploads the tail — and, when
// following, what the replica writes next — as sealed chunks in the store.
// The Platform that holds the operator's request reads them from there, told
// at once by a change notice (LISTEN/NOTIFY between Platforms) and by polling
// the store every second meanwhile, so any Platform relays for any node.
//
// Reading logs needs server.projects.manage: output often carries what the
// env holds, and env values are shown only to that permission (docs/security.md).
import { deriveKey, randomId } from '../crypto/tokens.ts'
import { sealBytes, unsealBytes } from '../crypto/seal.ts'
import { MusterError } from '../errors.ts'
import type { Context } from '../context/context.ts'
import type { Fabric } from '../fabric/fabric.ts'
import type { NodeEntry } from '../fabric/registry.ts'
import { log } from '../log.ts'
import { countLogRequests, deleteLogChunksUpTo, deleteLogRequest, insertLogChunk, insertLogRequest, logChunksAfter, logRequest, nodesWithLogRequests, pickLogRequests, renewLogRequest, sweepLogRelay, type LogChunkCaps } from '../store/log-relay.ts'
import { LogFollower, MAX_LINE_CHARS, MAX_TAIL_LINES, readTail } from '../replicas/log-files.ts'
import { LOG_REQUEST } from '../signed/documents.ts'
import { signDocument } from '../signed/signed.ts'
import type { LogChunk, LogRequestPayload, ProjectLogs, SignedLogRequest } from '../wire/projects.ts'
import type { Projects } from './service.ts'
import { nudgeNode } from './log-nudge.ts'

/** The Platform's own node reads its replicas' logs in place. */
export interface LocalLogs {
  logFile(project: string, replica: number): string
  maxLogBytes: number
}

export const DEFAULT_TAIL = 100
/** A tail waits this long for the node (it picks requests up with its next heartbeat). */
const WAIT_MS = 30_000
/** A follow nobody polled for this long ends. */
const FOLLOW_TTL_MS = 60_000
/** A follow poll waits this long for new lines. */
const POLL_WAIT_MS = 20_000
/** A follow whose node sent nothing (not even a keep-alive) for this long has ended. */
const NODE_SILENT_MS = 45_000
const MAX_OPEN_PER_NODE = 32
/**
 * What the store keeps unread for a node, however much it sends (a compromised node uploading 1 MiB chunks at
 * any seq, in a loop): per request and per project. Past them an upload is refused (429) until the reader has
 * caught up; the Agent keeps its newest lines meanwhile and sends them then.
 */
export const LOG_CHUNK_CAPS: LogChunkCaps = { bytesPerRequest: 8 << 20, chunksPerRequest: 1000, bytesPerProject: 32 << 20 }
const SEAL_PURPOSE = 'muster log relay v1'
/** What a chunk is sealed over: its request and its place in it, so a chunk copied to another request or seq does not open. */
const chunkAad = (id: string, seq: number) => `${SEAL_PURPOSE}:${id}:${seq}`

const CURSOR = /^([a-z2-7]{24})\.(\d{1,9})$/

export class LogRelay {
  private readonly key: Uint8Array
  /** Nodes with a request waiting to be picked up (the heartbeat answer says so). */
  private waiting = new Set<string>()
  private readonly wakers = new Map<string, Set<() => void>>()
  private timer: ReturnType<typeof setInterval> | undefined
  private ticks = 0
  private stopped = false

  constructor(
    private readonly ctx: Context,
    private readonly fabric: Fabric,
    private readonly projects: Projects,
    private readonly local?: LocalLogs,
    /** How long a tail waits for the node (PlatformOptions.logWaitMs). */
    private readonly waitMs = WAIT_MS,
  ) {
    this.key = deriveKey(ctx.masterKey, SEAL_PURPOSE)
    fabric.logRequestsFor = (node) => this.waiting.size > 0 && this.waiting.has(node)
    ctx.changes.on('logs', (key, local) => {
      if (key.startsWith('chunk:')) this.wake(key.slice(6))
      else if (!local) void this.reload()
    })
  }

  async start(): Promise<void> {
    await this.reload()
    this.timer = setInterval(() => void this.tick(), 1000)
    this.timer.unref?.()
  }

  stop(): void {
    this.stopped = true
    if (this.timer) clearInterval(this.timer)
    for (const set of this.wakers.values()) for (const wake of set) wake()
  }

  private async tick(): Promise<void> {
    this.ticks++
    // Every 2 s in case a notice was lost; expired requests go every 10 s.
    if (this.ticks % 2 === 0) await this.reload()
    if (this.ticks % 10 === 0) await sweepLogRelay(this.ctx.store, this.ctx.now()).catch(() => 0)
  }

  private async reload(): Promise<void> {
    try {
      this.waiting = new Set(await nodesWithLogRequests(this.ctx.store, this.ctx.now()))
    } catch (e) {
      log.debug(`log relay: ${(e as Error).message}`)
    }
  }

  // ---- operators ---------------------------------------------------------------

  /** The last `tail` lines of a replica's output, from its node. */
  async tail(project: string, replica: number, tail: number, who: string): Promise<ProjectLogs> {
    const node = this.locate(project, replica)
    if (node === 'local') return { project, replica, node, ...this.localTail(project, replica, tail) }
    const id = await this.ask(node, project, replica, tail, false, who, this.waitMs + 5_000)
    try {
      const first = await this.firstChunk(id, node, project, replica)
      return { project, replica, node, lines: first.lines, truncated: first.truncated }
    } finally {
      await deleteLogRequest(this.ctx.store, id).catch(() => {})
    }
  }

  /** The tail, and a cursor to poll for what the replica writes next. */
  async follow(project: string, replica: number, tail: number, who: string): Promise<ProjectLogs> {
    const node = this.locate(project, replica)
    const id = await this.ask(node, project, replica, tail, true, who, FOLLOW_TTL_MS)
    if (node === 'local') this.followLocally(id, project, replica, tail)
    const first = await this.firstChunk(id, node, project, replica).catch(async (e) => {
      await deleteLogRequest(this.ctx.store, id).catch(() => {})
      throw e
    })
    return { project, replica, node, lines: first.lines, truncated: first.truncated, cursor: `${id}.0` }
  }

  /** What was written after `cursor` (waits up to 20 s for something); cursor null once the follow has ended. */
  async next(project: string, cursor: string, who: string): Promise<ProjectLogs> {
    const m = CURSOR.exec(cursor)
    const row = m ? await logRequest(this.ctx.store, m[1]!) : null
    if (!m || !row || row.project !== project || row.requested_by !== who || row.follow !== 1) throw new MusterError('not-found', 'No such log follow: it ended, or it was started by someone else. Ask for the log again.')
    const id = m[1]!
    const after = Number(m[2])
    const ended = (): ProjectLogs => ({ project, replica: row.replica, node: row.node, lines: [], truncated: false, cursor: null })
    if (row.expires_at <= this.ctx.now()) return ended()
    await renewLogRequest(this.ctx.store, id, this.ctx.now() + FOLLOW_TTL_MS)
    await deleteLogChunksUpTo(this.ctx.store, id, after)
    const chunks = await this.waitChunks(id, after, POLL_WAIT_MS)
    if (chunks.length === 0) {
      const heard = (await logRequest(this.ctx.store, id))?.picked_at ?? null
      if (heard === null || this.ctx.now() - heard > NODE_SILENT_MS) {
        await deleteLogRequest(this.ctx.store, id).catch(() => {})
        return ended()
      }
      return { project, replica: row.replica, node: row.node, lines: [], truncated: false, cursor }
    }
    const last = chunks[chunks.length - 1]!.seq
    return { project, replica: row.replica, node: row.node, lines: chunks.flatMap((c) => c.lines), truncated: chunks.some((c) => c.truncated), cursor: `${id}.${last}` }
  }

  /** The node a replica is placed on; refusals name why there is none. */
  private locate(project: string, replica: number): string {
    const p = this.projects.show(project)
    const placement = p.placements.find((x) => x.replica === replica)
    if (!placement) throw new MusterError('not-found', p.replicas === 0 ? `Project ${project} has no replicas (scaled to 0).` : `Project ${project} has no replica ${replica} (it has ${p.replicas}: 0 to ${p.replicas - 1}).`)
    if (!placement.node) throw new MusterError('replica-not-placed', `Replica ${replica} of ${project} is not placed on any node${p.reason ? ` (${p.reason})` : ''}, so it has no log.`)
    if (placement.node === 'local') {
      if (!this.local) throw new MusterError('node-unreachable', `Replica ${replica} of ${project} runs on another Platform's local node; ask that Platform.`)
      return 'local'
    }
    const n = this.fabric.registry.get(placement.node)
    if (!n || !this.fabric.registry.healthy(n)) throw new MusterError('node-unreachable', `Node ${placement.node} has not sent a heartbeat lately, so the log of ${project}/${replica} cannot be read now; try again once it is back.`)
    return placement.node
  }

  private async ask(node: string, project: string, replica: number, tail: number, follow: boolean, who: string, ttlMs: number): Promise<string> {
    const now = this.ctx.now()
    if ((await countLogRequests(this.ctx.store, node, now)) >= MAX_OPEN_PER_NODE) throw new MusterError('rate-limited', `Too many log requests are open for node ${node}; try again in a minute.`, { retryAfterSeconds: 60 })
    const id = randomId(24)
    await insertLogRequest(this.ctx.store, { id, node, project, replica, tail, follow: follow ? 1 : 0, requested_by: who, created_at: now, expires_at: now + ttlMs })
    if (node !== 'local') {
      this.waiting.add(node)
      await this.ctx.changes.publish('logs', `node:${node}`)
      void nudgeNode(this.ctx, this.fabric, node)
    }
    return id
  }

  private async firstChunk(id: string, node: string, project: string, replica: number): Promise<LogChunk> {
    const [first] = await this.waitChunks(id, -1, this.waitMs)
    if (!first) throw new MusterError('node-unreachable', `Node ${node} did not send the log of ${project}/${replica} within ${this.waitMs / 1000} s (it picks requests up with its heartbeat); try again.`)
    return first
  }

  /** Chunks after `after`, as soon as there are some, or none after `ms`. */
  private async waitChunks(id: string, after: number, ms: number): Promise<LogChunk[]> {
    const deadline = performance.now() + ms
    for (;;) {
      const rows = await logChunksAfter(this.ctx.store, id, after)
      const chunks = rows.map((r) => this.open(id, r.seq, r.sealed)).filter((c): c is LogChunk => c !== null)
      if (chunks.length > 0 || this.stopped) return chunks
      const left = deadline - performance.now()
      if (left <= 0) return []
      // Woken by the chunk's notice, or after a second (a notice may be lost).
      await new Promise<void>((resolve) => {
        const set = this.wakers.get(id) ?? new Set()
        this.wakers.set(id, set)
        const done = () => {
          clearTimeout(t)
          set.delete(done)
          if (set.size === 0) this.wakers.delete(id)
          resolve()
        }
        const t = setTimeout(done, Math.min(1000, left))
        set.add(done)
      })
    }
  }

  private wake(id: string): void {
    for (const done of this.wakers.get(id) ?? []) done()
  }

  // ---- nodes -------------------------------------------------------------------

  /** The node's waiting requests, each signed with the current trust key; they count as picked up. */
  async pendingFor(node: Pick<NodeEntry, 'name'>): Promise<{ requests: SignedLogRequest[] }> {
    const now = this.ctx.now()
    const rows = await pickLogRequests(this.ctx.store, node.name, now)
    if (rows.length > 0) {
      this.waiting.delete(node.name)
      await this.ctx.changes.publish('logs', `node:${node.name}`)
    }
    const issuedAt = new Date(now).toISOString()
    return {
      requests: rows.map((r) => {
        const payload: LogRequestPayload = { id: r.id, node: r.node, project: r.project, replica: r.replica, tail: r.tail, follow: r.follow === 1, issuedAt }
        return signDocument(LOG_REQUEST, (d, m) => this.fabric.trust.sign(d, m), payload)
      }),
    }
  }

  /** A chunk the node sends for one of its own requests; anything else is not found. */
  async upload(node: Pick<NodeEntry, 'name'>, id: string, body: unknown): Promise<{ ok: true }> {
    const chunk = parseChunk(body)
    const row = /^[a-z2-7]{24}$/.test(id) ? await logRequest(this.ctx.store, id) : null
    const now = this.ctx.now()
    if (!row || row.node !== node.name || row.expires_at <= now) throw new MusterError('not-found', 'No such log request for this node.')
    // A tail is one chunk: anything after it would be kept for no reader.
    if (row.follow !== 1 && chunk.seq > 0) throw new MusterError('invalid-request', 'Invalid log chunk: this request is a tail, answered by its first chunk (seq 0) alone.', { field: 'seq' })
    await this.store(row.id, row.project, chunk, now)
    return { ok: true }
  }

  private async store(id: string, project: string, chunk: LogChunk, now: number): Promise<void> {
    // The node was heard from (a follow whose node stays silent ends).
    await this.ctx.store.run('UPDATE log_requests SET picked_at = ?2 WHERE id = ?1', id, now)
    // An empty chunk after the first is a keep-alive: nothing to keep.
    if (chunk.seq > 0 && chunk.lines.length === 0) return
    const sealed = sealBytes(this.key, chunkAad(id, chunk.seq), JSON.stringify({ lines: chunk.lines, truncated: chunk.truncated }))
    const stored = await insertLogChunk(this.ctx.store, id, project, chunk.seq, sealed, now, LOG_CHUNK_CAPS)
    if (stored === 'stored') await this.ctx.changes.publish('logs', `chunk:${id}`)
    if (stored === 'full') {
      throw new MusterError('rate-limited', `This log request (or project ${project}) holds as much unread output as the Platform keeps; send the rest once the reader has caught up.`, { retryAfterSeconds: 1 })
    }
  }

  private open(id: string, seq: number, sealed: Uint8Array): LogChunk | null {
    const text = unsealBytes(this.key, chunkAad(id, seq), sealed)
    if (!text) return null
    const v = JSON.parse(text.toString('utf8')) as { lines: string[]; truncated: boolean }
    return { seq, lines: v.lines, truncated: v.truncated }
  }

  // ---- the Platform's own node ---------------------------------------------------

  private localTail(project: string, replica: number, tail: number): { lines: string[]; truncated: boolean } {
    const t = readTail(this.local!.logFile(project, replica), tail, this.local!.maxLogBytes)
    return { lines: t.lines, truncated: t.truncated }
  }

  /** Plays the node's part for the local node: the tail, then new lines every second while the request lives. */
  private followLocally(id: string, project: string, replica: number, tail: number): void {
    const file = this.local!.logFile(project, replica)
    const t = readTail(file, tail, this.local!.maxLogBytes)
    const follower = new LogFollower(file, t.offset)
    let seq = 0
    void (async () => {
      await this.store(id, project, { seq, lines: t.lines, truncated: t.truncated }, this.ctx.now())
      while (!this.stopped) {
        await Bun.sleep(1000)
        const row = await logRequest(this.ctx.store, id).catch(() => null)
        if (!row || row.expires_at <= this.ctx.now()) return
        const lines = follower.read()
        // Nothing new: a keep-alive (seq past the last, no lines), which stores nothing.
        if (lines.length > 0) seq++
        await this.store(id, project, { seq: lines.length > 0 ? seq : seq + 1, lines, truncated: false }, this.ctx.now())
      }
    })().catch((e) => log.warn(`local log follow: ${(e as Error).message}`))
  }
}

/** A chunk as a node sends it: bounded, strings only. */
function parseChunk(body: unknown): LogChunk {
  const b = body as Partial<LogChunk> | null
  const bad = (why: string) => new MusterError('invalid-request', `Invalid log chunk: ${why}`, { field: 'body' })
  if (!b || typeof b !== 'object') throw bad('expected an object')
  if (!Number.isInteger(b.seq) || b.seq! < 0 || b.seq! > 1e9) throw bad('seq must be an integer from 0')
  if (typeof b.truncated !== 'boolean') throw bad('truncated must be true or false')
  if (!Array.isArray(b.lines) || b.lines.length > MAX_TAIL_LINES) throw bad(`lines must be an array of at most ${MAX_TAIL_LINES} strings`)
  for (const l of b.lines) if (typeof l !== 'string' || l.length > MAX_LINE_CHARS + 1) throw bad(`each line is a string of at most ${MAX_LINE_CHARS} characters`)
  return { seq: b.seq!, lines: b.lines as string[], truncated: b.truncated }
}
