// What each write route means in the audit: its action name and
// how its target is read — from the path, from named fields of the body, or
// from named fields of the answer (an id minted there). Only names and ids are
// picked, never a whole body: bodies carry passwords, credentials and env.
// A write route missing here is still audited, as "METHOD /path"
// (test/audit/coverage.test.ts lists every route and fails on one missing).

import { CONTROLLER_PRINCIPAL, UNKNOWN_PRINCIPAL } from '../audit/audit.ts'

type Json = Record<string, unknown>
/** A value from a body as the audit keeps it: names, ids and numbers; anything else (markup, a secret in the wrong field) is not copied. */
const str = (v: unknown): string | null => {
  const s = typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : null
  if (s === null) return null
  return /^[\w.@:*?/ -]{1,128}$/.test(s) ? s : '(not a name)'
}
const field = (o: unknown, k: string): unknown => (o && typeof o === 'object' ? (o as Json)[k] : undefined)

export interface AuditedRoute {
  method: string
  path: string
  action: string
  /** The target from path parameters and the request body. */
  target?: (params: Record<string, string>, body: unknown) => string | null
  /** A note from the body that is no secret (a role, a count). */
  detail?: (body: unknown) => string | null
  /** The target from the answer (an id the action made). */
  result?: (answer: unknown) => string | null
  /** Reached without an operator credential (the credential is in the body, or is the signature): written to the refusals budget until it succeeds. */
  anonymous?: { principal: string; kind: 'anonymous' | 'controller' }
  /** The route puts the principal and target in a note (noteAudit) once it knows them. */
  notes?: boolean
}

// A path parameter is percent-decoded, so it can carry anything a body can (CR, LF, escape sequences): the same shape check.
const p = (name: string) => (params: Record<string, string>) => str(params[name] ?? null)
const b = (name: string) => (_: Record<string, string>, body: unknown) => str(field(body, name))
const role = (body: unknown) => (str(field(body, 'role')) ? `role=${str(field(body, 'role'))}` : null)

export const AUDITED_ROUTES: AuditedRoute[] = [
  // people and their credentials
  { method: 'POST', path: '/login', action: 'login', anonymous: { principal: UNKNOWN_PRINCIPAL, kind: 'anonymous' }, notes: true },
  { method: 'POST', path: '/logout', action: 'logout' },
  { method: 'POST', path: '/api/v1/api-tokens', action: 'token.mint', detail: role, result: (a) => str(field(a, 'id')) },
  { method: 'DELETE', path: '/api/v1/api-tokens/:id', action: 'token.revoke', target: p('id') },
  { method: 'POST', path: '/api/v1/accounts', action: 'account.add', target: b('name'), detail: role },
  { method: 'POST', path: '/api/v1/accounts/:name/role', action: 'account.set-role', target: p('name'), detail: role },
  { method: 'POST', path: '/api/v1/accounts/:name/disable', action: 'account.disable', target: p('name') },
  { method: 'POST', path: '/api/v1/accounts/:name/enable', action: 'account.enable', target: p('name') },
  { method: 'DELETE', path: '/api/v1/accounts/:name', action: 'account.remove', target: p('name') },
  // workloads
  { method: 'POST', path: '/api/v1/projects', action: 'project.deploy', target: b('name'), detail: (body) => (str(field(body, 'replicas')) ? `replicas=${str(field(body, 'replicas'))}` : null) },
  { method: 'DELETE', path: '/api/v1/projects/:name', action: 'project.remove', target: p('name') },
  // nodes
  { method: 'POST', path: '/api/v1/nodes/enrollments', action: 'node.enrollment', target: b('nodeId') },
  { method: 'POST', path: '/api/v1/join-tokens', action: 'join-token.create', detail: (body) => (str(field(body, 'namePattern')) ? `pattern=${str(field(body, 'namePattern'))}` : null), result: (a) => str(field(a, 'id')) },
  { method: 'DELETE', path: '/api/v1/join-tokens/:id', action: 'join-token.revoke', target: p('id') },
  { method: 'DELETE', path: '/api/v1/nodes/:name', action: 'node.remove', target: p('name') },
  { method: 'POST', path: '/api/v1/nodes/:name/revoke', action: 'node.revoke', target: p('name') },
  { method: 'POST', path: '/api/v1/nodes/:name/rotate', action: 'node.rotate', target: p('name') },
  { method: 'POST', path: '/api/v1/nodes/:name/rebind', action: 'node.rebind', target: p('name') },
  { method: 'POST', path: '/api/v1/nodes/:name/drain', action: 'node.drain', target: p('name'), detail: (body) => (field(body, 'drained') === false ? 'undrain' : null) },
  // cloud
  { method: 'POST', path: '/api/v1/cloud/connections', action: 'cloud.connect', target: b('provider') },
  { method: 'DELETE', path: '/api/v1/cloud/connections/:provider', action: 'cloud.disconnect', target: p('provider') },
  { method: 'POST', path: '/api/v1/cloud/provisions', action: 'cloud.provision', target: b('name'), detail: (body) => [field(body, 'provider'), field(body, 'region'), field(body, 'size')].map(str).filter(Boolean).join(' ') || null },
  { method: 'DELETE', path: '/api/v1/cloud/provisions/:id', action: 'cloud.release', target: p('id') },
  { method: 'PUT', path: '/api/v1/cloud/scaling', action: 'cloud.scaling', detail: (body) => (typeof field(body, 'enabled') === 'boolean' ? `enabled=${field(body, 'enabled')}` : null) },
  // releases and rollouts: what the fleet runs
  { method: 'POST', path: '/api/v1/releases/uploads', action: 'release.upload', result: (a) => str(field(a, 'upload')) },
  { method: 'POST', path: '/api/v1/releases', action: 'release.add', target: (_, body) => str(field(field(field(body, 'release'), 'manifest'), 'version')), detail: (body) => [field(field(field(body, 'release'), 'manifest'), 'arch'), field(field(field(body, 'release'), 'manifest'), 'sequence')].map(str).filter(Boolean).join(' sequence ') || null },
  { method: 'POST', path: '/api/v1/releases/keys', action: 'release.key.add', target: b('kid'), detail: (body) => (str(field(body, 'endorsedBy')) ? `endorsed by ${str(field(body, 'endorsedBy'))}` : null) },
  { method: 'POST', path: '/api/v1/rollouts', action: 'rollout.start', target: b('version'), result: (a) => str(field(a, 'id')) },
  { method: 'POST', path: '/api/v1/rollouts/:id/pause', action: 'rollout.pause', target: p('id') },
  { method: 'POST', path: '/api/v1/rollouts/:id/resume', action: 'rollout.resume', target: p('id') },
  { method: 'POST', path: '/api/v1/rollouts/:id/cancel', action: 'rollout.cancel', target: p('id') },
  // federation: the controller's verbs, and what reaches an office
  { method: 'POST', path: '/api/v1/federation/join-tokens', action: 'federation.token.mint', target: b('officeId'), detail: (body) => (field(body, 'rotate') === true ? 'rotate' : null) },
  { method: 'POST', path: '/api/v1/federation/join-tokens/:officeId/revoke', action: 'federation.token.revoke', target: p('officeId') },
  { method: 'POST', path: '/api/v1/federation/offices/:officeId/vouch', action: 'federation.vouch', target: p('officeId') },
  { method: 'POST', path: '/api/v1/federation/offices/:officeId/projects', action: 'federation.place', target: (params, body) => `${str(params.officeId)}/${str(field(body, 'name')) ?? '?'}` },
  { method: 'POST', path: '/api/office/vouch', action: 'federation.vouch.redeem', anonymous: { principal: UNKNOWN_PRINCIPAL, kind: 'anonymous' }, notes: true },
  { method: 'POST', path: '/office/vouch', action: 'federation.vouch.redeem', anonymous: { principal: UNKNOWN_PRINCIPAL, kind: 'anonymous' }, notes: true },
  { method: 'POST', path: '/api/office/calls', action: 'federation.placed', target: (_, body) => str(field(field(body, 'payload'), 'name')), anonymous: { principal: CONTROLLER_PRINCIPAL, kind: 'controller' } },
]

/**
 * Writes that are not an operator's: node and office protocol, authenticated
 * by their own credentials and kept in their own records (`nodes audit`, the
 * controller's office directory); and the sign-in flows, which audit themselves.
 */
export const UNAUDITED_WRITES: { method: string; path: string }[] = [
  { method: 'POST', path: '/api/v1/nodes/enroll' },
  { method: 'POST', path: '/api/v1/nodes/register' },
  { method: 'POST', path: '/api/v1/nodes/renew' },
  { method: 'POST', path: '/api/v1/nodes/trust' },
  { method: 'POST', path: '/api/v1/nodes/self/logs/:id' },
  { method: 'POST', path: '/api/v1/nodes/self' },
  { method: 'POST', path: '/api/v1/nodes/self/update' },
  { method: 'POST', path: '/api/v1/nodes/self/agent' },
  // The parts of an upload: its start and the release it becomes are audited.
  { method: 'PUT', path: '/api/v1/releases/uploads/:upload/:part' },
  { method: 'POST', path: '/api/v1/nodes/identity-challenge' },
  { method: 'POST', path: '/api/v1/federation/register' },
  { method: 'POST', path: '/api/v1/federation/heartbeat' },
  // Sign-in with the identity provider: its pipeline (src/sso/signin.ts) writes sso.login itself,
  // with the provider's subject and issuer, for each sign-in and each refusal.
  { method: 'POST', path: '/auth/oidc/cli' },
  { method: 'POST', path: '/auth/oidc/cli/redeem' },
  { method: 'POST', path: '/auth/oidc/device' },
  { method: 'POST', path: '/auth/oidc/device/poll' },
]

interface Compiled {
  route: AuditedRoute | null
  re: RegExp
  names: string[]
  method: string
}

const compile = (method: string, path: string, route: AuditedRoute | null): Compiled => {
  const names: string[] = []
  const re = new RegExp(`^${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:([A-Za-z]+)/g, (_, n: string) => (names.push(n), '([^/]+)'))}/?$`)
  return { route, re, names, method }
}

const TABLE: Compiled[] = [...AUDITED_ROUTES.map((r) => compile(r.method, r.path, r)), ...UNAUDITED_WRITES.map((r) => compile(r.method, r.path, null))]

export type RouteMatch = { route: AuditedRoute; params: Record<string, string> } | { route: null } | undefined

/** The action of a write no route describes: its method and path, anything but a path's own characters shown as `?`. */
export function unknownAction(method: string, path: string): string {
  return `${method.replace(/[^A-Z]/g, '?').slice(0, 10)} ${path.slice(0, 200).replace(/[^\w.~%/:@!$&'()*+,;=-]/g, '?')}`
}

/** The audited route of a request (with its path parameters), `{route: null}` for node/office protocol, undefined for an unknown write. */
export function matchAudited(method: string, path: string): RouteMatch {
  for (const c of TABLE) {
    if (c.method !== method) continue
    const m = c.re.exec(path)
    if (!m) continue
    if (!c.route) return { route: null }
    const params: Record<string, string> = {}
    c.names.forEach((n, i) => {
      try {
        params[n] = decodeURIComponent(m[i + 1]!)
      } catch {
        params[n] = m[i + 1]!
      }
    })
    return { route: c.route, params }
  }
  return undefined
}
