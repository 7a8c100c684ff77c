// The Agent's signed-request gate at the edges of its windows and with each
// bound field swapped: a real joined Agent on its HTTPS port, its
// clock held still, requests signed by the Platform's own trust key.
import { afterEach, describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { Agent } from '../../src/agent/agent.ts'
import { joinPlatform } from '../../src/agent/join.ts'
import { agentRequestMessage, MAX_SKEW_MS, signAgentRequest, SIGNATURE_HEADERS } from '../../src/signed/requests.ts'
import { clearPinCache } from '../../src/crypto/pin.ts'
import { ASSIGNMENTS } from '../../src/signed/documents.ts'
import { freePort, startListenerPlatform, type ListenerPlatform } from '../helpers/node-side.ts'
import { tmpDir } from '../helpers/tmp.ts'

afterEach(() => clearPinCache())

const PATH = '/v1/assignments'
const BODY = '{"replicas":2}'

async function joined(p: ListenerPlatform, dir: string) {
  const { token } = await p.client.nodes.createEnrollment({ nodeId: 'w1' })
  const port = await freePort()
  const dataDir = `${dir}/w1`
  await joinPlatform({ dataDir, platformUrl: p.enrollUrl, nodeId: 'w1', fingerprint: p.fingerprint, addresses: ['127.0.0.1'], port, readToken: async () => token })
  return { port, dataDir, certPem: readFileSync(`${dataDir}/worker/agent.crt`, 'utf8') }
}

/** An Agent whose clock reads `at` for as long as `fn` runs; `fn` gets a POST that answers its status. */
async function agentAt<T>(node: Awaited<ReturnType<typeof joined>>, at: number, fn: (post: (headers: Record<string, string>, method?: string) => Promise<number>) => Promise<T>): Promise<T> {
  const agent = new Agent({ dataDir: node.dataDir, host: '127.0.0.1', heartbeatMs: 60_000, now: () => at })
  agent.handleSigned = () => Response.json({ done: true })
  await agent.start()
  try {
    const post = async (headers: Record<string, string>, method = 'POST') =>
      (await fetch(`https://127.0.0.1:${node.port}${PATH}`, { method, body: BODY, headers, tls: { ca: node.certPem } })).status
    return await fn(post)
  } finally {
    await agent.stop()
  }
}

const signer = (p: ListenerPlatform) => (d: string, m: string) => p.platform.fabric.trust.sign(d, m)

describe('the Agent request gate: windows and bindings', () => {
  test('the ±5 minute window: accepted exactly at each edge, refused one millisecond past it, on both sides', async () => {
    await using p = await startListenerPlatform()
    using dir = tmpDir()
    const node = await joined(p, dir.path)
    const now = p.platform.now()
    const sign = (at: number) => signAgentRequest(signer(p), { method: 'POST', path: PATH, body: BODY, node: 'w1' }, at)
    const seen = await agentAt(node, now, async (post) => {
      const out: Record<string, number> = {}
      for (const [what, at] of [
        ['5 min early, exactly', now - MAX_SKEW_MS],
        ['5 min early + 1 ms', now - MAX_SKEW_MS - 1],
        ['5 min late, exactly', now + MAX_SKEW_MS],
        ['5 min late + 1 ms', now + MAX_SKEW_MS + 1],
      ] as const) {
        out[what] = await post(sign(at))
      }
      return out
    })
    expect(seen).toEqual({ '5 min early, exactly': 200, '5 min early + 1 ms': 401, '5 min late, exactly': 200, '5 min late + 1 ms': 401 })
  })

  test('each signed field swapped in turn is refused: method, timestamp, purpose', async () => {
    await using p = await startListenerPlatform()
    using dir = tmpDir()
    const node = await joined(p, dir.path)
    const now = p.platform.now()
    const r = { method: 'POST', path: PATH, body: BODY, node: 'w1' }
    const seen = await agentAt(node, now, async (post) => ({
      good: await post(signAgentRequest(signer(p), r, now)),
      // signed for a PUT, sent as a POST
      method: await post(signAgentRequest(signer(p), { ...r, method: 'PUT' }, now)),
      // signed ten minutes ago, the timestamp header moved to now
      restamped: await post({ ...signAgentRequest(signer(p), r, now - 10 * 60_000), [SIGNATURE_HEADERS.timestamp]: String(now) }),
      // the very message, signed by the same trust key for another purpose (assignments)
      purpose: await post({ ...signAgentRequest(signer(p), r, now), [SIGNATURE_HEADERS.signature]: p.platform.fabric.trust.sign(ASSIGNMENTS.domain, agentRequestMessage(r, now)).signature }),
    }))
    expect(seen).toEqual({ good: 200, method: 401, restamped: 401, purpose: 401 })
  })

  test("a trust key is refused one millisecond before its notBefore (in the node's view) and accepted from that millisecond", async () => {
    await using p = await startListenerPlatform()
    using dir = tmpDir()
    const node = await joined(p, dir.path)
    const kid = p.platform.fabric.trust.currentKid()
    const keys = JSON.parse(readFileSync(`${node.dataDir}/worker/trust.json`, 'utf8')).keys as { kid: string; notBefore: string }[]
    const start = Date.parse(keys.find((k) => k.kid === kid)!.notBefore)
    const attempt = (at: number) => agentAt(node, at, (post) => post(signAgentRequest(signer(p), { method: 'POST', path: PATH, body: BODY, node: 'w1' }, at)))
    expect(await attempt(start - 1)).toBe(401)
    expect(await attempt(start - 3_600_000)).toBe(401)
    expect(await attempt(start)).toBe(200)
  })
})
