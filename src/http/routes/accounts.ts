// Accounts for people, under server.accounts.manage: list, add with
// a role, change role, disable/enable, remove.
import { Elysia } from 'elysia'
import { Accounts } from '../../auth/accounts.ts'
import { AddAccount, SetRole } from '../../wire/accounts.ts'
import { ACCOUNT_NAME } from '../../auth/auth.ts'
import { MusterError } from '../../errors.ts'
import type { Services } from '../services.ts'
import { parseBody } from '../../wire/validate.ts'

export const accountRoutes = (platform: Services) => {
  const accounts = new Accounts(platform.ctx.store, platform.now)
  const manage = (request: Request) => platform.auth.require(request.headers, 'server.accounts.manage')
  const name = (params: { name: string }) => {
    if (!ACCOUNT_NAME.test(params.name)) throw new MusterError('not-found', `No account named ${params.name.slice(0, 80)}.`)
    return params.name
  }
  return new Elysia({ name: 'routes/accounts', prefix: '/api/v1/accounts' })
    .get('', async ({ request }) => (await manage(request), accounts.list()))
    .post('', async ({ request, body }) => (await manage(request), accounts.create(parseBody(AddAccount, body))))
    .post('/:name/role', async ({ request, params, body }) => (await manage(request), accounts.setRole(name(params), parseBody(SetRole, body).role)))
    .post('/:name/disable', async ({ request, params }) => (await manage(request), accounts.setDisabled(name(params), true)))
    .post('/:name/enable', async ({ request, params }) => (await manage(request), accounts.setDisabled(name(params), false)))
    .delete('/:name', async ({ request, params }) => (await manage(request), accounts.remove(name(params))))
}
