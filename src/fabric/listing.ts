// The node listing: one page at a time, in name order, filtered by
// state, label and name prefix, with counts by state over everything the
// label and prefix select (the page's state filter aside), so a dashboard can
// show 100,000 nodes as a first page and a line of counts.
import { MusterError } from '../errors.ts'
import { encodeCursor, indexAfter, indexFrom, pageQuery, queryText } from '../wire/paging.ts'
import { NODE_NAME } from '../wire/validate.ts'
import { pendingEnrollments } from '../store/join-tokens.ts'
import type { Fabric } from './fabric.ts'
import type { NodePage, NodeStateName, NodeView, StateCounts } from '../wire/nodes.ts'
import { LABEL_KEY, LABEL_VALUE, type Labels } from '../wire/labels.ts'
import { compatibilityOf, type NodeEntry } from './registry.ts'
import { spanEnd, spanStart } from '../loop-spans.ts'

export const NODE_STATES: readonly NodeStateName[] = ['enrolled', 'ready', 'unreachable', 'revoked']

export interface NodeQuery {
  limit: number
  /** The name after which the page starts. */
  after?: string
  state?: NodeStateName
  label?: { key: string; value: string }
  /** Name prefix. */
  q?: string
}

const bad = (field: string, what: string) => new MusterError('invalid-request', `Invalid ${field}: ${what}`, { field })

/** The query of GET /api/v1/nodes, checked. */
export function nodeQuery(query: Record<string, unknown>): NodeQuery {
  const { limit, after } = pageQuery(query, NODE_NAME)
  const out: NodeQuery = { limit, after }
  const state = queryText(query, 'state')
  if (state !== undefined) {
    if (!(NODE_STATES as readonly string[]).includes(state)) throw bad('state', `expected one of ${NODE_STATES.join(', ')}`)
    out.state = state as NodeStateName
  }
  const label = queryText(query, 'label')
  if (label !== undefined) {
    // The same keys and values as node labels (src/wire/labels.ts).
    const i = label.indexOf('=')
    const key = label.slice(0, i)
    const value = label.slice(i + 1)
    if (i <= 0 || !LABEL_KEY.test(key) || !LABEL_VALUE.test(value)) throw bad('label', 'expected KEY=VALUE, like role=build')
    out.label = { key, value }
  }
  const q = queryText(query, 'q')
  if (q !== undefined && q !== '') {
    if (!/^[a-z0-9-]{1,63}$/.test(q)) throw bad('q', 'expected the start of a node name (lowercase letters, digits, dashes)')
    out.q = q
  }
  return out
}

const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString())

export function nodeView(fabric: Fabric, n: NodeEntry, st = fabric.registry.state(n)): NodeView {
  const settings = fabric.nodeSettings(n)
  return {
    name: n.name,
    state: st.state,
    ...(st.reason ? { reason: st.reason } : {}),
    compatibility: compatibilityOf(n.version),
    version: n.version,
    certificateSha256: n.certSha256,
    agentId: `agent-${n.name}`,
    lastSeenAt: iso(n.lastSeenAt),
    url: n.url,
    auth: n.auth,
    drained: settings.drained,
    labels: settings.labels,
    declared: settings.declared,
    capacity: n.cpuMillis !== null ? { cpuMillis: n.cpuMillis, memoryMB: n.memoryMB } : null,
  }
}

export async function listNodes(fabric: Fabric, q: NodeQuery): Promise<NodePage> {
  const started = spanStart()
  const registry = fabric.registry
  const names = registry.sortedNames()
  // Labels as listed and placed: the nodes file's when it declares the node (Fabric.nodeSettings).
  const labelsOf = (n: NodeEntry): Labels => fabric.declared.get(n.name)?.labels ?? n.labels
  const matches = (name: string, labels: Labels | undefined) =>
    (q.q === undefined || name.startsWith(q.q)) && (q.label === undefined || labels?.[q.label.key] === q.label.value)

  const counts: StateCounts = { total: 0, enrolled: 0, ready: 0, unreachable: 0, revoked: 0 }
  const nodes: NodeView[] = []
  // The Platform's own node leads the first page.
  // The local node is listed only when it runs (serve --local-node; docs/security.md).
  const local = fabric.localNode?.()
  if (local && matches(local.name, local.labels)) {
    counts.total++
    counts[local.state as NodeStateName]++
    if (q.after === undefined && (q.state === undefined || local.state === q.state)) nodes.push(local)
  }
  // Counts over every node the prefix and label select: a prefix walks only its names (a look-up by name at a
  // million nodes reads a handful, not all); no filter takes the registry's counts (cached from 50,000 nodes
  // on, kept by Registry.stateCounts); a label walks every node in the registry's own order (the fastest walk).
  if (q.q !== undefined) {
    for (let i = indexFrom(names, q.q); i < names.length && names.at(i)!.startsWith(q.q); i++) {
      const n = registry.get(names.at(i)!)
      if (!n || !matches(n.name, labelsOf(n))) continue
      counts.total++
      counts[registry.state(n).state]++
    }
  } else if (q.label === undefined) {
    const all = registry.stateCounts()
    for (const k of ['total', ...NODE_STATES] as const) counts[k] += all[k]
  } else {
    for (const n of registry.nodes.values()) {
      if (!matches(n.name, labelsOf(n))) continue
      counts.total++
      counts[registry.state(n).state]++
    }
  }
  // The page: from the cursor (or the prefix) on, in name order, until it is full and one more is known.
  // `local` leads, out of name order: a cursor at it means "from the first name".
  const first = q.q === undefined ? 0 : indexFrom(names, q.q)
  let nextCursor: string | null = null
  for (let i = Math.max(first, q.after === undefined || q.after === 'local' ? 0 : indexAfter(names, q.after)); i < names.length; i++) {
    const name = names.at(i)!
    if (q.q !== undefined && !name.startsWith(q.q)) break
    const n = registry.get(name)
    if (!n || !matches(name, labelsOf(n))) continue
    const st = registry.state(n)
    if (q.state !== undefined && st.state !== q.state) continue
    if (nodes.length === q.limit) {
      nextCursor = encodeCursor(nodes[nodes.length - 1]!.name)
      break
    }
    nodes.push(nodeView(fabric, n, st))
  }
  const now = fabric.now()
  spanEnd('nodes list', started)
  return {
    nodes,
    pendingEnrollments: (await pendingEnrollments(fabric.db, now)).map((t) => ({ nodeId: t.node_id!, expiresAt: new Date(t.expires_at).toISOString() })),
    nextCursor,
    counts,
  }
}
