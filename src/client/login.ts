// Password login for the CLI: opens a session, then mints an API token with it.
import { createClient } from './index.ts'
import { createTransport } from './http.ts'

export type Fetch = (url: string, init: RequestInit) => Promise<Response>

/** `fetchImpl` authenticates the Platform (a pinned fetch for an https Platform with its own CA). */
export async function loginAndMintToken(url: string, identifier: string, password: string, tokenName: string, fetchImpl: Fetch = (u, i) => fetch(u, i)) {
  let cookie: string | undefined
  const call = createTransport({
    url,
    fetch: async (u, init) => {
      const res = await fetchImpl(u, init)
      const set = res.headers.get('set-cookie')
      if (set) cookie = set.split(';')[0]
      return res
    },
  })
  const { account } = await call<{ account: string }>('POST', '/login', { identifier, password })
  return { account, ...(await mintWithSession(url, cookie, tokenName, fetchImpl)) }
}

/** The saved login of every `muster login`: a token minted with the session, which then ends. */
export async function mintWithSession(url: string, cookie: string | undefined, tokenName: string, fetchImpl: Fetch) {
  const session = createClient({ url, headers: cookie ? { cookie } : {}, fetch: fetchImpl })
  const minted = await session.auth.mintApiToken({ name: tokenName })
  await fetchImpl(`${url.replace(/\/+$/, '')}/logout`, { method: 'POST', headers: cookie ? { cookie } : {} }).catch(() => {})
  return minted
}

/** A transport that keeps the session cookie the Platform sets. */
export function cookieTransport(url: string, fetchImpl: Fetch) {
  const jar: { cookie?: string } = {}
  const call = createTransport({
    url,
    fetch: async (u, init) => {
      const res = await fetchImpl(u, init)
      const set = res.headers.get('set-cookie')
      if (set) jar.cookie = set.split(';')[0]
      return res
    },
  })
  return { call, jar }
}
