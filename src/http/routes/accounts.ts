// Accounts for people, under server.accounts.manage: list, add with
// a role, change role, disable/enable, remove.
import { Elysia } from 'elysia'
import { Accounts } from '../../auth/accounts.ts'
import { AddAccount, SetRole } from '../../wire/accounts.ts'
import { ACCOUNT_NAME, vouchedRefusal } from '../../auth/auth.ts'
import { isRole, lowerRole } from '../../wire/permissions.ts'
import { MusterError } from '../../errors.ts'
import type { Services } from '../services.ts'
import { parseBody } from '../../wire/validate.ts'
import { noteAudit } from '../audit-hook.ts'
import { getAccount } from '../../store/accounts.ts'

export const accountRoutes = (platform: Services) => {
  const accounts = new Accounts(platform.ctx.store, platform.now)
  const manage = (request: Request) => platform.auth.require(request.headers, 'server.accounts.manage')
  /** Granting (a new account, a higher role, an enabled account) logs in after the session: never by a vouched one. */
  const grant = async (request: Request, what: string) => {
    const p = await manage(request)
    if (p.vouched) throw vouchedRefusal(what)
    return p
  }
  const name = (params: { name: string }) => {
    if (!ACCOUNT_NAME.test(params.name)) throw new MusterError('not-found', `No account named ${params.name.slice(0, 80)}.`)
    return params.name
  }
  /** Disabling a disabled account (enabling an enabled one) changes nothing: no action in the audit. */
  const unchangedIf = async (request: Request, params: { name: string }, disabled: boolean) => {
    const row = await getAccount(platform.ctx.store, name(params))
    if (row && Boolean(row.disabled) === disabled) noteAudit(request, { unchanged: true })
  }
  return new Elysia({ name: 'routes/accounts', prefix: '/api/v1/accounts' })
    .get('', async ({ request }) => (await manage(request), accounts.list()))
    .post('', async ({ request, body }) => (await grant(request, 'adding an account'), accounts.create(parseBody(AddAccount, body))))
    .post('/:name/role', async ({ request, params, body }) => {
      const p = await manage(request)
      const role = parseBody(SetRole, body).role
      const current = (await getAccount(platform.ctx.store, name(params)))?.role
      if (current === role) noteAudit(request, { unchanged: true })
      // Lowering a role ends access; raising one grants it.
      else if (p.vouched && !(current && isRole(current) && lowerRole(role, current) === role)) throw vouchedRefusal('raising a role')
      return accounts.setRole(name(params), role)
    })
    .post('/:name/disable', async ({ request, params }) => (await manage(request), await unchangedIf(request, params, true), accounts.setDisabled(name(params), true)))
    .post('/:name/enable', async ({ request, params }) => (await grant(request, 'enabling an account'), await unchangedIf(request, params, false), accounts.setDisabled(name(params), false)))
    .delete('/:name', async ({ request, params }) => (await manage(request), accounts.remove(name(params))))
}
