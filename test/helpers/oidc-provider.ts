// A real OpenID provider for the tests: `oidc-provider` (the certified Node
// implementation), in the test process, on loopback over plain http. Test
// users with passwords and groups; the code flow with PKCE and the device flow
// enabled; a login page of its own (no page of it loads anything from outside)
// that Chromium or a scripted fetch fills in; consent is given automatically.
import Provider, { type Configuration } from 'oidc-provider'
import type { Server } from 'node:http'
import { randomBytes } from 'node:crypto'
import { generateKeyPair, exportJWK } from 'jose'

export interface TestUser {
  password: string
  email: string
  groups: string[]
  name?: string
}

export interface TestClient {
  clientId: string
  clientSecret: string
  redirectUris: string[]
}

export interface OidcProviderHandle {
  issuer: string
  port: number
  users: Map<string, TestUser>
  /** Changes a user's groups (what the directory says from now on). */
  setGroups(login: string, groups: string[]): void
  /** Restarts the provider on the same port with a new signing key (a key rotation); sessions at the provider are lost. */
  rotateKeys(): Promise<void>
  /** Every request the provider answered: method and path (the tests read which endpoints muster used). */
  requests: string[]
  close(): Promise<void>
  [Symbol.asyncDispose](): Promise<void>
}

// oidc-provider's Koa context (the package ships no types).
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Ctx = any

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

const page = (title: string, body: string) => `<!doctype html><html><head><meta charset="utf-8"><title>${esc(title)}</title></head><body><main><h1>${esc(title)}</h1>${body}</main></body></html>`

async function readForm(req: NodeJS.ReadableStream): Promise<URLSearchParams> {
  const chunks: Buffer[] = []
  for await (const c of req) chunks.push(c as Buffer)
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'))
}

async function newKey(): Promise<Record<string, unknown>> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true })
  return { ...(await exportJWK(privateKey)), kid: `k-${randomBytes(6).toString('hex')}`, alg: 'RS256', use: 'sig' }
}

/** Starts the provider; `port` 0 picks a free one. */
export async function startOidcProvider(opts: { users: Record<string, TestUser>; clients: TestClient[]; port?: number; idTokenTtlSeconds?: number }): Promise<OidcProviderHandle> {
  const users = new Map(Object.entries(opts.users))
  const requests: string[] = []
  let key = await newKey()
  let server: Server | undefined
  let port = opts.port ?? 0
  const cookieKeys = [randomBytes(32).toString('hex')]

  const build = (issuer: string) => {
    const configuration: Configuration = {
      clients: opts.clients.map((c) => ({
        client_id: c.clientId,
        client_secret: c.clientSecret,
        redirect_uris: c.redirectUris,
        grant_types: ['authorization_code', 'urn:ietf:params:oauth:grant-type:device_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      })),
      jwks: { keys: [key as never] },
      cookies: { keys: cookieKeys },
      claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name', 'preferred_username'], groups: ['groups'] },
      scopes: ['openid', 'email', 'profile', 'groups'],
      // Groups and e-mail in the ID token itself, as Okta, Entra ID and Keycloak send them.
      conformIdTokenClaims: false,
      pkce: { required: () => true },
      ttl: { IdToken: opts.idTokenTtlSeconds ?? 3600, AccessToken: 3600, AuthorizationCode: 60, DeviceCode: 600, Interaction: 600, Session: 3600, Grant: 3600 },
      features: {
        devInteractions: { enabled: false },
        deviceFlow: {
          enabled: true,
          userCodeInputSource: async (ctx: Ctx, form: string, _out: unknown, err: unknown) => {
            ctx.body = page('Device sign-in', `${err ? '<p class="error">The code is not right.</p>' : '<p>Enter the code your device shows.</p>'}${form}<button type="submit" form="op.deviceInputForm">Continue</button>`)
          },
          userCodeConfirmSource: async (ctx: Ctx, form: string, _client: unknown, _info: unknown, userCode: string) => {
            ctx.body = page('Confirm device', `<p>Code <code id="user-code">${esc(userCode)}</code></p>${form}<button type="submit" form="op.deviceConfirmForm" id="confirm">Continue</button>`)
          },
          successSource: async (ctx: Ctx) => {
            ctx.body = page('Signed in', '<p id="device-done">You may close this window and go back to your device.</p>')
          },
        },
        rpInitiatedLogout: { enabled: false },
      },
      interactions: { url: (_ctx: Ctx, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
      // Consent is given by the test users' company: every scope asked for, at once.
      loadExistingGrant: async (ctx: Ctx) => {
        const o = ctx.oidc
        const grantId = o.result?.consent?.grantId || o.session?.grantIdFor(o.client!.clientId)
        if (grantId) return o.provider.Grant.find(grantId)
        if (!o.session?.accountId) return undefined
        const grant = new o.provider.Grant({ clientId: o.client!.clientId, accountId: o.session.accountId })
        grant.addOIDCScope('openid email profile groups')
        await grant.save()
        return grant
      },
      findAccount: async (_ctx: Ctx, id: string) => {
        const u = users.get(id)
        if (!u) return undefined
        return { accountId: id, claims: async () => ({ sub: id, email: u.email, email_verified: true, name: u.name ?? id, preferred_username: id, groups: [...u.groups] }) }
      },
      renderError: async (ctx: Ctx, out: unknown) => {
        ctx.type = 'html'
        ctx.body = page('Provider error', `<pre id="op-error">${esc(JSON.stringify(out))}</pre>`)
      },
    }
    const provider = new Provider(issuer, configuration)
    provider.on('server_error', (_ctx, err) => console.error('oidc-provider server_error', err))
    provider.use(async (ctx, next) => {
      requests.push(`${ctx.method} ${ctx.path}`)
      const m = /^\/interaction\/([\w-]+)(\/login)?$/.exec(ctx.path)
      if (!m) return next()
      const details = await provider.interactionDetails(ctx.req, ctx.res)
      if (ctx.method === 'GET') {
        ctx.type = 'html'
        ctx.body = page('Sign in to the test provider', `<form method="post" action="/interaction/${esc(details.uid)}/login"><label>User <input name="login" id="op-login" autocomplete="off"></label><label>Password <input name="password" id="op-password" type="password"></label><button type="submit" id="op-submit">Sign in</button></form>`)
        return
      }
      if (ctx.method === 'POST' && m[2]) {
        const form = await readForm(ctx.req)
        const login = form.get('login') ?? ''
        const u = users.get(login)
        if (!u || u.password !== form.get('password')) {
          ctx.status = 401
          ctx.type = 'html'
          ctx.body = page('Sign in to the test provider', '<p id="op-bad">Wrong user or password.</p>')
          return
        }
        await provider.interactionFinished(ctx.req, ctx.res, { login: { accountId: login } }, { mergeWithLastSubmission: false })
        return
      }
      return next()
    })
    return provider
  }

  const listen = async () => {
    // The issuer names the port, so a free one is found first.
    if (port === 0) {
      const probe = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
      port = probe.port
      probe.stop(true)
    }
    const issuer = `http://127.0.0.1:${port}`
    const provider = build(issuer)
    await new Promise<void>((resolve, reject) => {
      server = provider.listen(port, '127.0.0.1', () => resolve()) as Server
      server.once('error', reject)
    })
    return issuer
  }

  const issuer = await listen()
  const stop = () => new Promise<void>((resolve) => {
    if (!server) return resolve()
    server.closeAllConnections?.()
    server.close(() => resolve())
    server = undefined
  })
  return {
    issuer,
    port,
    users,
    requests,
    setGroups(login, groups) {
      const u = users.get(login)
      if (!u) throw new Error(`no test user ${login}`)
      u.groups = groups
    },
    async rotateKeys() {
      await stop()
      key = await newKey()
      await listen()
    },
    close: stop,
    [Symbol.asyncDispose]: stop,
  }
}
