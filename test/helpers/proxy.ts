// A man in the middle on the Platform API: a plain-http proxy that passes
// every request through to `target`, records what went by, and lets a test
// answer chosen requests itself (a forged, replayed or misaddressed document).
// Start the Platform with publicUrl = proxy.url, then set proxy.target.

export const ASSIGNMENTS_PATH = '/api/v1/nodes/self/assignments'

export interface Passed {
  method: string
  path: string
  /** The JSON body sent (heartbeats), when there was one. */
  body: unknown
  /** The JSON answer the node got, when it was JSON. */
  answer: unknown
  /** True when the test's `intercept` answered instead of the Platform. */
  intercepted: boolean
}

export interface PlatformProxy {
  url: string
  /** Where requests go on to (the real Platform API). */
  target: string
  /** Answer a request here instead of passing it on; undefined passes it on. `sent` is the request's body (already read). */
  intercept: ((req: Request, url: URL, sent: string | undefined) => Response | undefined | Promise<Response | undefined>) | undefined
  /** Every request answered so far, in order. */
  passed: Passed[]
  [Symbol.dispose](): void
}

export function platformProxy(): PlatformProxy {
  const proxy: PlatformProxy = {
    url: '',
    target: '',
    intercept: undefined,
    passed: [],
    [Symbol.dispose]: () => server.stop(true),
  }
  const json = (text: string) => {
    try {
      return JSON.parse(text) as unknown
    } catch {
      return undefined
    }
  }
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    idleTimeout: 60, // assignments long-poll for 25 s
    async fetch(req) {
      const url = new URL(req.url)
      const sent = req.method === 'GET' || req.method === 'HEAD' ? undefined : await req.text()
      let res = await proxy.intercept?.(req, url, sent)
      const intercepted = res !== undefined
      if (!res) {
        if (!proxy.target) return Response.json({ error: { code: 'unavailable', message: 'proxy has no target yet' } }, { status: 503 })
        const headers = new Headers(req.headers)
        headers.delete('host')
        const upstream = await fetch(`${proxy.target}${url.pathname}${url.search}`, { method: req.method, headers, body: sent, redirect: 'manual' })
        const back = new Headers(upstream.headers)
        back.delete('content-encoding')
        back.delete('content-length')
        res = new Response(await upstream.arrayBuffer(), { status: upstream.status, headers: back })
      }
      const text = await res.clone().text()
      proxy.passed.push({ method: req.method, path: url.pathname, body: sent ? json(sent) : undefined, answer: json(text), intercepted })
      return res
    },
  })
  proxy.url = `http://127.0.0.1:${server.port}`
  return proxy
}
