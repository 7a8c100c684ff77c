// Replica logs: operators read them through any Platform;
// nodes fetch the requests meant for them and send back what was asked for.
import { Elysia } from 'elysia'
import { MusterError } from '../../errors.ts'
import type { Services } from '../services.ts'
import { DEFAULT_TAIL } from '../../projects/logs.ts'
import { MAX_TAIL_LINES } from '../../replicas/log-files.ts'

const PROJECT = /^[a-z0-9][a-z0-9-]{0,62}$/

function intQuery(raw: unknown, field: string, fallback: number, max: number): number {
  if (raw === undefined || raw === '') return fallback
  if (typeof raw !== 'string' || !/^\d{1,6}$/.test(raw) || Number(raw) > max) throw new MusterError('invalid-request', `Invalid ${field}: expected a whole number from 0 to ${max}`, { field })
  return Number(raw)
}

function boolQuery(raw: unknown, field: string): boolean {
  if (raw === undefined || raw === 'false' || raw === '0') return false
  if (raw === 'true' || raw === '1' || raw === '') return true
  throw new MusterError('invalid-request', `Invalid ${field}: expected true or false`, { field })
}

export const logRoutes = (platform: Services) =>
  new Elysia({ name: 'routes/logs', prefix: '/api/v1' })
    .get('/projects/:name/logs', async ({ request, params, query }) => {
      // Output often carries what the env holds, and env values are for server.projects.manage only (docs/security.md).
      const who = await platform.auth.require(request.headers, 'server.projects.manage')
      if (!PROJECT.test(params.name)) throw new MusterError('not-found', `No project named ${params.name}.`)
      const principal = who.token ? `api-token:${who.token.id}` : `${who.kind}:${who.account ?? who.name}`
      if (typeof query.cursor === 'string' && query.cursor !== '') return platform.logs.next(params.name, query.cursor, principal)
      const replica = intQuery(query.replica, 'replica', 0, 100_000)
      const tail = intQuery(query.tail, 'tail', DEFAULT_TAIL, MAX_TAIL_LINES)
      if (boolQuery(query.follow, 'follow')) return platform.logs.follow(params.name, replica, tail, principal)
      return platform.logs.tail(params.name, replica, tail, principal)
    })
    .get('/nodes/self/log-requests', async ({ request }) => platform.logs.pendingFor(await platform.fabric.authenticateNode(request.headers)))
    .post('/nodes/self/logs/:id', async ({ request, params, body }) => platform.logs.upload(await platform.fabric.authenticateNode(request.headers), params.id, body))
