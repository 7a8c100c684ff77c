// Controller routes: office tokens, the directory, vouches, placements and
// break-glass reports (operators), and registration/heartbeat (offices: the
// token is the credential). Office-side routes are mounted from office.ts.
import { Elysia } from 'elysia'
import * as v from 'valibot'
import { sendPlaceCall } from '../../federation/calls.ts'
import { OFFICE_ID } from '../../federation/formats.ts'
import { PlacedProjectSpec } from '../../federation/placed-projects.ts'
import { HeartbeatBody, RegisterBody } from '../../wire/federation.ts'
import type { Services } from '../services.ts'
import { parseBody } from '../../wire/validate.ts'
import { officeRoutes } from './office.ts'

const OfficeId = v.pipe(v.string(), v.regex(OFFICE_ID, 'expected an office id like office-a (lowercase letters, digits, dashes; at most 63)'))
const MintToken = v.object({
  officeId: OfficeId,
  label: v.optional(v.pipe(v.string(), v.maxLength(64))),
  note: v.optional(v.pipe(v.string(), v.maxLength(256))),
  rotate: v.optional(v.boolean()),
})

function officeParam(id: string): string {
  return parseBody(v.object({ officeId: OfficeId }), { officeId: id }).officeId
}

export const federationRoutes = (platform: Services) => {
  const controller = () => platform.federation.controller
  const need = (headers: Headers, perm: 'server.federation.view' | 'server.federation.manage') => platform.auth.require(headers, perm)
  return new Elysia({ name: 'routes/federation' })
    .group('/api/v1/federation', (app) =>
      app
        .post('/join-tokens', async ({ body, request }) => {
          await need(request.headers, 'server.federation.manage') // held by superadmin only
          return controller().mint(parseBody(MintToken, body))
        })
        .get('/join-tokens', async ({ request }) => {
          await need(request.headers, 'server.federation.view')
          return controller().tokens()
        })
        .post('/join-tokens/:officeId/revoke', async ({ params, request }) => {
          await need(request.headers, 'server.federation.manage')
          return controller().revoke(officeParam(params.officeId))
        })
        .get('/offices', async ({ request }) => {
          await need(request.headers, 'server.federation.view')
          return controller().offices()
        })
        .post('/offices/:officeId/vouch', async ({ params, request }) => {
          const caller = await platform.auth.require(request.headers, 'server.federation.vouch') // the vouch names this caller, nobody else, with its role
          return controller().vouch(officeParam(params.officeId), caller)
        })
        .post('/offices/:officeId/projects', async ({ params, body, request }) => {
          await need(request.headers, 'server.federation.manage')
          return sendPlaceCall(controller(), officeParam(params.officeId), parseBody(PlacedProjectSpec, body), platform.now())
        })
        .get('/break-glass', async ({ request }) => {
          await need(request.headers, 'server.federation.view')
          return controller().breakGlassReports()
        })
        // Offices: anonymous, the office token in the body is the credential.
        .post('/register', ({ body }) => controller().register(parseBody(RegisterBody, body)))
        .post('/heartbeat', ({ body }) => controller().heartbeat(parseBody(HeartbeatBody, body))),
    )
    .use(officeRoutes(platform))
}
