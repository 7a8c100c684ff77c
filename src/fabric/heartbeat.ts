// The heartbeat's hot path: what every node does every few seconds,
// kept apart from the rest of the fabric so it stays small and cheap.
// - The credential check reads only memory and allocates nothing when the
//   credential is a node's current one: the expected mac is computed once per
//   node and generation (kept on its entry), and compared character by character in constant time.
// - Anything unusual (a previous generation in its grace hour, a node this
//   Platform has not loaded, the legacy fleet token, a malformed header)
//   returns undefined, and the caller takes Fabric's general path, which
//   answers exactly as before.
import type { Fabric } from './fabric.ts'
import { MAC_LENGTH } from './node-table.ts'
import { NodeEntry } from './node-entry.ts'
import type { HeartbeatAnswer, HeartbeatBody, NodeFacingPlatform } from '../wire/nodes.ts'

const PREFIX = 'Bearer mnc_'
const PLAIN_NAME = /^[a-z0-9-]{1,63}$/

/** 1 for every character code a mac (base64url) does not use, below 256 (above, the code's high bits say it). */
const NOT_MAC = Uint8Array.from({ length: 256 }, (_, c) => ((c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 45 || c === 95 ? 0 : 1))

/**
 * The node whose current credential is in `authorization` ("Bearer mnc_…"),
 * when everything about it is ordinary; undefined sends the request down the
 * general path (which refuses or accepts it with its own answers).
 */
export function currentNode(fabric: Fabric, authorization: string, nodeId: string | undefined): NodeEntry | undefined {
  if (fabric.options.nodeAuth === 'legacy' || !authorization.startsWith(PREFIX)) return undefined
  const macStart = authorization.length - MAC_LENGTH
  // name.generation.mac: the name ends at the first dot. Its shape is not checked here: a name the registry
  // holds has the node-name shape (enroll and the fleet token check it), and any other takes the general path.
  const nameEnd = authorization.indexOf('.', PREFIX.length)
  if (nameEnd <= PREFIX.length || nameEnd - PREFIX.length > 63 || nameEnd >= macStart - 2) return undefined
  // generation: 1-9 digits without a leading zero (other spellings take the general path)
  let generation = 0
  let i = nameEnd + 1
  if (authorization.charCodeAt(i) === 48) return undefined
  for (; i < macStart - 1; i++) {
    const c = authorization.charCodeAt(i)
    if (c < 48 || c > 57) return undefined
    generation = generation * 10 + (c - 48)
  }
  if (i - nameEnd - 1 > 9 || authorization.charCodeAt(i) !== 46) return undefined
  const table = fabric.registry.table
  const name = authorization.slice(PREFIX.length, nameEnd)
  const slot = table.slotOf(name)
  if (slot < 0) return undefined
  const n = new NodeEntry(table, slot, name)
  if (!n.hasCert || n.revokedAt !== null || n.generation !== generation) return undefined
  if (nodeId !== undefined && nodeId !== '' && nodeId !== n.name) return undefined
  // The expected mac, computed once per node, generation and certificate (kept in the registry's mac column).
  if (!table.macFresh(slot)) table.setMac(slot, fabric.credentials.mac(n.name, n.certSha256!, n.generation))
  // Constant time over the 43 characters, whatever they are.
  const macs = table.macs
  const at = slot * MAC_LENGTH
  let diff = 0
  let shape = 0
  for (let k = 0; k < MAC_LENGTH; k++) {
    const c = authorization.charCodeAt(macStart + k)
    diff |= c ^ macs[at + k]!
    shape |= NOT_MAC[c & 255]! | (c >>> 8)
  }
  return diff === 0 && shape === 0 ? n : undefined
}

/** Records an authenticated node's heartbeat (both paths); what the answer says that is the node's own. */
function record(fabric: Fabric, n: NodeEntry, body: HeartbeatBody, now = fabric.now()): void {
  fabric.ctx.metrics.heartbeats.inc()
  if (fabric.registry.heartbeat(n, body, now)) for (const l of fabric.heartbeatListeners) l(n)
}

/** A request for one of the node's replica logs waits (src/projects/logs.ts): the answer says `logs: true`. */
const logsWanted = (fabric: Fabric, n: NodeEntry): boolean => fabric.logRequestsFor(n.name)

/** The nodes file's drain wins over the node's own (Fabric.nodeSettings); one map look-up. */
const drainedOf = (fabric: Fabric, n: NodeEntry): boolean => fabric.declared.get(n.name)?.drained ?? n.drained

/** Records an authenticated node's heartbeat and makes the answer (the framework route; the dedicated one writes it as text). */
export function acceptHeartbeat(fabric: Fabric, n: NodeEntry, body: HeartbeatBody): HeartbeatAnswer {
  record(fabric, n, body)
  const { state, reason } = fabric.registry.state(n)
  const drained = drainedOf(fabric, n)
  // Built field by field, in this order, without spreads.
  const answer: HeartbeatAnswer = reason ? { nodeId: n.name, state, reason, generation: n.generation, drained } : { nodeId: n.name, state, generation: n.generation, drained }
  const assignmentRevision = fabric.assignmentRevision(n.name)
  if (assignmentRevision !== undefined) answer.assignmentRevision = assignmentRevision
  const platforms = fabric.platforms()
  if (platforms.length > 0) answer.platforms = platforms
  if (logsWanted(fabric, n)) answer.logs = true
  if (fabric.updateWanted(n.name)) answer.update = true
  return answer
}

/**
 * The answer's tail, `,"assignmentRevision":R,"platforms":[…]`, by revision, per
 * Platforms list: the list is the key (PlatformRegistry.nodeFacing hands out the same
 * array until the live Platforms change), so a new list starts a new cache.
 */
const tails = new WeakMap<readonly NodeFacingPlatform[], Map<number | undefined, string>>()
const NO_PLATFORMS: readonly NodeFacingPlatform[] = Object.freeze([])
const MAX_TAILS = 4096

/** The last tail made, for the next answer (most nodes share the revision and every one the list). */
let last: { platforms: readonly NodeFacingPlatform[]; revision: number | undefined; tail: string } | undefined

function answerTail(platforms: readonly NodeFacingPlatform[], revision: number | undefined): string {
  if (last !== undefined && last.platforms === platforms && last.revision === revision) return last.tail
  const key = platforms.length === 0 ? NO_PLATFORMS : platforms
  let byRevision = tails.get(key)
  if (byRevision === undefined) {
    byRevision = new Map()
    tails.set(key, byRevision)
  }
  let tail = byRevision.get(revision)
  if (tail === undefined) {
    tail = `${revision !== undefined ? `,"assignmentRevision":${JSON.stringify(revision)}` : ''}${platforms.length > 0 ? `,"platforms":${JSON.stringify(platforms)}` : ''}`
    if (byRevision.size >= MAX_TAILS) byRevision.clear()
    byRevision.set(revision, tail)
  }
  last = { platforms, revision, tail }
  return tail
}

/** acceptHeartbeat's answer as JSON text, byte for byte what JSON.stringify makes of it (the dedicated route). */
export function acceptHeartbeatText(fabric: Fabric, n: NodeEntry, body: HeartbeatBody): string {
  const now = fabric.now()
  record(fabric, n, body, now)
  const st = fabric.registry.state(n, now)
  const reason = st.reason
  const name = n.name
  const generation = n.generation
  // A node name needs no escaping in JSON (a-z, 0-9 and dashes), nor an integer generation: JSON.stringify's text, without the call.
  const quoted = PLAIN_NAME.test(name) ? `"${name}"` : JSON.stringify(name)
  const head = `{"nodeId":${quoted},"state":"${st.state}"${reason ? `,"reason":${JSON.stringify(reason)}` : ''},"generation":${Number.isSafeInteger(generation) ? String(generation) : JSON.stringify(generation)},"drained":${drainedOf(fabric, n)}`
  return head + answerTail(fabric.platforms(), fabric.assignmentRevision(name)) + (logsWanted(fabric, n) ? ',"logs":true' : '') + (fabric.updateWanted(n.name) ? ',"update":true}' : '}')
}
