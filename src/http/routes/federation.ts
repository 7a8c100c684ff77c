// Controller routes: office tokens, the directory, vouches, placements and
// break-glass reports (operators), and registration/heartbeat (offices: the
// token is the credential). Office-side routes are mounted from office.ts.
import { Elysia } from 'elysia'
import * as v from 'valibot'
import { sendPlaceCall } from '../../federation/calls.ts'
import { PlacedProjectSpec } from '../../federation/placed-projects.ts'
import { MintOfficeToken, OfficeHeartbeatBody, OfficeId, OfficeRegisterBody } from '../../wire/federation.ts'
import type { Services } from '../services.ts'
import { parseBody } from '../../wire/validate.ts'
import { officeRoutes } from './office.ts'

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
          return controller().mint(parseBody(MintOfficeToken, body))
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
        .post('/register', ({ body }) => controller().register(parseBody(OfficeRegisterBody, body)))
        .post('/heartbeat', ({ body }) => controller().heartbeat(parseBody(OfficeHeartbeatBody, body))),
    )
    .use(officeRoutes(platform))
}
