// The audit, for server.audit.view: newest first, paged by the id
// of the last entry given; `after` (an entry id) gives the entries newer than
// it, oldest first, which is how `muster audit --follow` streams.
import { Elysia } from 'elysia'
import { MusterError } from '../../errors.ts'
import type { Services } from '../services.ts'
import { encodeCursor, pageQuery, queryText } from '../../wire/paging.ts'
import type { AuditPage } from '../../wire/accounts.ts'

const ID = /^[1-9]\d{0,15}$/

function bad(field: string, what: string): MusterError {
  return new MusterError('invalid-request', `Invalid ${field}: ${what}`, { field })
}

export function auditQuery(query: Record<string, unknown>) {
  const page = pageQuery(query, ID)
  const since = queryText(query, 'since')
  const principal = queryText(query, 'principal')
  const action = queryText(query, 'action')
  const after = queryText(query, 'after')
  if (since !== undefined && !Number.isFinite(Date.parse(since))) throw bad('since', 'expected an ISO 8601 time like 2026-12-01T10:00:00Z')
  if (principal !== undefined && !/^[^\u0000-\u001f]{1,200}$/.test(principal)) throw bad('principal', 'expected an account or token name')
  if (action !== undefined && !/^[A-Za-z0-9._ /:-]{1,200}$/.test(action)) throw bad('action', 'expected an action like node.drain, or its start like node')
  if (after !== undefined && !/^(0|[1-9]\d{0,15})$/.test(after)) throw bad('after', 'expected an entry id')
  return {
    limit: page.limit,
    ...(page.after !== undefined ? { before: Number(page.after) } : {}),
    ...(since !== undefined ? { since: Date.parse(since) } : {}),
    ...(principal !== undefined ? { principal } : {}),
    ...(action !== undefined ? { action } : {}),
    ...(after !== undefined ? { after: Number(after) } : {}),
  }
}

export const auditRoutes = (platform: Services) =>
  new Elysia({ name: 'routes/audit' }).get('/api/v1/audit', async ({ request, query }) => {
    await platform.auth.require(request.headers, 'server.audit.view')
    const f = auditQuery(query)
    // One more than the page holds says whether another page follows.
    const rows = await platform.audit.search({ ...f, limit: f.limit + 1 })
    const entries = rows.slice(0, f.limit)
    const more = f.after === undefined && rows.length > f.limit
    const page: AuditPage = { entries, nextCursor: more ? encodeCursor(String(entries[entries.length - 1]!.id)) : null }
    return page
  })
