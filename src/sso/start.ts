// Starting sign-in with the identity provider: the settings checked, the
// secret read from its file, the provider discovered. A refusal is one line
// saying what to change (serve preflight runs this before anything is created).
import type { Audit } from '../audit/audit.ts'
import type { Auth } from '../auth/auth.ts'
import { resolveOidc, type OidcOptions } from '../auth/oidc/config.ts'
import { OidcClient } from '../auth/oidc/rp.ts'
import { Sso } from './signin.ts'

/** Checks the options and discovers the provider; what a start would refuse, without starting anything. */
export async function checkOidc(o: OidcOptions): Promise<OidcClient> {
  return OidcClient.discover(resolveOidc(o))
}

export async function startSso(o: OidcOptions | undefined, deps: { auth: Auth; audit: Audit; publicUrl: () => string; now: () => number }): Promise<Sso | null> {
  if (!o) return null
  const client = await checkOidc(o)
  if (client.settings.only) deps.auth.passwordOff = { provider: client.settings.displayName }
  return new Sso(client, deps)
}
