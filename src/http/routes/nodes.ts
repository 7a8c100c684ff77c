// Enrollment authority routes (SPEC §6).
import { Elysia } from 'elysia'
import { noteAudit } from '../audit-hook.ts'
import * as v from 'valibot'
import type { Services } from '../../services.ts'
import { enroll } from '../../fabric/enroll.ts'
import { renewCredential } from '../../fabric/renew.ts'
import { credentialState } from '../../fabric/node-state.ts'
import { createFleetToken, issueEnrollment, listFleetTokenViews, revokeJoinTokenById } from '../../fabric/join-tokens.ts'
import { NAME_PATTERN } from '../../fabric/glob.ts'
import { NodeName, parseBody } from '../validate.ts'
import { nodeQuery } from '../../fabric/listing.ts'
import { auditPage } from '../pages.ts'
import { MusterError } from '../../errors.ts'
import type { Permission } from '../../auth/permissions.ts'
import { nodeCommands } from '../../bootstrap/commands.ts'

const CreateEnrollment = v.object({
  nodeId: NodeName,
  ttlMinutes: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(1440, 'at most 1440 minutes (24 hours)'))),
  replace: v.optional(v.boolean()),
})
const CreateJoinToken = v.object({
  maxUses: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(1_000_000))),
  namePattern: v.optional(v.pipe(v.string(), v.regex(NAME_PATTERN, 'expected a glob of name characters, * and ?, like rack1-*'))),
  ttlMinutes: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(43200, 'at most 43200 minutes (30 days)'))),
  label: v.optional(v.pipe(v.string(), v.maxLength(100))),
})
const Capacity = v.object({
  cpuMillis: v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(10_000_000)),
  memoryMB: v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(1_000_000_000)),
})
const ReplicaStatus = v.object({
  project: v.pipe(v.string(), v.maxLength(100)),
  replica: v.pipe(v.number(), v.integer(), v.minValue(0)),
  state: v.picklist(['pending', 'running', 'failed', 'stopped']),
  exitCode: v.optional(v.nullable(v.number())),
  revision: v.optional(v.number()),
})
export const Register = v.object({
  nodeId: v.optional(NodeName),
  version: v.optional(v.pipe(v.string(), v.regex(/^\d{1,6}\.\d{1,6}\.\d{1,6}([-+][0-9A-Za-z.-]{1,64})?$/, 'expected X.Y.Z'))),
  capacity: v.optional(Capacity),
  replicas: v.optional(v.pipe(v.array(ReplicaStatus), v.maxLength(10_000))),
})
const Rebind = v.object({ ttlMinutes: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(1440))) })
const Drain = v.object({ drained: v.optional(v.boolean()) })

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
      // What to run on the machine (SPEC §17.1): the join line and the bootstrap line, without the token.
      return { ...e, ...nodeCommands(platform, e.nodeId) }
    })
    .post('/join-tokens', async ({ request, body }) => {
      await need(request, 'server.nodes.enroll')
      return { ...(await createFleetToken(fabric, parseBody(CreateJoinToken, body))), ...nodeCommands(platform, null) }
    })
    .get('/join-tokens', ({ request }) => need(request, 'server.nodes.view').then(() => listFleetTokenViews(fabric)))
    .delete('/join-tokens/:id', ({ request, params }) => need(request, 'server.nodes.enroll').then(() => revokeJoinTokenById(fabric, params.id)))
    .post('/nodes/enroll', async ({ body }) => {
      fabric.requireEnrollment()
      return enroll(fabric, body)
    })
    .post('/nodes/register', ({ request, body }) => fabric.heartbeat(request.headers, parseBody(Register, body)))
    .post('/nodes/renew', ({ request, body }) => renewCredential(fabric, request.headers, body))
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
      // The way back for the machine: the same two lines as a new enrollment (SPEC §17.1).
      return { ...r, ...nodeCommands(platform, r.nodeId) }
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
