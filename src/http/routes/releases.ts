// Releases and rollouts (docs/upgrading.md): operators add releases and steer
// rollouts (server.releases.manage: superadmin), everyone who sees nodes reads
// them; nodes fetch their directive and the binary, and report each step.
import { Elysia } from 'elysia'
import { MusterError } from '../../errors.ts'
import type { Services } from '../services.ts'
import { AddRelease, AddReleaseKey, AgentFacts, StartUpload, isSha256 } from '../../wire/releases.ts'
import { StartRollout, UpdateReport } from '../../wire/rollouts.ts'
import { parseBody } from '../../wire/validate.ts'

const ROLLOUT_ID = /^([a-z2-7]{12}|latest)$/

export const releaseRoutes = (platform: Services) => {
  const releases = () => platform.releases
  const rollouts = () => platform.rollouts
  const manage = (request: Request) => platform.auth.require(request.headers, 'server.releases.manage')
  const view = (request: Request) => platform.auth.require(request.headers, 'server.nodes.view')
  const who = (p: { account: string | null; name: string }) => p.account ?? p.name
  // A path parameter the router could not decode (`%ZZ`) arrives as null: not a rollout either.
  const rolloutId = (id: string | null) => {
    if (typeof id !== 'string' || !ROLLOUT_ID.test(id)) throw new MusterError('not-found', 'No such rollout (a rollout id is 12 characters: muster rollouts list).')
    return id
  }
  return new Elysia({ name: 'routes/releases', prefix: '/api/v1' })
    .get('/releases', ({ request }) => view(request).then(() => releases().list()))
    .post('/releases/uploads', async ({ request, body }) => {
      await manage(request)
      parseBody(StartUpload, body)
      return releases().startUpload()
    })
    .put(
      '/releases/uploads/:upload/:part',
      async ({ request, params }) => {
        await manage(request)
        if (typeof params.part !== 'string' || !/^\d{1,6}$/.test(params.part)) throw new MusterError('invalid-request', 'Invalid part: expected a whole number', { field: 'part' })
        return releases().uploadPart(String(params.upload), Number(params.part), new Uint8Array(await request.arrayBuffer()))
      },
      { parse: 'none' },
    )
    .post('/releases', async ({ request, body }) => {
      const p = await manage(request)
      return releases().addRelease(parseBody(AddRelease, body), who(p))
    })
    .post('/releases/keys', async ({ request, body }) => {
      const p = await manage(request)
      return releases().addKey(parseBody(AddReleaseKey, body), who(p))
    })
    .get('/rollouts', ({ request }) => view(request).then(() => rollouts().list()))
    .post('/rollouts', async ({ request, body }) => {
      const p = await manage(request)
      return rollouts().start(parseBody(StartRollout, body), who(p))
    })
    .get('/rollouts/:id', ({ request, params, query }) => view(request).then(() => rollouts().view(rolloutId(params.id), { nodes: query.nodes === 'watch' ? 'watch' : 'all' })))
    .post('/rollouts/:id/pause', ({ request, params }) => manage(request).then(() => rollouts().steer(rolloutId(params.id), 'pause')))
    .post('/rollouts/:id/resume', ({ request, params }) => manage(request).then(() => rollouts().steer(rolloutId(params.id), 'resume')))
    .post('/rollouts/:id/cancel', ({ request, params }) => manage(request).then(() => rollouts().steer(rolloutId(params.id), 'cancel')))
    // nodes (their credential)
    .get('/nodes/self/directive', async ({ request }) => {
      const node = await platform.fabric.authenticateNode(request.headers)
      const agent = await rollouts().nodeAgent(node.name)
      return { directive: await rollouts().directive(node.name, agent?.arch) }
    })
    .get('/nodes/self/release/:sha256', async ({ request, params, query }) => {
      await platform.fabric.authenticateNode(request.headers)
      if (typeof params.sha256 !== 'string' || !isSha256(params.sha256)) throw new MusterError('not-found', 'No such release.')
      const from = typeof query.from === 'string' && isSha256(query.from) ? query.from : undefined
      return releases().download(params.sha256, from)
    })
    .post('/nodes/self/update', async ({ request, body }) => {
      const node = await platform.fabric.authenticateNode(request.headers)
      await rollouts().report(node.name, parseBody(UpdateReport, body))
      return { ok: true as const }
    })
    .post('/nodes/self/agent', async ({ request, body }) => {
      const node = await platform.fabric.authenticateNode(request.headers)
      await rollouts().agentFacts(node.name, parseBody(AgentFacts, body))
      return { ok: true as const }
    })
}
