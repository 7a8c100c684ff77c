// The one place every write passes on its way in: before a write
// runs, its audit entry is written — who (the request's principal), from where
// (the peer address), what and on what (src/http/audit-actions.ts) — and when
// that write fails the action does not run (503 audit-unavailable). After it
// ran, the entry gets its outcome. Refused and denied attempts (no token, a
// suspended one, a failed login, a missing permission, a bad request) and
// writes that changed nothing go to the refusals budget, so they can never
// push an action out (docs/accounts-audit.md).
import { UNKNOWN_PRINCIPAL, whoOf, type Audit, type Who } from '../audit/audit.ts'
import type { Auth, Principal } from '../auth/auth.ts'
import { MusterError } from '../errors.ts'
import { matchAudited, unknownAction } from './audit-actions.ts'
import { peerAddress } from './peer.ts'
import { isJson, requestPath } from './request.ts'

export interface AuditNote {
  who?: Who
  target?: string | null
  detail?: string | null
  /** The write was allowed and changed nothing (a logout without a session, a drain of a drained node): no action. */
  unchanged?: boolean
}

const notes = new WeakMap<Request, AuditNote>()

/** What only the route learns (who a login or a vouch turned out to be): it lands in the request's entry. */
export function noteAudit(request: Request, note: AuditNote): void {
  notes.set(request, { ...notes.get(request), ...note })
}

const READS = new Set(['GET', 'HEAD', 'OPTIONS'])

function outcomeOf(status: number): 'ok' | 'denied' | 'refused' | 'failed' {
  if (status < 400) return 'ok'
  if (status === 401 || status === 403) return 'denied'
  return status < 500 ? 'refused' : 'failed'
}

async function json(r: Request | Response): Promise<unknown> {
  try {
    return await r.clone().json()
  } catch {
    return undefined
  }
}

async function errorCode(res: Response): Promise<string | null> {
  const code = ((await json(res)) as { error?: { code?: unknown } } | undefined)?.error?.code
  return typeof code === 'string' ? code.slice(0, 64) : `http-${res.status}`
}

function refusedResponse(e: MusterError): Response {
  return new Response(JSON.stringify(e.toJSON()), { status: e.status, headers: { 'content-type': 'application/json' } })
}

/** The id of the API token a request presents (public: the part before the secret), for a refused attempt. */
function presentedTokenId(request: Request): string | null {
  return /^Bearer\s+mat_([a-z2-7]{16})\./i.exec(request.headers.get('authorization') ?? '')?.[1] ?? null
}

export function auditHook(deps: { audit: Audit; auth: Auth }, handle: (r: Request) => Promise<Response>): (r: Request) => Promise<Response> {
  const { audit, auth } = deps
  return async (request) => {
    const path = requestPath(request)
    // A HEAD runs the GET handler (the router answers HEAD with it): it is the same request for the audit.
    const method = request.method === 'HEAD' ? 'GET' : request.method
    const match = matchAudited(method, path)
    if ((READS.has(method) && !match) || match?.route === null) return handle(request)
    const route = match?.route
    const params = match && 'params' in match ? match.params : {}
    const action = route?.action ?? unknownAction(method, path)
    const source = peerAddress(request)
    const body = (route?.target || route?.detail) && isJson(request) ? await json(request) : undefined
    const target = route?.target?.(params, body) ?? null
    const detail = route?.detail?.(body) ?? null
    let principal: Principal | null = null
    let suspended: MusterError | null = null
    try {
      principal = await auth.authenticate(request.headers)
    } catch (e) {
      // A local credential on a closed door (or a store failure): the route answers it; here it is a refusal.
      suspended = e instanceof MusterError ? e : null
    }

    if (!route?.anonymous && !principal) {
      // Nothing runs without a principal: the route refuses it, and the refusal is recorded on its own budget.
      const res = await handle(request)
      if (res.status === 401 || res.status === 403) {
        const tokenId = presentedTokenId(request)
        await audit
          // A presented token id proves nothing (it is the public half): the principal stays unknown, the id is kept beside it.
          .record({ principal: UNKNOWN_PRINCIPAL, kind: 'anonymous', tokenId }, { source, action, target, budget: 'refusals', outcome: 'denied', detail: suspended ? 'suspended: this office’s local door is closed' : await errorCode(res) })
          .catch(() => {})
      }
      return res
    }

    const anonymous = Boolean(route?.anonymous)
    const who: Who = anonymous ? route!.anonymous! : whoOf(principal!)
    let id: number
    try {
      id = await audit.begin(who, { source, action, target, detail, budget: anonymous ? 'refusals' : 'actions' })
    } catch (e) {
      return refusedResponse(e as MusterError)
    }
    let res: Response
    try {
      res = await handle(request)
    } catch (e) {
      await audit.finish(id, { outcome: 'failed', detail: 'internal' })
      throw e
    }
    const note = notes.get(request)
    const status = outcomeOf(res.status)
    const outcome = status === 'ok' && note?.unchanged ? 'unchanged' : status
    const made = outcome === 'ok' && route?.result ? route.result(await json(res)) : undefined
    await audit.finish(id, {
      outcome,
      detail: status === 'ok' ? (note?.detail ?? detail) : await errorCode(res),
      ...(note?.who ? { who: note.who } : {}),
      ...(note?.target !== undefined ? { target: note.target } : made ? { target: target ? `${target} ${made}` : made } : {}),
      // An anonymous attempt that succeeded is an action (a login, a redeemed vouch, a placed project);
      // a refused or denied one, even by a principal, is a refusal: a flood of them cannot push actions out.
      // A write that changed nothing is no action either: a loop of them cannot push one out.
      ...(anonymous && outcome === 'ok' ? { budget: 'actions' as const } : outcome === 'denied' || outcome === 'refused' || outcome === 'unchanged' ? { budget: 'refusals' as const } : {}),
    })
    return res
  }
}
