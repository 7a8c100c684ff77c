// Paged listings of projects and of the enrollment audit; the
// node listing pages in src/fabric/listing.ts. Same parameters everywhere:
// `limit` (default 1000, at most 5000) and `cursor` (from `nextCursor`).
import type { Fabric } from '../fabric/fabric.ts'
import { MusterError } from '../errors.ts'
import { encodeCursor, pageOf, pageQuery, queryText } from '../wire/paging.ts'
import { NODE_NAME } from '../wire/validate.ts'
import type { EnrollAuditPage } from '../wire/nodes.ts'

/** Projects in name order; `q` keeps the names that start with it. */
export function projectPage<P extends { name: string }, V>(all: P[], query: Record<string, unknown>, view: (p: P) => V): { projects: V[]; nextCursor: string | null } {
  const page = pageQuery(query, NODE_NAME)
  const q = queryText(query, 'q')
  if (q !== undefined && !/^[a-z0-9-]{0,63}$/.test(q)) throw new MusterError('invalid-request', 'Invalid q: expected the start of a project name (lowercase letters, digits, dashes)', { field: 'q' })
  const sorted = all.filter((p) => !q || p.name.startsWith(q)).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  const { items, nextCursor } = pageOf(sorted, (p) => p.name, page)
  return { projects: items.map(view), nextCursor }
}

/** The audit, newest first; the cursor is the id of the last entry given (entries added meanwhile do not shift the pages). */
export async function auditPage(fabric: Fabric, query: Record<string, unknown>): Promise<EnrollAuditPage> {
  const page = pageQuery(query, /^[1-9]\d{0,15}$/)
  const all = await fabric.auditEntries()
  const start = page.after === undefined ? 0 : all.findIndex((e) => e.id < Number(page.after))
  const items = start < 0 ? [] : all.slice(start, start + page.limit)
  const more = start >= 0 && start + page.limit < all.length
  return { entries: items.map(({ id: _id, ...e }) => e), nextCursor: more ? encodeCursor(String(items[items.length - 1]!.id)) : null }
}
