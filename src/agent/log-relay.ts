// The node's side of the log relay: when a heartbeat answer
// says a log request waits, fetch the node's requests over its authenticated
// connection, verify each against the trust keys (a request not signed by the
// Platform is never served), and upload the replica's tail; a follow then
// sends what the replica writes, every second, until the Platform answers
// that the request is gone. The node needs no inbound port for any of it.
import { MusterError } from '../errors.ts'
import { log } from '../log.ts'
import { checkLogRequest } from '../signed/documents.ts'
import type { LogChunk, LogRequestPayload } from '../wire/projects.ts'
import type { AgentLink } from './link.ts'
import { LogFollower, readTail } from '../replicas/log-files.ts'

const FOLLOW_TICK_MS = 1000
/** A follow with nothing new still tells the Platform it is there this often (and learns whether to go on). */
const KEEPALIVE_MS = 15_000
const MAX_FOLLOWS = 16
/** A follow that cannot upload for this long gives up. */
const GIVE_UP_MS = 60_000
/** What one upload may carry, as JSON (the API takes 1 MiB bodies). */
const MAX_UPLOAD_BYTES = 900 * 1024
/** Request ids served lately (a request is served once). */
const SEEN_MAX = 1024

export interface LogSource {
  logFile(project: string, replica: number): string
  maxLogBytes: number
}

export interface NodeLogRelay {
  /** A heartbeat answer said requests wait: fetch and serve them (one fetch at a time). */
  poll(): void
  stop(): void
}

/** Drops the oldest lines until the upload fits its size limit. */
export function fitChunk(chunk: LogChunk): LogChunk {
  let { lines, truncated } = chunk
  let size = JSON.stringify(chunk).length
  let drop = 0
  while (size > MAX_UPLOAD_BYTES && drop < lines.length) size -= JSON.stringify(lines[drop++]).length + 1
  if (drop > 0) {
    lines = lines.slice(drop)
    truncated = true
  }
  return { seq: chunk.seq, lines, truncated }
}

export function startNodeLogRelay(agent: AgentLink, source: LogSource): NodeLogRelay {
  const seen = new Set<string>()
  const follows = new Map<string, ReturnType<typeof setInterval>>()
  let polling: Promise<void> | undefined
  let again = false
  let stopped = false
  const node = agent.node
  const client = () => agent.api()

  const send = async (id: string, chunk: LogChunk) => client().projects.sendLogs(id, fitChunk(chunk))

  const follow = (p: LogRequestPayload, offset: number) => {
    if (follows.size >= MAX_FOLLOWS) return
    const follower = new LogFollower(source.logFile(p.project, p.replica), offset)
    let seq = 0
    let lastSent = performance.now()
    let failingSince = 0
    let busy = false
    let queued: string[] = []
    const end = () => {
      clearInterval(timer)
      follows.delete(p.id)
    }
    const timer = setInterval(async () => {
      if (busy || stopped) return
      busy = true
      try {
        queued = [...queued, ...follower.read()].slice(-10_000)
        if (queued.length === 0 && performance.now() - lastSent < KEEPALIVE_MS) return
        // With nothing new this is a keep-alive (the next seq with no lines), which the Platform does not keep.
        const next = seq + 1
        await send(p.id, { seq: next, lines: queued, truncated: false })
        if (queued.length > 0) seq = next
        queued = []
        lastSent = performance.now()
        failingSince = 0
      } catch (e) {
        // Gone (the operator stopped following, or it expired): stop. Anything else: try again next tick, for a while.
        if (e instanceof MusterError && e.code === 'not-found') return end()
        failingSince ||= performance.now()
        if (performance.now() - failingSince > GIVE_UP_MS) {
          log.warn(`log follow of ${p.project}/${p.replica} ended: ${(e as Error).message}`)
          end()
        }
      } finally {
        busy = false
      }
    }, FOLLOW_TICK_MS)
    follows.set(p.id, timer)
  }

  const serve = async (p: LogRequestPayload) => {
    const t = readTail(source.logFile(p.project, p.replica), p.tail, source.maxLogBytes)
    await send(p.id, { seq: 0, lines: t.lines, truncated: t.truncated })
    if (p.follow) follow(p, t.offset)
  }

  const fetchOnce = async () => {
    const { requests } = await client().projects.logRequests()
    for (const doc of requests ?? []) {
      let check = checkLogRequest(doc, agent.trustKeys(), node, agent.now())
      if (!check.ok && check.unknownKey && (await agent.refreshForUnknownKid())) check = checkLogRequest(doc, agent.trustKeys(), node, agent.now())
      if (!check.ok) {
        log.warn(`refused a log request: ${check.reason}`)
        continue
      }
      const p = check.payload
      if (seen.has(p.id)) continue
      seen.add(p.id)
      if (seen.size > SEEN_MAX) seen.delete(seen.values().next().value!)
      await serve(p).catch((e) => log.warn(`cannot send the log of ${p.project}/${p.replica}: ${(e as Error).message}`))
    }
  }

  return {
    poll() {
      if (stopped) return
      if (polling) {
        again = true
        return
      }
      polling = (async () => {
        try {
          do {
            again = false
            await fetchOnce()
          } while (again && !stopped)
        } catch (e) {
          log.debug(`cannot fetch log requests: ${(e as Error).message}`)
        } finally {
          polling = undefined
        }
      })()
    },
    stop() {
      stopped = true
      for (const t of follows.values()) clearInterval(t)
      follows.clear()
    },
  }
}
