// Workload routes (docs/workloads.md): projects for operators, signed assignments for nodes.
import { Elysia } from 'elysia'
import { MusterError } from '../../errors.ts'
import type { Services } from '../services.ts'
import { parseBody } from '../../wire/validate.ts'
import { ProjectSpec } from '../../wire/projects.ts'
import { projectFor } from '../../projects/redact.ts'
import { projectPage } from '../pages.ts'
import { principalName } from '../../auth/auth.ts'

export const projectRoutes = (platform: Services) => {
  const projects = () => platform.projects
  const need = (request: Request, perm: 'server.projects.view' | 'server.projects.manage') => platform.auth.require(request.headers, perm)
  const projectName = (name: string) => {
    if (!/^[a-z0-9][a-z0-9-]{0,62}$/.test(name)) throw new MusterError('not-found', `No project named ${name}.`)
    return name
  }
  return new Elysia({ name: 'routes/projects', prefix: '/api/v1' })
    .get('/projects', async ({ request, query }) => {
      const { role } = await need(request, 'server.projects.view')
      return projectPage(projects().list().projects, query, (p) => projectFor(p, role))
    })
    .post('/projects', async ({ request, body }) => {
      const who = await need(request, 'server.projects.manage')
      // Who deployed it decides whether it may run on the local node (a superadmin only; docs/security.md).
      return projects().deploy({ ...parseBody(ProjectSpec, body), deployedBy: { name: principalName(who), role: who.role } })
    })
    .get('/projects/:name', async ({ request, params }) => {
      const { role } = await need(request, 'server.projects.view')
      return projectFor(projects().show(projectName(params.name)), role)
    })
    .delete('/projects/:name', ({ request, params }) => need(request, 'server.projects.manage').then(() => projects().remove(projectName(params.name))))
    .get('/shortfall', ({ request }) => need(request, 'server.projects.view').then(() => projects().shortfall()))
    .get('/nodes/self/assignments', async ({ request, query }) => {
      const node = await platform.fabric.authenticateNode(request.headers)
      const after = query.after !== undefined && /^\d{1,12}$/.test(String(query.after)) ? Number(query.after) : undefined
      const wait = query.wait !== undefined && /^\d{1,3}$/.test(String(query.wait)) ? Math.min(Number(query.wait), 60) * 1000 : 0
      return projects().assignments(node.name, after, wait)
    })
}
