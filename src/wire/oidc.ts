// Sign-in with the identity provider (docs/accounts-audit.md): the bodies the
// CLI sends and the answers it gets. The dashboard's part is redirects.
import * as v from 'valibot'

/** A muster one-time value (state, grant, handle): 32 random bytes, base64url. */
const Secret = v.pipe(v.string(), v.regex(/^[A-Za-z0-9_-]{43}$/, 'expected 32 random bytes, base64url'))
/** RFC 7636: 43–128 unreserved characters. */
const PkceValue = v.pipe(v.string(), v.regex(/^[A-Za-z0-9._~-]{43,128}$/, 'expected 43–128 characters of A-Z a-z 0-9 . _ ~ -'))

/** What the login page shows: whether a provider is set, its name, and whether passwords are accepted. */
export interface SsoInfo {
  enabled: boolean
  name: string | null
  passwordLogin: boolean
  deviceFlow: boolean
}

/** The CLI's loopback flow: where the browser comes back to, the CLI's state and its PKCE challenge (S256). */
export const StartCliSignIn = v.object({
  redirectUri: v.pipe(v.string(), v.maxLength(200)),
  state: Secret,
  codeChallenge: v.pipe(v.string(), v.regex(/^[A-Za-z0-9_-]{43}$/, 'expected a base64url SHA-256 (S256)')),
})
export type StartCliSignIn = v.InferOutput<typeof StartCliSignIn>
export interface StartCliSignInAnswer {
  /** The provider's authorization URL to open in a browser. */
  url: string
}

export const RedeemCliSignIn = v.object({ grant: Secret, codeVerifier: PkceValue })
export type RedeemCliSignIn = v.InferOutput<typeof RedeemCliSignIn>

export interface StartDeviceSignInAnswer {
  handle: string
  userCode: string
  verificationUri: string
  verificationUriComplete: string | null
  expiresIn: number
  interval: number
}

export const PollDeviceSignIn = v.object({ handle: Secret })
export type PollDeviceSignIn = v.InferOutput<typeof PollDeviceSignIn>

/** A finished sign-in (with the session cookie set); a device poll may instead answer pending. */
export interface SsoSignedIn {
  ok: true
  account: string
  role: string
  expiresAt: string
}
export type PollDeviceSignInAnswer = SsoSignedIn | { pending: true; slowDown: boolean }
