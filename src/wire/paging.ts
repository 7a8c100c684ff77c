// Listings that page: `limit` (default 1000, at most 5000) and an
// opaque `cursor` (the key of the last item a page held, base64url), checked
// before anything is read. A bad value is 400 naming the parameter.
import { MusterError } from '../errors.ts'

export const DEFAULT_LIMIT = 1000
export const MAX_LIMIT = 5000

export interface PageQuery {
  limit: number
  /** The decoded cursor: the key after which the page starts. */
  after?: string
}

type Query = Record<string, unknown>

const badParam = (field: string, what: string) => new MusterError('invalid-request', `Invalid ${field}: ${what}`, { field })

/** A single-valued query parameter (undefined when absent; a repeated one is refused). */
export function queryText(query: Query, name: string): string | undefined {
  const v = query[name]
  if (v === undefined) return undefined
  if (typeof v !== 'string') throw badParam(name, 'give it once')
  return v
}

export function encodeCursor(key: string): string {
  return Buffer.from(key).toString('base64url')
}

/** limit and cursor; `key` says what a decoded cursor must look like. */
export function pageQuery(query: Query, key: RegExp): PageQuery {
  const rawLimit = queryText(query, 'limit')
  let limit = DEFAULT_LIMIT
  if (rawLimit !== undefined) {
    if (!/^\d{1,6}$/.test(rawLimit) || Number(rawLimit) < 1 || Number(rawLimit) > MAX_LIMIT) throw badParam('limit', `expected a whole number from 1 to ${MAX_LIMIT}`)
    limit = Number(rawLimit)
  }
  const rawCursor = queryText(query, 'cursor')
  if (rawCursor === undefined) return { limit }
  const after = /^[A-Za-z0-9_-]{1,200}$/.test(rawCursor) ? Buffer.from(rawCursor, 'base64url').toString('utf8') : ''
  if (!key.test(after) || encodeCursor(after) !== rawCursor) throw badParam('cursor', 'not a cursor this listing gave (pass nextCursor back as it is)')
  return { limit, after }
}

/** Keys in order: an array, or anything that reads its i-th key (the registry's names). */
export interface SortedKeys {
  readonly length: number
  at(i: number): string | undefined
}

/** The first index in sorted `keys` greater than `key` (binary search). */
export function indexAfter(keys: SortedKeys, key: string): number {
  let lo = 0
  let hi = keys.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (keys.at(mid)! <= key) lo = mid + 1
    else hi = mid
  }
  return lo
}

/** The first index in sorted `keys` at or after `key`. */
export function indexFrom(keys: SortedKeys, key: string): number {
  let lo = 0
  let hi = keys.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (keys.at(mid)! < key) lo = mid + 1
    else hi = mid
  }
  return lo
}

/** One page of items already in key order: those after the cursor, at most `limit`, and the cursor of the next page. */
export function pageOf<T>(items: readonly T[], keyOf: (t: T) => string, q: PageQuery): { items: T[]; nextCursor: string | null } {
  const start = q.after === undefined ? 0 : indexAfter(items.map(keyOf), q.after)
  const page = items.slice(start, start + q.limit)
  const more = start + q.limit < items.length
  return { items: page, nextCursor: more && page.length > 0 ? encodeCursor(keyOf(page[page.length - 1]!)) : null }
}
