// Cloud routes (docs/cloud.md): connections, regions and sizes, provisions, and
// automatic scale-out. Credentials go in and are never sent back.
import { Elysia } from 'elysia'
import * as v from 'valibot'
import { servedBinary } from '../../bootstrap/served-binary.ts'
import { Connect, isProvider, Provision, PROVIDERS, Scaling, Slug, type ProviderName } from '../../wire/cloud.ts'
import { actorFrom } from '../../cloud/audit.ts'
import { checkCidr, platformSource } from '../../cloud/inbound.ts'
import { MusterError } from '../../errors.ts'
import type { Permission } from '../../wire/permissions.ts'
import { principalCan } from '../../auth/auth.ts'
import type { Services } from '../services.ts'
import { parseBody } from '../../wire/validate.ts'

const providerParam = (p: string): ProviderName => {
  if (!isProvider(p)) throw new MusterError('not-found', `No cloud provider ${p}; known: ${PROVIDERS.join(', ')}.`)
  return p
}

export const cloudRoutes = (platform: Services) => {
  const need = (request: Request, perm: Permission) => platform.auth.require(request.headers, perm)
  const cloud = () => platform.cloud
  return new Elysia({ name: 'routes/cloud', prefix: '/api/v1/cloud' })
    .get('/status', ({ request }) => need(request, 'server.cloud.view').then(() => cloud().status()))
    .post('/connections', async ({ request, body }) => {
      const who = await need(request, 'server.cloud.connect')
      const b = parseBody(Connect, body)
      return cloud().connect(b.provider, b.credentials, who)
    })
    .delete('/connections/:provider', async ({ request, params }) => {
      const who = await need(request, 'server.cloud.connect')
      return cloud().disconnect(providerParam(params.provider), who)
    })
    .get('/providers/:provider/regions', ({ request, params }) => need(request, 'server.cloud.view').then(() => cloud().regions(providerParam(params.provider))))
    .get('/providers/:provider/sizes', async ({ request, params, query }) => {
      await need(request, 'server.cloud.view')
      const region = query.region === undefined ? undefined : parseBody(v.object({ region: Slug('region') }), { region: query.region }).region
      return cloud().sizes(providerParam(params.provider), region)
    })
    // Only a reader who may manage machines moves provisions on (provider calls) before the answer; others see the last reconcile.
    .get('/provisions', ({ request }) => need(request, 'server.cloud.view').then((p) => cloud().provisioner.list({ reconcile: principalCan(p, 'server.cloud.manage') })))
    .post('/provisions', async ({ request, body }) => {
      const who = await need(request, 'server.cloud.manage')
      const { probe, allowSshInbound, ...input } = parseBody(Provision, body)
      const sshFrom = allowSshInbound === undefined ? null : checkCidr(allowSshInbound, 'allowSshInbound')
      const agentFrom = probe ? await platformSource(platform.fabric.enrollment?.url) : null
      return cloud().provisioner.request(input, actorFrom(who), { agentFrom, sshFrom })
    })
    .get('/provisions/:id', ({ request, params }) => need(request, 'server.cloud.view').then((p) => cloud().provisioner.show(params.id, { reconcile: principalCan(p, 'server.cloud.manage') })))
    .delete('/provisions/:id', async ({ request, params }) => cloud().provisioner.release(params.id, actorFrom(await need(request, 'server.cloud.manage'))))
    .get('/audit', ({ request }) => need(request, 'server.cloud.view').then(() => cloud().audit()))
    .get('/scaling', ({ request }) => need(request, 'server.cloud.view').then(() => cloud().autoscaler.view()))
    .put('/scaling', async ({ request, body }) => {
      const who = await need(request, 'server.cloud.connect')
      return cloud().autoscaler.configure(parseBody(Scaling, body), actorFrom(who))
    })
    // Anonymous on purpose: a machine being created downloads muster here, and checks its SHA-256 from its first-boot data.
    .get('/binary', () => {
      const exe = servedBinary()
      if (!exe) throw new MusterError('not-found', 'This Platform is not a compiled muster binary; set MUSTER_CLOUD_BINARY_URL for created machines.')
      return new Response(Bun.file(exe), { headers: { 'content-type': 'application/octet-stream' } })
    })
}
