// Password login for the CLI: opens a session, then mints an API token with it.
import { createClient } from './index.ts'
import { createTransport } from './http.ts'

export async function loginAndMintToken(url: string, identifier: string, password: string, tokenName: string) {
  let cookie: string | undefined
  const call = createTransport({
    url,
    fetch: async (u, init) => {
      const res = await fetch(u, init)
      const set = res.headers.get('set-cookie')
      if (set) cookie = set.split(';')[0]
      return res
    },
  })
  const { account } = await call<{ account: string }>('POST', '/login', { identifier, password })
  const session = createClient({ url, headers: cookie ? { cookie } : {} })
  const minted = await session.auth.mintApiToken({ name: tokenName })
  await fetch(`${url.replace(/\/+$/, '')}/logout`, { method: 'POST', headers: cookie ? { cookie } : {} }).catch(() => {})
  return { account, ...minted }
}
