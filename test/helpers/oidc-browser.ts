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

  /**
   * The device flow at the test provider: the verification page with the code filled in,
   * its confirmation form, then the login. The provider's last page (its "done" page).
   */
  async confirmDevice(verificationUriComplete: string, login: string, password: string): Promise<string> {
    const confirm = await this.follow(verificationUriComplete)
    const html = await confirm.res.text()
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1]
    if (!action) throw new Error(`no confirmation form at ${confirm.url} (status ${confirm.res.status})`)
    const fields = Object.fromEntries([...html.matchAll(/<input[^>]*name="([^"]+)"[^>]*value="([^"]*)"/g)].map((x) => [x[1]!, x[2]!]))
    const form = { 'content-type': 'application/x-www-form-urlencoded' }
    const posted = await this.request(new URL(action, confirm.url).href, { method: 'POST', headers: form, body: new URLSearchParams({ ...fields, confirm: 'yes' }).toString() })
    const page = await this.follow(new URL(posted.headers.get('location')!, confirm.url).href)
    const loginAction = /action="([^"]+\/login)"/.exec(await page.res.text())?.[1]
    if (!loginAction) throw new Error(`no login form at ${page.url}`)
    const done = await this.request(new URL(loginAction, page.url).href, { method: 'POST', headers: form, body: new URLSearchParams({ login, password }).toString() })
    return (await this.follow(new URL(done.headers.get('location')!, page.url).href)).res.text()
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
