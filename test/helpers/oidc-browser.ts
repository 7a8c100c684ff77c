// A scripted browser for sign-in flows: follows redirects by hand with a
// cookie jar per origin, fills the test provider's login form, and stops at
// the first redirect whose target starts with `stopAt` (the relying party's
// callback), so a test can replay, swap or forward that URL itself.
export class ScriptedBrowser {
  private readonly jar = new Map<string, Map<string, string>>()

  cookieHeader(url: string): string {
    const c = this.jar.get(new URL(url).host)
    return c ? [...c].map(([k, v]) => `${k}=${v}`).join('; ') : ''
  }

  setCookie(url: string, name: string, value: string): void {
    const host = new URL(url).host
    if (!this.jar.has(host)) this.jar.set(host, new Map())
    this.jar.get(host)!.set(name, value)
  }

  private keep(url: string, res: Response): void {
    for (const set of res.headers.getSetCookie()) {
      const [pair] = set.split(';')
      const i = pair!.indexOf('=')
      const name = pair!.slice(0, i).trim()
      const value = pair!.slice(i + 1).trim()
      if (/max-age=0|expires=thu, 01 jan 1970/i.test(set) || value === '') this.jar.get(new URL(url).host)?.delete(name)
      else this.setCookie(url, name, value)
    }
  }

  async request(url: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers)
    const cookie = this.cookieHeader(url)
    if (cookie) headers.set('cookie', cookie)
    const res = await fetch(url, { ...init, headers, redirect: 'manual' })
    this.keep(url, res)
    return res
  }

  /** GETs `url` and follows redirects until one points at `stopAt` (returned, not followed) or a page answers. */
  async follow(url: string, stopAt?: string): Promise<{ stoppedAt?: string; res: Response; url: string }> {
    let at = url
    for (let hops = 0; hops < 20; hops++) {
      if (stopAt && at.startsWith(stopAt)) return { stoppedAt: at, res: new Response(null), url: at }
      const res = await this.request(at)
      const location = res.headers.get('location')
      if (res.status >= 300 && res.status < 400 && location) {
        at = new URL(location, at).href
        continue
      }
      return { res, url: at }
    }
    throw new Error(`too many redirects from ${url}`)
  }

  /** Signs in at the test provider: from the authorization URL to the redirect to `stopAt`. */
  async signIn(authorizationUrl: string, login: string, password: string, stopAt: string): Promise<string> {
    const first = await this.follow(authorizationUrl, stopAt)
    if (first.stoppedAt) return first.stoppedAt // the provider's session signed in already
    const form = /action="([^"]+\/login)"/.exec(await first.res.text())
    if (!form) throw new Error(`no login form at ${first.url} (status ${first.res.status})`)
    const post = await this.request(new URL(form[1]!.replace(/&#(\d+);/g, (_, n) => String.fromCharCode(Number(n))), first.url).href, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ login, password }).toString(),
    })
    const location = post.headers.get('location')
    if (!location) throw new Error(`login at the provider answered ${post.status}: ${(await post.text()).slice(0, 300)}`)
    const done = await this.follow(new URL(location, first.url).href, stopAt)
    if (!done.stoppedAt) throw new Error(`the provider did not redirect back (ended at ${done.url}, ${done.res.status}: ${(await done.res.text()).slice(0, 300)})`)
    return done.stoppedAt
  }
}
