// A node's fields as plain data, and how a store row becomes them. What
// most nodes hold alike is one value: the empty replica list and label set are
// shared and frozen, and the few distinct label texts are parsed once.
import type { NodeRow } from '../store/nodes.ts'
import { labelsFromJson, type Labels } from '../wire/labels.ts'
import type { ReplicaStatus } from '../wire/nodes.ts'

export interface Probe {
  ok: boolean
  at: number
  reason?: string
}

/** A node's fields as plain data (what the store's row gives, and what a test may build). */
export interface NodeFields {
  name: string
  auth: 'enrolled' | 'legacy'
  certSha256: string | null
  url: string | null
  tokenId: string | null
  generation: number
  previousValidUntil: number
  version: string | null
  enrolledAt: number
  lastSeenAt: number | null
  cpuMillis: number | null
  memoryMB: number | null
  replicas: ReplicaStatus[]
  drained: boolean
  revokedAt: number | null
  /** Labels the node reported at enroll (the nodes file may override them: Fabric.nodeSettings). */
  labels: Labels
  /** The last readiness probe (nodes that gave an address). */
  probe?: Probe
}

export const NO_REPLICAS: ReplicaStatus[] = Object.freeze([]) as unknown as ReplicaStatus[]
export const NO_LABELS: Labels = Object.freeze({}) as Labels

// The few distinct label texts many nodes share are parsed once (the table keeps each set once too).
const keptLabels = new Map<string, Labels>()
const MAX_KEPT = 10_000

function labelsOf(text: string | null): Labels {
  if (!text) return NO_LABELS
  const k = keptLabels.get(text)
  if (k !== undefined) return k
  const labels = Object.freeze(labelsFromJson(text))
  if (keptLabels.size < MAX_KEPT) keptLabels.set(text, labels)
  return labels
}

export function replicasFromJson(text: string | null): ReplicaStatus[] {
  if (!text || text === '[]') return NO_REPLICAS
  try {
    return JSON.parse(text) as ReplicaStatus[]
  } catch {
    return NO_REPLICAS
  }
}

export function fromRow(r: NodeRow): NodeFields {
  return {
    name: r.name,
    auth: r.auth === 'legacy' ? 'legacy' : 'enrolled',
    certSha256: r.cert_sha256,
    url: r.url,
    tokenId: r.token_id,
    generation: r.generation,
    previousValidUntil: r.previous_valid_until,
    version: r.version,
    enrolledAt: r.enrolled_at,
    lastSeenAt: r.last_seen_at,
    cpuMillis: r.cpu_millis,
    memoryMB: r.memory_mb,
    replicas: replicasFromJson(r.replicas),
    drained: r.drained === 1,
    revokedAt: r.revoked_at,
    labels: labelsOf(r.labels),
  }
}
