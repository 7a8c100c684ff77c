// A small OpenID provider that follows OpenID Connect Core 1.0 and RFC 7636
// (discovery, JWKS, the authorization endpoint, the token endpoint with client
// authentication and PKCE), for the ID tokens a certified provider never
// issues: signed with a key not in its JWKS, already expired, for another
// client (aud), or with another nonce. oidc-provider is used for every other
// test; this fake exists only because it cannot be made to misbehave.
import { createHash, randomBytes } from 'node:crypto'
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose'

export type Mischief = 'none' | 'other-key' | 'expired' | 'other-audience' | 'other-nonce'

export interface FakeOp {
  issuer: string
  /** How the next ID tokens are spoiled. */
  mischief: Mischief
  /** Every token request whose ID token was issued (the test checks the RP asked). */
  issued: number
  close(): void
}

interface Pending {
  clientId: string
  redirectUri: string
  nonce: string | undefined
  challenge: string
  sub: string
}

export async function startFakeOp(opts: { clientId: string; clientSecret: string; sub: string; groups: string[]; email: string }): Promise<FakeOp> {
  const good = await generateKeyPair('ES256', { extractable: true })
  const rogue = await generateKeyPair('ES256', { extractable: true })
  const jwk = { ...(await exportJWK(good.publicKey)), kid: 'good', alg: 'ES256', use: 'sig' }
  const codes = new Map<string, Pending>()
  // The nonce of the authorization before the current one: 'other-nonce' puts it in the token (an ID token of another sign-in).
  let previousNonce: string | undefined
  let lastNonce: string | undefined
  const state: FakeOp = { issuer: '', mischief: 'none', issued: 0, close: () => server.stop(true) }
  const json = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', 'cache-control': 'no-store' } })

  const sign = async (p: Pending): Promise<string> => {
    const now = Math.floor(Date.now() / 1000)
    const m = state.mischief
    const key: CryptoKey = m === 'other-key' ? rogue.privateKey : good.privateKey
    // A key the JWKS does not hold still says kid "good": only the signature tells.
    return new SignJWT({ nonce: m === 'other-nonce' ? (previousNonce ?? 'not-the-nonce') : p.nonce, email: opts.email, email_verified: true, groups: opts.groups })
      .setProtectedHeader({ alg: 'ES256', kid: 'good', typ: 'JWT' })
      .setIssuer(state.issuer)
      .setSubject(p.sub)
      .setAudience(m === 'other-audience' ? 'other-app' : p.clientId)
      .setIssuedAt(m === 'expired' ? now - 7200 : now)
      .setExpirationTime(m === 'expired' ? now - 3600 : now + 600)
      .sign(key)
  }

  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(req) {
      const url = new URL(req.url)
      if (url.pathname === '/.well-known/openid-configuration') {
        return json({
          issuer: state.issuer,
          authorization_endpoint: `${state.issuer}/authorize`,
          token_endpoint: `${state.issuer}/token`,
          jwks_uri: `${state.issuer}/jwks`,
          response_types_supported: ['code'],
          subject_types_supported: ['public'],
          id_token_signing_alg_values_supported: ['ES256'],
          code_challenge_methods_supported: ['S256'],
          token_endpoint_auth_methods_supported: ['client_secret_basic'],
          scopes_supported: ['openid', 'email', 'profile', 'groups'],
        })
      }
      if (url.pathname === '/jwks') return json({ keys: [jwk] })
      if (url.pathname === '/authorize') {
        // The user is signed in at this provider already: straight back with a code (Core §3.1.2.5).
        const q = url.searchParams
        if (q.get('client_id') !== opts.clientId || q.get('response_type') !== 'code' || q.get('code_challenge_method') !== 'S256' || !q.get('code_challenge')) return json({ error: 'invalid_request' }, 400)
        const code = randomBytes(16).toString('base64url')
        previousNonce = lastNonce
        lastNonce = q.get('nonce') ?? undefined
        codes.set(code, { clientId: opts.clientId, redirectUri: q.get('redirect_uri')!, nonce: q.get('nonce') ?? undefined, challenge: q.get('code_challenge')!, sub: opts.sub })
        const back = new URL(q.get('redirect_uri')!)
        back.searchParams.set('code', code)
        if (q.get('state')) back.searchParams.set('state', q.get('state')!)
        back.searchParams.set('iss', state.issuer)
        return new Response(null, { status: 302, headers: { location: back.href } })
      }
      if (url.pathname === '/token' && req.method === 'POST') {
        const basic = /^Basic (.+)$/.exec(req.headers.get('authorization') ?? '')?.[1]
        const [id, secret] = basic ? Buffer.from(basic, 'base64').toString().split(':').map(decodeURIComponent) : []
        if (id !== opts.clientId || secret !== opts.clientSecret) return json({ error: 'invalid_client' }, 401)
        const form = new URLSearchParams(await req.text())
        const p = codes.get(form.get('code') ?? '')
        codes.delete(form.get('code') ?? '')
        if (!p || form.get('grant_type') !== 'authorization_code' || form.get('redirect_uri') !== p.redirectUri) return json({ error: 'invalid_grant' }, 400)
        if (createHash('sha256').update(form.get('code_verifier') ?? '').digest('base64url') !== p.challenge) return json({ error: 'invalid_grant' }, 400)
        state.issued++
        return json({ access_token: randomBytes(16).toString('base64url'), token_type: 'Bearer', expires_in: 600, id_token: await sign(p) })
      }
      return json({ error: 'not_found' }, 404)
    },
  })
  state.issuer = `http://127.0.0.1:${server.port}`
  return state
}
