// Signed documents a real Agent fetches over its own connection:
// assignments and log requests signed by the Platform's own trust key, handed
// over by a man in the middle on the Platform API, with the Agent's clock set
// at each edge of the key's window and of the log request's ±5 minutes, and a
// document signed for another node. The Agent acts on the accepted side only.
import { afterEach, describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { Agent } from '../../src/agent/agent.ts'
import { joinPlatform } from '../../src/agent/join.ts'
import { clearPinCache } from '../../src/crypto/pin.ts'
import { log } from '../../src/log.ts'
import { ASSIGNMENTS, LOG_REQUEST, LOG_REQUEST_SKEW_MS } from '../../src/signed/documents.ts'
import { documentBytes } from '../../src/signed/signed.ts'
import type { AssignmentPayload, LogRequestPayload } from '../../src/wire/projects.ts'
import { randomId } from '../../src/crypto/tokens.ts'
import { freePort, startListenerPlatform, type ListenerPlatform } from '../helpers/node-side.ts'
import { ASSIGNMENTS_PATH, platformProxy, type PlatformProxy } from '../helpers/proxy.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

afterEach(() => clearPinCache())

const HEARTBEAT_PATH = '/api/v1/nodes/register'
const LOG_REQUESTS_PATH = '/api/v1/nodes/self/log-requests'

/** Warnings the in-process Agent logs while the test runs. */
function captureWarnings(): { lines: string[]; [Symbol.dispose](): void } {
  const lines: string[] = []
  const reporter = { log: (o: { type: string; args: unknown[] }) => void (o.type === 'warn' && lines.push(o.args.map(String).join(' '))) }
  // The logger holds back a message repeated more than five times within a second: one Agent's refusal,
  // logged at each of its heartbeats, would hide the next Agent's identical one.
  const throttle = log.options.throttle
  log.options.throttle = 0
  log.addReporter(reporter)
  return {
    lines,
    [Symbol.dispose]: () => {
      log.removeReporter(reporter)
      log.options.throttle = throttle
    },
  }
}

interface Rig {
  p: ListenerPlatform
  proxy: PlatformProxy
  dataDir: string
  /** Runs `fn` with an Agent whose clock reads `at`; the Agent is stopped after, so nothing it fetched is still being checked when the next one starts. */
  agentAt<T>(at: number, fn: (agent: Agent) => Promise<T>): Promise<T>
  /** The current trust key's window, as the node holds it. */
  key: { notBefore: number; notAfter: number }
  warnings: string[]
  /** Ids of the log requests the Agent answered with an upload. */
  uploads: string[]
  /** What the proxy hands the Agent in place of the Platform's own documents. */
  handed: { assignments?: unknown; logRequests?: unknown[] }
  [Symbol.asyncDispose](): Promise<void>
}

/** A joined w1 whose API goes through a proxy that hands it chosen documents and says in every heartbeat answer that they are there. */
async function rig(): Promise<Rig> {
  const proxy = platformProxy()
  const p = await startListenerPlatform({ publicUrl: proxy.url })
  proxy.target = p.url
  const dir = tmpDir()
  const { token } = await p.client.nodes.createEnrollment({ nodeId: 'w1' })
  const dataDir = `${dir.path}/w1`
  await joinPlatform({ dataDir, platformUrl: p.enrollUrl, nodeId: 'w1', fingerprint: p.fingerprint, addresses: ['127.0.0.1'], port: await freePort(), readToken: async () => token })
  const kid = p.platform.fabric.trust.currentKid()
  const held = (JSON.parse(readFileSync(`${dataDir}/worker/trust.json`, 'utf8')).keys as { kid: string; notBefore: string; notAfter: string }[]).find((k) => k.kid === kid)!
  const handed: Rig['handed'] = {}
  const uploads: string[] = []
  proxy.intercept = async (req, url, sent) => {
    if (url.pathname === HEARTBEAT_PATH) {
      const up = await fetch(`${p.url}${url.pathname}`, { method: 'POST', headers: req.headers, body: sent })
      const answer = (await up.json()) as Record<string, unknown>
      if (up.status !== 200) return Response.json(answer, { status: up.status })
      const revision = (handed.assignments as { payload?: { revision?: number } } | undefined)?.payload?.revision
      return Response.json({ ...answer, ...(revision !== undefined ? { assignmentRevision: revision } : {}), ...(handed.logRequests?.length ? { logs: true } : {}) })
    }
    if (url.pathname === ASSIGNMENTS_PATH && handed.assignments) return Response.json(handed.assignments)
    if (url.pathname === LOG_REQUESTS_PATH && handed.logRequests) return Response.json({ requests: handed.logRequests })
    if (url.pathname.startsWith('/api/v1/nodes/self/logs/')) {
      uploads.push(url.pathname.split('/').pop()!)
      return Response.json({ ok: true })
    }
    return undefined
  }
  const captured = captureWarnings()
  const agentAt = async <T>(at: number, fn: (agent: Agent) => Promise<T>): Promise<T> => {
    const agent = new Agent({ dataDir, host: '127.0.0.1', heartbeatMs: 50, now: () => at })
    await agent.start()
    try {
      await waitFor(() => agent.workloads !== undefined, { what: 'workloads started' })
      return await fn(agent)
    } finally {
      await agent.stop({ stopReplicas: true })
    }
  }
  return {
    p,
    proxy,
    dataDir,
    agentAt,
    key: { notBefore: Date.parse(held.notBefore), notAfter: Date.parse(held.notAfter) },
    warnings: captured.lines,
    uploads,
    handed,
    async [Symbol.asyncDispose]() {
      captured[Symbol.dispose]()
      await p.close()
      proxy[Symbol.dispose]()
      dir[Symbol.dispose]()
    },
  }
}

/** Hands the Agent assignments signed by the Platform's current trust key; 'ran' when it takes them (its revision moves), else the warning it logged. */
async function assign(r: Rig, at: number, payload: Omit<AssignmentPayload, 'issuedAt'>): Promise<string> {
  const full: AssignmentPayload = { issuedAt: new Date(at).toISOString(), ...payload }
  const before = r.warnings.length
  r.handed.assignments = { payload: full, ...r.p.platform.fabric.trust.sign(ASSIGNMENTS.domain, documentBytes(full)) }
  const refusal = () => r.warnings.slice(before).find((l) => l.includes('refused assignments'))
  return r.agentAt(at, async (agent) => {
    await waitFor(() => agent.workloads!.revision() === full.revision || refusal() !== undefined, { what: `assignments revision ${full.revision} handled` })
    return agent.workloads!.revision() === full.revision ? 'ran' : refusal()!
  })
}

/** Hands the Agent one log request signed by the Platform's current trust key; 'served' when it uploads the log, else the warning it logged. */
async function askLog(r: Rig, at: number, issuedAt: number, node = 'w1'): Promise<string> {
  const payload: LogRequestPayload = { id: randomId(16), node, project: 'app', replica: 0, tail: 10, follow: false, issuedAt: new Date(issuedAt).toISOString() }
  const before = r.warnings.length
  r.handed.logRequests = [{ payload, ...r.p.platform.fabric.trust.sign(LOG_REQUEST.domain, documentBytes(payload)) }]
  const refusal = () => r.warnings.slice(before).find((l) => l.includes('refused a log request'))
  return r.agentAt(at, async () => {
    // What the Agent logged meanwhile goes with a timeout (a heartbeat that failed, a fetch refused).
    await waitFor(() => r.uploads.includes(payload.id) || refusal() !== undefined, { what: `log request ${payload.id} handled` }).catch((e: Error) => {
      throw new Error(`${e.message}; the Agent logged: ${JSON.stringify(r.warnings.slice(before))}; the proxy saw: ${JSON.stringify(r.proxy.passed.slice(-12).map((x) => [x.method, x.path, x.intercepted, JSON.stringify(x.answer)?.slice(0, 160)]))}`)
    })
    return r.uploads.includes(payload.id) ? 'served' : refusal()!
  })
}

describe('signed documents at the edges of their windows', () => {
  test("assignments: refused before the key's notBefore and from its notAfter, run at notBefore and one millisecond before notAfter; never for another node", async () => {
    await using r = await rig()
    const now = r.p.platform.now()
    const seen: Record<string, string> = {}
    seen['1 ms before notBefore'] = await assign(r, r.key.notBefore - 1, { node: 'w1', revision: 10, replicas: [] })
    seen['at notBefore'] = await assign(r, r.key.notBefore, { node: 'w1', revision: 11, replicas: [] })
    seen['1 ms before notAfter'] = await assign(r, r.key.notAfter - 1, { node: 'w1', revision: 12, replicas: [] })
    seen['at notAfter'] = await assign(r, r.key.notAfter, { node: 'w1', revision: 13, replicas: [] })
    seen['for w2'] = await assign(r, now, { node: 'w2', revision: 14, replicas: [] })
    expect(seen).toEqual({
      '1 ms before notBefore': expect.stringContaining('is not valid now'),
      'at notBefore': 'ran',
      '1 ms before notAfter': 'ran',
      'at notAfter': expect.stringContaining('is not valid now'),
      'for w2': expect.stringContaining('document is for node w2, not w1'),
    })
    expect(readFileSync(`${r.dataDir}/worker/assignments-revision`, 'utf8').trim()).toBe('12')
  })

  test("log requests: ±5 minutes around their issue, exactly at each edge served, one millisecond past refused; the key's window on both sides", async () => {
    await using r = await rig()
    const seen: Record<string, string> = {}
    // Each Agent's clock is the Platform's at that ask: on a slow machine the asks are seconds apart, and only the skew asked for differs.
    const at = (skew: number) => {
      const now = r.p.platform.now()
      return askLog(r, now, now + skew)
    }
    seen['issued 5 min ago, exactly'] = await at(-LOG_REQUEST_SKEW_MS)
    seen['issued 5 min + 1 ms ago'] = await at(-LOG_REQUEST_SKEW_MS - 1)
    seen['issued 5 min ahead, exactly'] = await at(LOG_REQUEST_SKEW_MS)
    seen['issued 5 min + 1 ms ahead'] = await at(LOG_REQUEST_SKEW_MS + 1)
    // The Agent's clock at the key's edges; each request issued at that moment.
    for (const [what, t] of [
      ['1 ms before notBefore', r.key.notBefore - 1],
      ['at notBefore', r.key.notBefore],
      ['1 ms before notAfter', r.key.notAfter - 1],
      ['at notAfter', r.key.notAfter],
    ] as const) {
      seen[what] = await askLog(r, t, t)
    }
    expect(seen).toEqual({
      'issued 5 min ago, exactly': 'served',
      'issued 5 min + 1 ms ago': expect.stringContaining('outside ±5 minutes'),
      'issued 5 min ahead, exactly': 'served',
      'issued 5 min + 1 ms ahead': expect.stringContaining('outside ±5 minutes'),
      '1 ms before notBefore': expect.stringContaining('is not valid now'),
      'at notBefore': 'served',
      '1 ms before notAfter': 'served',
      'at notAfter': expect.stringContaining('is not valid now'),
    })
  })
})
