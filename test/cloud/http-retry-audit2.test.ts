// How a provider client sends again (src/cloud/http.ts, retry.ts), on what
// bugs planted by the second self-audit (test/mutants/audit2.ts) broke without
// a test failing: a create that is not idempotent is never sent a second time
// after an answer that says the provider may have acted (a 5xx), and a 501 Not
// Implemented is final (sent once). A real Hetzner client against the Hetzner
// fake, behind a front that answers the fault.
import { describe, expect, test } from 'bun:test'
import { HetznerProvider } from '../../src/cloud/providers/hetzner.ts'
import { startHetznerFake } from '../fakes/hetzner.ts'
import { hz } from './_ctx.ts'

/** A front for the fake: `fault` may answer a request itself; everything else is passed on. Counts "METHOD /path". */
function front(target: string, fault: (req: Request, path: string) => Response | null) {
  const calls: string[] = []
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch: async (req) => {
      const u = new URL(req.url)
      calls.push(`${req.method} ${u.pathname}`)
      const answer = fault(req, u.pathname)
      if (answer) return answer
      const headers = new Headers(req.headers)
      headers.delete('host')
      return fetch(`${target}${u.pathname.replace(/^\/v1/, '')}${u.search}`, { method: req.method, headers, body: req.method === 'GET' ? undefined : await req.text() })
    },
  })
  return { url: `http://127.0.0.1:${server.port}/v1`, calls, [Symbol.dispose]: () => void server.stop(true) }
}

const req = { name: 'hz-a2', region: 'fsn1', size: 'cx22', userData: '#cloud-config\n', requestId: 'prv-aaaaaaaaaaaa', role: 'general' as const, inbound: { agentFrom: null, sshFrom: null } }
const unavailable = () => Response.json({ error: { code: 'service_unavailable_for_test', message: 'try later' } }, { status: 503 })

describe('provider requests sent again (second self-audit)', () => {
  test('a create answered 503 is not sent again by the client (the provisioner looks before it creates again)', async () => {
    await using f = startHetznerFake()
    let failCreates = 1
    using fr = front(f.url, (r, path) => (r.method === 'POST' && path === '/v1/servers' && failCreates-- > 0 ? unavailable() : null))
    const p = new HetznerProvider({ token: f.token }, hz(fr.url))
    await expect(p.createMachine(req)).rejects.toMatchObject({ code: 'cloud-provider-error', detail: { providerStatus: 503, retryable: true } })
    expect(fr.calls.filter((c) => c === 'POST /v1/servers')).toEqual(['POST /v1/servers'])
    expect(f.book.created).toHaveLength(0)
    // A read answered 503 is sent again (idempotent), and gets through.
    let failReads = 2
    using reads = front(f.url, (r, path) => (r.method === 'GET' && path === '/v1/locations' && failReads-- > 0 ? unavailable() : null))
    expect((await new HetznerProvider({ token: f.token }, hz(reads.url)).regions()).length).toBeGreaterThan(0)
    expect(reads.calls.filter((c) => c === 'GET /v1/locations')).toHaveLength(3)
  })

  test('501 Not Implemented is final: sent once, not retryable; a 500 is sent again', async () => {
    await using f = startHetznerFake()
    using fr = front(f.url, (_r, path) => (path === '/v1/locations' ? Response.json({ error: { code: 'not_implemented_for_test', message: 'no' } }, { status: 501 }) : null))
    await expect(new HetznerProvider({ token: f.token }, hz(fr.url)).regions()).rejects.toMatchObject({ detail: { providerStatus: 501, retryable: false } })
    expect(fr.calls.filter((c) => c === 'GET /v1/locations')).toHaveLength(1)
    let fail500 = 1
    using again = front(f.url, (_r, path) => (path === '/v1/locations' && fail500-- > 0 ? Response.json({ error: { code: 'x', message: 'oops' } }, { status: 500 }) : null))
    expect((await new HetznerProvider({ token: f.token }, hz(again.url)).regions()).length).toBeGreaterThan(0)
    expect(again.calls.filter((c) => c === 'GET /v1/locations')).toHaveLength(2)
  })
})
