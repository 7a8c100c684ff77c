// SDK: paged listings. `limit` (default 1000, at most 5000) and
// `cursor` (the `nextCursor` of the previous page); `all` walks every page.

export interface PageOptions {
  limit?: number
  cursor?: string
}

/** `?a=1&b=2` of the options that are set ('' when none). */
export function queryString(opts: Record<string, string | number | undefined>): string {
  const parts = Object.entries(opts)
    .filter(([, v]) => v !== undefined && v !== '')
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`)
  return parts.length ? `?${parts.join('&')}` : ''
}

/** Every item of every page, in order. */
export async function allPages<P extends { nextCursor: string | null }, T>(fetchPage: (cursor: string | undefined) => Promise<P>, items: (p: P) => T[]): Promise<{ items: T[]; first: P }> {
  const first = await fetchPage(undefined)
  const out = [...items(first)]
  for (let page = first; page.nextCursor !== null; ) {
    page = await fetchPage(page.nextCursor)
    out.push(...items(page))
  }
  return { items: out, first }
}
