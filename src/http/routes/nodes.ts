// Enrollment authority routes (docs/nodes.md).
import { Elysia } from 'elysia'
import { noteAudit } from '../audit-hook.ts'
import type { Services } from '../services.ts'
import { enroll } from '../../fabric/enroll.ts'
import { renewCredential } from '../../fabric/renew.ts'
import { credentialState } from '../../fabric/node-state.ts'
import { createFleetToken, issueEnrollment, listFleetTokenViews, revokeJoinTokenById } from '../../fabric/join-tokens.ts'
import { parseBody } from '../../wire/validate.ts'
import { CreateEnrollment, CreateJoinToken, Drain, IdentityChallengeBody, Rebind, Register, type Enrollment, type FleetToken } from '../../wire/nodes.ts'
import { nodeQuery } from '../../fabric/listing.ts'
import { auditPage } from '../pages.ts'
import { MusterError } from '../../errors.ts'
import { countEnroll, countHeartbeatRefusal, countRenewal } from '../../metrics/platform.ts'
import type { Permission } from '../../wire/permissions.ts'
import { nodeCommands } from '../../bootstrap/join-lines.ts'

/** `?force=true` (or 1); anything else that is not false is a bad request. */
function forceOf(raw: unknown): boolean {
  if (raw === undefined || raw === 'false' || raw === '0') return false
  if (raw === 'true' || raw === '1' || raw === '') return true
  throw new MusterError('invalid-request', 'Invalid force: expected true or false', { field: 'force' })
}

export const nodeRoutes = (platform: Services) => {
  const fabric = platform.fabric
  const need = (request: Request, perm: Permission) => platform.auth.require(request.headers, perm)
  const name = (params: { name: string }) => {
    if (!/^[a-z0-9][a-z0-9-]{0,62}$/.test(params.name)) throw new MusterError('not-found', `No node named ${params.name}.`)
    return params.name
  }
  return new Elysia({ name: 'routes/nodes', prefix: '/api/v1' })
    .get('/nodes', ({ request, query }) => need(request, 'server.nodes.view').then(() => fabric.listNodes(nodeQuery(query))))
    .post('/nodes/enrollments', async ({ request, body }) => {
      await need(request, 'server.nodes.enroll')
      const b = parseBody(CreateEnrollment, body)
      const e = await issueEnrollment(fabric, b.nodeId, b.ttlMinutes, b.replace)
      // What to run on the machine (docs/operations.md): the join line and the bootstrap line, without the token.
      return { ...e, ...nodeCommands(platform, e.nodeId) } satisfies Enrollment
    })
    .post('/join-tokens', async ({ request, body }) => {
      await need(request, 'server.nodes.enroll')
      return { ...(await createFleetToken(fabric, parseBody(CreateJoinToken, body))), ...nodeCommands(platform, null) } satisfies FleetToken
    })
    .get('/join-tokens', ({ request }) => need(request, 'server.nodes.view').then(() => listFleetTokenViews(fabric)))
    .delete('/join-tokens/:id', ({ request, params }) => need(request, 'server.nodes.enroll').then(() => revokeJoinTokenById(fabric, params.id)))
    .post('/nodes/enroll', async ({ body }) => {
      fabric.requireEnrollment()
      return countEnroll(enroll(fabric, body))
    })
    .post('/nodes/identity-challenge', async ({ body }) => {
      fabric.requireEnrollment()
      const { nodeId } = parseBody(IdentityChallengeBody, body)
      if (!fabric.identity) throw new MusterError('not-configured', 'Cloud identity joins are not available on this Platform.')
      const release = fabric.limits.enroll.admit()
      try {
        return await fabric.identity.challenge(nodeId)
      } finally {
        release()
      }
    })
    .post('/nodes/register', ({ request, body }) => countHeartbeatRefusal(fabric.heartbeat(request.headers, parseBody(Register, body))))
    .post('/nodes/renew', ({ request, body }) => countRenewal(renewCredential(fabric, request.headers, body)))
    .post('/nodes/trust', () => fabric.trustKeys())
    .post('/nodes/self', ({ request, body }) => credentialState(fabric, request.headers, body))
    .get('/nodes/platform', ({ request }) => need(request, 'server.nodes.view').then(() => fabric.platformInfo()))
    .get('/nodes/audit', ({ request, query }) => need(request, 'server.nodes.manage').then(() => auditPage(fabric, query)))
    .delete('/nodes/:name', ({ request, params, query }) => need(request, 'server.nodes.manage').then(() => fabric.remove(name(params), forceOf(query.force))))
    .post('/nodes/:name/revoke', async ({ request, params }) => {
      await need(request, 'server.nodes.manage')
      // Revoking a revoked node changes nothing (it keeps the time of its revocation): no action in the audit.
      if ((fabric.registry.get(name(params))?.revokedAt ?? null) !== null) noteAudit(request, { unchanged: true })
      return fabric.revoke(name(params))
    })
    .post('/nodes/:name/rotate', ({ request, params }) => need(request, 'server.nodes.manage').then(() => fabric.rotate(name(params))))
    .post('/nodes/:name/rebind', async ({ request, params, body }) => {
      await need(request, 'server.nodes.manage')
      // It issues an enrollment token: what server.nodes.enroll guards (a vouched session holds neither).
      await need(request, 'server.nodes.enroll')
      const r = await fabric.rebind(name(params), parseBody(Rebind, body).ttlMinutes)
      // The way back for the machine: the same two lines as a new enrollment (docs/operations.md).
      return { ...r, ...nodeCommands(platform, r.nodeId) } satisfies Enrollment
    })
    .post('/nodes/:name/drain', async ({ request, params, body }) => {
      await need(request, 'server.nodes.manage')
      const node = name(params)
      const drained = parseBody(Drain, body).drained ?? true
      // Draining a drained node (or undraining a schedulable one) changes nothing: no action in the audit.
      const entry = fabric.registry.get(node)
      if (entry && fabric.nodeSettings(entry).drained === drained) noteAudit(request, { unchanged: true })
      return fabric.drain(node, drained)
    })
}
