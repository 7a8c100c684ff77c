// The Agent's HTTPS server (docs/nodes.md): its own certificate; GET /health answers
// the node's name to anyone (the Platform's readiness probe); every other
// request must be signed by a current trust key, else 401.
import type { Server } from 'bun'
import { MusterError } from '../errors.ts'
import type { TrustKey } from '../wire/nodes.ts'
import { log } from '../log.ts'
import { VERSION } from '../version.ts'
import { verifyAgentRequest } from '../signed/requests.ts'

const MAX_BODY_BYTES = 4 * 1024 * 1024

/** A request whose signature verified; the body has been read. */
export interface SignedRequest {
  request: Request
  method: string
  path: string
  body: Uint8Array
  kid: string
}

export type SignedHandler = (r: SignedRequest) => Response | undefined | Promise<Response | undefined>

export interface AgentServerOptions {
  host: string
  port: number
  certPem: string
  keyPem: string
  node: string
  now: () => number
  trustKeys: () => TrustKey[]
  /** Refreshes trust for a signature by an unknown kid; true when the keys may have changed. */
  refreshForUnknownKid?: () => Promise<boolean>
  handle: () => SignedHandler
}

const json = (status: number, body: unknown) => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } })
const refusal = (e: MusterError) => json(e.status, e.toJSON())

export function startAgentServer(o: AgentServerOptions): Server<unknown> {
  try {
    return Bun.serve({
      hostname: o.host,
      port: o.port,
      reusePort: false,
      tls: { cert: o.certPem, key: o.keyPem },
      maxRequestBodySize: MAX_BODY_BYTES,
      fetch: async (request) => {
        const u = new URL(request.url)
        if (request.method === 'GET' && u.pathname === '/health') return json(200, { ok: true, node: o.node, version: VERSION })
        let body: Uint8Array
        try {
          body = new Uint8Array(await request.arrayBuffer())
        } catch {
          return refusal(new MusterError('payload-too-large', 'Request body too large.'))
        }
        const path = u.pathname + u.search
        const signed = { method: request.method, path, body, node: o.node }
        let verdict = verifyAgentRequest(o.trustKeys(), request.headers, signed, o.now())
        // A kid this node does not hold: the Platform may have a key the node has not fetched yet.
        if (!verdict.ok && verdict.unknownKey && o.refreshForUnknownKid && (await o.refreshForUnknownKid())) {
          verdict = verifyAgentRequest(o.trustKeys(), request.headers, signed, o.now())
        }
        if (!verdict.ok) {
          log.warn(`refused ${request.method} ${u.pathname}: ${verdict.reason}`)
          return refusal(new MusterError('unauthorized', 'This Agent accepts only requests signed by its Platform.'))
        }
        const answer = await o.handle()({ request, method: request.method, path, body, kid: verdict.kid })
        return answer ?? refusal(new MusterError('not-found', 'No such route.'))
      },
      error: (e) => {
        log.error(`agent request failed: ${e.message}`)
        return refusal(new MusterError('internal', 'Internal error; see the Agent log.'))
      },
    })
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EADDRINUSE') throw new MusterError('already-running', `Port ${o.port} is already in use: is another Agent running?`)
    throw e
  }
}
