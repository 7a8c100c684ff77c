// The relying party: muster as a client of the identity provider, through
// openid-client (discovery, the authorization code flow with PKCE, state and
// nonce, the device authorization grant) and jose (the ID token's signature
// against the issuer's JWKS). The client secret stays here; nothing of a token
// leaves this module but the verified claims (docs/accounts-audit.md).
import * as oidc from 'openid-client'
import { createRemoteJWKSet, jwtVerify, type JWTVerifyGetKey } from 'jose'
import { MusterError } from '../../errors.ts'
import { log } from '../../log.ts'
import { isLoopbackUrl, type OidcSettings } from './config.ts'
import type { Claims } from './identity.ts'

/** What a verified sign-in gives: who the provider says this is, and until when it says so. */
export interface VerifiedIdentity {
  issuer: string
  subject: string
  claims: Claims
  /** The ID token's `exp`, in ms. */
  expiresAt: number
}

/** A refusal in the flow, with the reason the audit keeps (never a token). */
export class SignInRefused extends Error {
  constructor(readonly reason: string) {
    super(reason)
  }
}

export interface DeviceStart {
  deviceCode: string
  userCode: string
  verificationUri: string
  verificationUriComplete: string | null
  expiresIn: number
  interval: number
}

const SCOPES = ['openid', 'email', 'profile']
const TIMEOUT_S = 10

/** The refusal's reason, from what openid-client, oauth4webapi or jose threw. */
export function reasonOf(e: unknown): string {
  const seen: unknown[] = []
  for (let at = e; at && typeof at === 'object' && !seen.includes(at); at = (at as { cause?: unknown }).cause) {
    seen.push(at)
    const x = at as { code?: unknown; claim?: unknown; error?: unknown; attribute?: unknown }
    if (x.error === 'invalid_grant') return 'code refused by the provider (invalid_grant: used, expired or not issued for this flow)'
    if (typeof x.error === 'string') return `provider error ${x.error.slice(0, 64)}`
    if (x.claim === 'exp' || x.claim === 'iat' || x.claim === 'nbf') return `ID token expired or not yet valid (${x.claim})`
    if (x.claim === 'aud' || x.claim === 'azp') return 'ID token for another client (aud)'
    if (x.claim === 'nonce') return 'nonce mismatch'
    if (x.claim === 'iss') return 'ID token from another issuer (iss)'
    if (x.attribute === 'state' || x.code === 'OAUTH_INVALID_RESPONSE' && /state/.test(String((at as Error).message))) return 'state mismatch'
    if (x.code === 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED' || x.code === 'ERR_JWKS_NO_MATCHING_KEY' || x.code === 'ERR_JWS_INVALID') return 'ID token signature not made by the issuer’s keys'
    if (x.code === 'ERR_JWT_EXPIRED') return 'ID token expired or not yet valid (exp)'
    if (x.code === 'ERR_JWT_CLAIM_VALIDATION_FAILED') return `ID token claim ${(at as { claim?: string }).claim ?? ''} invalid`
  }
  const message = e instanceof Error ? e.message : String(e)
  return `sign-in failed: ${message.slice(0, 160)}`
}

export class OidcClient {
  private constructor(
    readonly settings: OidcSettings,
    private readonly config: oidc.Configuration,
    private readonly keys: JWTVerifyGetKey,
  ) {}

  /** Discovery from the issuer's /.well-known/openid-configuration; the refusal says what to check. */
  static async discover(s: OidcSettings): Promise<OidcClient> {
    const issuer = new URL(s.issuer)
    const insecure = issuer.protocol === 'http:' && isLoopbackUrl(issuer)
    let config: oidc.Configuration
    try {
      config = await oidc.discovery(issuer, s.clientId, undefined, oidc.ClientSecretBasic(s.clientSecret), { timeout: TIMEOUT_S, ...(insecure ? { execute: [oidc.allowInsecureRequests] } : {}) })
    } catch (e) {
      const why = (e as { cause?: { code?: string } }).cause?.code ?? (e as { code?: string }).code
      const what = why === 'OAUTH_JSON_ATTRIBUTE_COMPARISON_FAILED'
        ? 'its discovery document names another issuer (give --oidc-issuer exactly as the provider states it, trailing slash included)'
        : `${(e as Error).message.slice(0, 160).replace(/[.\s]+$/, '')}`
      throw new MusterError('not-configured', `Cannot use the identity provider ${s.issuer}: ${what}. Check --oidc-issuer (${new URL('.well-known/openid-configuration', s.issuer.endsWith('/') ? s.issuer : `${s.issuer}/`).href} must answer from this host).`)
    }
    const meta = config.serverMetadata()
    if (!meta.jwks_uri) throw new MusterError('not-configured', `The identity provider ${s.issuer} publishes no jwks_uri: muster cannot check its ID tokens' signatures.`)
    // An unknown kid fetches the JWKS again at once: ID tokens come only from the provider's own token endpoint.
    const keys = createRemoteJWKSet(new URL(meta.jwks_uri), { cooldownDuration: 0, timeoutDuration: TIMEOUT_S * 1000 })
    return new OidcClient(s, config, keys)
  }

  /** The provider offers the device authorization grant (RFC 8628). */
  get deviceFlow(): boolean {
    return Boolean(this.config.serverMetadata().device_authorization_endpoint)
  }

  private scope(): string {
    const supported = this.config.serverMetadata().scopes_supported ?? []
    // Okta and Keycloak put groups in the token only when asked for this scope.
    return [...SCOPES, ...(supported.includes('groups') ? ['groups'] : [])].join(' ')
  }

  /** The provider's authorization URL for one flow (code flow, PKCE S256). */
  async authorizationUrl(redirectUri: string, f: { state: string; nonce: string; verifier: string }): Promise<string> {
    return oidc.buildAuthorizationUrl(this.config, {
      redirect_uri: redirectUri,
      scope: this.scope(),
      state: f.state,
      nonce: f.nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(f.verifier),
      code_challenge_method: 'S256',
    }).href
  }

  /** Redeems the code of a callback: state, PKCE and nonce checked, the ID token verified. */
  async exchange(callbackUrl: URL, f: { state: string; nonce: string; verifier: string }): Promise<VerifiedIdentity> {
    let tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>
    try {
      tokens = await oidc.authorizationCodeGrant(this.config, callbackUrl, { pkceCodeVerifier: f.verifier, expectedState: f.state, expectedNonce: f.nonce, idTokenExpected: true })
    } catch (e) {
      throw new SignInRefused(reasonOf(e))
    }
    return this.verified(tokens)
  }

  async deviceStart(): Promise<DeviceStart> {
    const d = await oidc.initiateDeviceAuthorization(this.config, { scope: this.scope() }).catch((e) => {
      throw new MusterError('unavailable', `The identity provider refused a device sign-in (${reasonOf(e)}); try \`muster login --sso\` where a browser can open.`)
    })
    return {
      deviceCode: d.device_code,
      userCode: d.user_code,
      verificationUri: d.verification_uri,
      verificationUriComplete: d.verification_uri_complete ?? null,
      expiresIn: d.expires_in,
      interval: d.interval ?? 5,
    }
  }

  /** One poll of the token endpoint for a device code. */
  async devicePoll(deviceCode: string): Promise<VerifiedIdentity | 'pending' | 'slow-down'> {
    let tokens: Awaited<ReturnType<typeof oidc.genericGrantRequest>>
    try {
      tokens = await oidc.genericGrantRequest(this.config, 'urn:ietf:params:oauth:grant-type:device_code', { device_code: deviceCode })
    } catch (e) {
      const error = (e as { error?: string }).error
      if (error === 'authorization_pending') return 'pending'
      if (error === 'slow_down') return 'slow-down'
      throw new SignInRefused(reasonOf(e))
    }
    return this.verified(tokens)
  }

  /** The ID token's signature by the issuer's keys (its claims were checked by openid-client); then userinfo for the claims it leaves out. */
  private async verified(tokens: { id_token?: string; access_token: string; claims(): oidc.IDToken | undefined }): Promise<VerifiedIdentity> {
    const claims = tokens.claims()
    if (!tokens.id_token || !claims) throw new SignInRefused('no ID token in the provider’s answer')
    try {
      await jwtVerify(tokens.id_token, this.keys, { issuer: this.settings.issuer, audience: this.settings.clientId, clockTolerance: 30 })
    } catch (e) {
      throw new SignInRefused(reasonOf(e))
    }
    let info: Claims = {}
    if (this.config.serverMetadata().userinfo_endpoint) {
      try {
        info = (await oidc.fetchUserInfo(this.config, tokens.access_token, claims.sub)) as Claims
      } catch (e) {
        log.warn(`oidc: userinfo of ${this.settings.issuer} failed (${reasonOf(e)}); using the ID token's claims only`)
      }
    }
    // The ID token's claims win; userinfo only adds what it left out (groups, email on some providers).
    return { issuer: this.settings.issuer, subject: claims.sub, claims: { ...info, ...claims }, expiresAt: claims.exp * 1000 }
  }
}
