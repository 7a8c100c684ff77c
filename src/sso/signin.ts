// Sign-in with the identity provider, for the dashboard and the CLI. The
// client secret and every token stay on the Platform: the browser and the CLI
// only ever hold muster's own one-time values (docs/accounts-audit.md).
//
// Dashboard (authorization code + PKCE):
//   1. GET /auth/oidc/start: a flow (state, nonce, verifier) bound to a cookie of this browser
//   2. the provider redirects to <public URL>/auth/oidc/callback with code and state
//   3. the flow is taken once (by state, and only with the cookie that started it),
//      the code redeemed, the ID token verified; then the account follows the provider
//   4. an ordinary muster session, for at most min(ID token lifetime, 12 h)
// CLI, loopback (RFC 8252): the Platform does the exchange, the CLI proves its flow with PKCE:
//   1. POST /auth/oidc/cli {redirectUri: http://127.0.0.1:PORT/…, state, codeChallenge}
//   2. the browser signs in; the callback (as 3. above) answers with a redirect to the
//      CLI's loopback carrying a one-time muster grant (never the provider's code)
//   3. POST /auth/oidc/cli/redeem {grant, codeVerifier}: taken once, checked against the
//      challenge; a stolen or injected grant is worthless without the verifier
// CLI, device grant (RFC 8628): POST /auth/oidc/device starts it at the provider and
//   gives the CLI a handle; POST /auth/oidc/device/poll polls once per call.
import { createHash } from 'node:crypto'
import { Accounts } from '../auth/accounts.ts'
import { UNKNOWN_PRINCIPAL, type Audit, type Who } from '../audit/audit.ts'
import type { Auth } from '../auth/auth.ts'
import { expired } from '../auth/auth.ts'
import { MusterError } from '../errors.ts'
import { randomSecret } from '../crypto/tokens.ts'
import { getAccount } from '../store/accounts.ts'
import { createSsoAccount, deleteSsoFlow, insertSsoFlow, insertSsoGrant, peekSsoFlow, ssoAccountOf, takeSsoFlow, takeSsoGrant } from '../store/sso.ts'
import { isRole, lowerRole } from '../wire/permissions.ts'
import { RateLimiter } from '../fabric/rate-limit.ts'
import { accountNameFor, mapIdentity } from '../auth/oidc/identity.ts'
import { OidcClient, SignInRefused, type VerifiedIdentity } from '../auth/oidc/rp.ts'

export const FLOW_COOKIE = 'muster_sso'
/** A flow not finished within this is gone (the user took too long at the provider). */
export const FLOW_TTL_MS = 10 * 60_000
/** An SSO session lasts at most this, and never longer than the provider's ID token. */
export const SSO_SESSION_MAX_MS = 12 * 3600_000
const GRANT_TTL_MS = 60_000
const LOOPBACK_REDIRECT = /^http:\/\/(127\.0\.0\.1|\[::1\]):(\d{1,5})\/[\w\-./]{0,100}$/

export interface SsoSession {
  sessionId: string
  account: string
  role: string
  expiresAt: number
}

const loopback = (redirect: string, params: Record<string, string>) => {
  const u = new URL(redirect)
  for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v)
  return u.href
}

const s256 = (v: string) => createHash('sha256').update(v).digest('base64url')

/** The one refusal a browser or CLI sees; the audit keeps the reason. */
const refused = () => new MusterError('login-refused', 'Sign-in refused by muster; ask an administrator to look at the audit (muster audit --action sso).')

export class Sso {
  private readonly accounts: Accounts
  /** Anonymous requests that write a flow or call the provider: a flood is refused (429) before the store or the provider sees it. */
  private readonly starts: RateLimiter
  private readonly polls: RateLimiter

  constructor(
    readonly client: OidcClient,
    private readonly deps: { auth: Auth; audit: Audit; publicUrl: () => string; now: () => number },
  ) {
    this.accounts = new Accounts(deps.auth.store, deps.now)
    this.starts = new RateLimiter('sign-in starts', { perSecond: 10, burst: 100, maxInFlight: 32 }, deps.now)
    this.polls = new RateLimiter('device sign-in polls', { perSecond: 20, burst: 100, maxInFlight: 32 }, deps.now)
  }

  get redirectUri(): string {
    return `${this.deps.publicUrl().replace(/\/+$/, '')}/auth/oidc/callback`
  }

  get displayName(): string {
    return this.client.settings.displayName
  }

  private get db() {
    return this.deps.auth.store
  }

  /** On a joined office the closed door stays closed: SSO is for the controller, the vouch for offices. */
  private async assertOpen(): Promise<void> {
    const door = await this.deps.auth.door()
    if (door.membership) throw new MusterError('local-login-disabled', 'This Platform has joined a controller as an office: sign in with the identity provider on the controller, and reach this office with `muster federation vouch`.')
  }

  private async newFlow(kind: 'web' | 'cli', extra: { binding?: string; cli_redirect?: string; cli_state?: string; cli_challenge?: string }): Promise<string> {
    const release = this.starts.admit()
    try {
      return await this.insertFlow(kind, extra)
    } finally {
      release()
    }
  }

  private async insertFlow(kind: 'web' | 'cli', extra: { binding?: string; cli_redirect?: string; cli_state?: string; cli_challenge?: string }): Promise<string> {
    const state = randomSecret()
    const nonce = randomSecret()
    const verifier = randomSecret()
    const now = this.deps.now()
    await insertSsoFlow(this.db, this.deps.auth.digestSecret(state), { kind, nonce, verifier, ...extra, expires_at: now + FLOW_TTL_MS }, now)
    return this.client.authorizationUrl(this.redirectUri, { state, nonce, verifier })
  }

  /** 1. (dashboard) A flow bound to this browser: the cookie to set and the provider's URL. */
  async startWeb(): Promise<{ url: string; cookie: string }> {
    await this.assertOpen()
    const cookie = randomSecret()
    return { url: await this.newFlow('web', { binding: this.deps.auth.digestSecret(cookie) }), cookie }
  }

  /** 1. (CLI) A flow whose result goes to the CLI's loopback redirect. */
  async startCli(b: { redirectUri: string; state: string; codeChallenge: string }): Promise<{ url: string }> {
    await this.assertOpen()
    const m = LOOPBACK_REDIRECT.exec(b.redirectUri)
    if (!m || Number(m[2]) < 1024 || Number(m[2]) > 65535) throw new MusterError('invalid-request', 'Invalid redirectUri: expected http://127.0.0.1:PORT/… or http://[::1]:PORT/… (a loopback redirect, RFC 8252).', { field: 'redirectUri' })
    return { url: await this.newFlow('cli', { cli_redirect: b.redirectUri, cli_state: b.state, cli_challenge: b.codeChallenge }) }
  }

  /**
   * 3. The provider's redirect. Web: a session for this browser. CLI: where to send
   * the browser (the loopback, with a one-time grant). Every refusal is audited.
   */
  async callback(url: URL, flowCookie: string | undefined, source: string): Promise<{ web: SsoSession } | { cli: string }> {
    await this.assertOpen()
    const state = url.searchParams.get('state')
    const flow = state ? await takeSsoFlow(this.db, this.deps.auth.digestSecret(state), this.deps.now()) : null
    const anon: Who = { principal: UNKNOWN_PRINCIPAL, kind: 'anonymous' }
    if (!flow || !flow.nonce || !flow.verifier) return this.refuse(anon, source, 'state mismatch (unknown, used or expired flow)')
    // A web flow answers only the browser that started it (login CSRF: an attacker's code in a victim's browser).
    if (flow.kind === 'web' && (!flowCookie || flow.binding !== this.deps.auth.digestSecret(flowCookie))) return this.refuse(anon, source, 'state mismatch (flow started by another browser)')
    const providerError = url.searchParams.get('error')
    if (providerError) return this.refuse(anon, source, `provider error ${providerError.slice(0, 64).replace(/[^\w.-]/g, '?')}`)
    let signedIn: { account: string; role: string; expiresAt: number }
    try {
      let id: VerifiedIdentity
      try {
        id = await this.client.exchange(url, { state: state!, nonce: flow.nonce, verifier: flow.verifier })
      } catch (e) {
        if (e instanceof SignInRefused) return await this.refuse(anon, source, e.reason)
        throw e
      }
      signedIn = await this.signIn(id, source)
    } catch (e) {
      // The CLI waiting on its loopback hears of the refusal at once (RFC 6749 §4.1.2.1).
      if (flow.kind === 'cli' && e instanceof MusterError && e.code === 'login-refused') return { cli: loopback(flow.cli_redirect!, { error: 'access_denied', state: flow.cli_state ?? '' }) }
      throw e
    }
    if (flow.kind === 'web') return { web: await this.openSession(signedIn) }
    const grant = randomSecret()
    const now = this.deps.now()
    await insertSsoGrant(this.db, this.deps.auth.digestSecret(grant), { account: signedIn.account, cliChallenge: flow.cli_challenge!, sessionExpiresAt: signedIn.expiresAt, expiresAt: now + GRANT_TTL_MS }, now)
    return { cli: loopback(flow.cli_redirect!, { grant, state: flow.cli_state ?? '' }) }
  }

  /** 3. (CLI) The one-time grant, with the verifier of the challenge the CLI sent at the start. */
  async redeemCli(b: { grant: string; codeVerifier: string }, source: string): Promise<SsoSession> {
    await this.assertOpen()
    const g = await takeSsoGrant(this.db, this.deps.auth.digestSecret(b.grant), this.deps.now())
    if (!g || !g.account || !g.cli_challenge || g.session_expires_at === null || s256(b.codeVerifier) !== g.cli_challenge) {
      // Whoever presented it is not known (the grant names the account it was for: the target, never the principal).
      await this.deps.audit.record({ principal: UNKNOWN_PRINCIPAL, kind: 'anonymous' }, { source, action: 'sso.login', target: g?.account ?? null, outcome: 'denied', budget: 'refusals', detail: g ? 'cli grant: PKCE verifier mismatch' : 'cli grant unknown, used or expired' }).catch(() => {})
      throw refused()
    }
    const acct = await getAccount(this.db, g.account)
    if (!acct || acct.origin !== 'sso' || !isRole(acct.role)) throw refused()
    return this.openSession({ account: acct.name, role: acct.role, expiresAt: Number(g.session_expires_at) })
  }

  /** (device) Starts the device grant at the provider; the CLI keeps the handle. */
  async startDevice(): Promise<{ handle: string; userCode: string; verificationUri: string; verificationUriComplete: string | null; expiresIn: number; interval: number }> {
    await this.assertOpen()
    if (!this.client.deviceFlow) throw new MusterError('not-configured', `The identity provider ${this.client.settings.issuer} offers no device sign-in (no device_authorization_endpoint); run \`muster login --sso\` where a browser can open.`)
    const release = this.starts.admit()
    let d: Awaited<ReturnType<OidcClient['deviceStart']>>
    try {
      d = await this.client.deviceStart()
    } finally {
      release()
    }
    const handle = randomSecret()
    const now = this.deps.now()
    const expiresIn = Math.min(d.expiresIn, FLOW_TTL_MS / 1000)
    await insertSsoFlow(this.db, this.deps.auth.digestSecret(handle), { kind: 'device', device_code: d.deviceCode, expires_at: now + expiresIn * 1000 }, now)
    return { handle, userCode: d.userCode, verificationUri: d.verificationUri, verificationUriComplete: d.verificationUriComplete, expiresIn, interval: d.interval }
  }

  /** (device) One poll: pending, or the session. */
  async pollDevice(handle: string, source: string): Promise<{ pending: true; slowDown: boolean } | SsoSession> {
    await this.assertOpen()
    const key = this.deps.auth.digestSecret(handle)
    const flow = await peekSsoFlow(this.db, key, this.deps.now())
    if (!flow || flow.kind !== 'device' || !flow.device_code) throw new MusterError('not-found', 'No device sign-in with this handle is in progress (it expired or finished); run `muster login --sso` again.')
    let r: VerifiedIdentity | 'pending' | 'slow-down'
    const release = this.polls.admit()
    try {
      r = await this.client.devicePoll(flow.device_code)
    } catch (e) {
      await deleteSsoFlow(this.db, key)
      if (e instanceof SignInRefused) return this.refuse({ principal: UNKNOWN_PRINCIPAL, kind: 'anonymous' }, source, e.reason)
      throw e
    } finally {
      release()
    }
    if (typeof r === 'string') return { pending: true, slowDown: r === 'slow-down' }
    // Only one poll turns a confirmed device code into a session.
    if (!(await takeSsoFlow(this.db, key, this.deps.now()))) throw refused()
    return this.openSession(await this.signIn(r, source))
  }

  private async refuse(who: Who, source: string, reason: string, id?: VerifiedIdentity, target: string | null = null): Promise<never> {
    const detail = id ? `${reason}; sub=${id.subject.slice(0, 80)} iss=${id.issuer.slice(0, 120)}` : reason
    await this.deps.audit.record(who, { source, action: 'sso.login', target, outcome: 'denied', budget: 'refusals', detail }).catch(() => {})
    throw refused()
  }

  /**
   * The account follows the provider:
   *   1. the identity maps to a name and a role (domain allowed, a group mapped), else refused
   *   2. a first sign-in creates the account (kind sso, no password), unless a local
   *      account holds the name; later ones find it by (issuer, subject)
   *   3. a disabled or expired account is refused
   *   4. the role follows the groups (a demotion ends its sessions and login tokens)
   */
  private async signIn(id: VerifiedIdentity, source: string): Promise<{ account: string; role: string; expiresAt: number }> {
    const now = this.deps.now()
    const mapped = mapIdentity(id.claims, this.client.settings)
    const known = await ssoAccountOf(this.db, id.issuer, id.subject)
    // The name comes from the provider's verified claims (never from a typed field): a refusal names it as its
    // target. Its principal is unknown: a provider user's claims can say `superadmin` (docs/accounts-audit.md).
    const tried = known ?? (mapped.ok ? mapped.name : (accountNameFor(id.claims) ?? null))
    const who: Who = { principal: UNKNOWN_PRINCIPAL, kind: 'anonymous' }
    if (!mapped.ok) return this.refuse(who, source, mapped.reason, id, tried)
    let name = known
    if (!name) {
      if (!(await createSsoAccount(this.db, { name: mapped.name, role: mapped.role, issuer: id.issuer, subject: id.subject, now }))) {
        return this.refuse(who, source, `account name ${mapped.name} is taken by an account that is not this provider subject’s`, id, tried)
      }
      name = mapped.name
      await this.deps.audit.record({ principal: name, kind: 'session' }, { source, action: 'account.add', target: name, outcome: 'ok', detail: `sso role=${mapped.role} sub=${id.subject.slice(0, 80)} iss=${id.issuer.slice(0, 120)}` })
    }
    const acct = await getAccount(this.db, name)
    if (!acct || acct.origin !== 'sso') return this.refuse(who, source, 'account is not an sso account', id, tried)
    if (acct.disabled || expired(acct.expires_at, now)) return this.refuse(who, source, 'account disabled or expired', id, tried)
    if (acct.role !== mapped.role) {
      try {
        await this.accounts.setRole(name, mapped.role)
      } catch (e) {
        if (e instanceof MusterError && e.code === 'conflict') return this.refuse(who, source, `groups now map to ${mapped.role}, but ${name} is the last superadmin`, id, tried)
        throw e
      }
      const how = isRole(acct.role) && lowerRole(acct.role, mapped.role) === mapped.role ? 'demoted' : 'promoted'
      await this.deps.audit.record({ principal: name, kind: 'session' }, { source, action: 'account.set-role', target: name, outcome: 'ok', detail: `from groups: ${acct.role} → ${mapped.role} (${how}); sub=${id.subject.slice(0, 80)} iss=${id.issuer.slice(0, 120)}` })
    }
    const expiresAt = Math.min(id.expiresAt, now + SSO_SESSION_MAX_MS)
    await this.deps.audit.record({ principal: name, kind: 'session' }, { source, action: 'sso.login', target: name, outcome: 'ok', detail: `role=${mapped.role} sub=${id.subject.slice(0, 80)} iss=${id.issuer.slice(0, 120)}` })
    return { account: name, role: mapped.role, expiresAt }
  }

  private async openSession(s: { account: string; role: string; expiresAt: number }): Promise<SsoSession> {
    const sessionId = await this.deps.auth.openSsoSession(s.account, s.expiresAt)
    return { sessionId, account: s.account, role: s.role, expiresAt: s.expiresAt }
  }
}
