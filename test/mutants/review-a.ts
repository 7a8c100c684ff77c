// Planted bugs for the gaps an independent review of the trust, metrics and
// sign-in work found through dist/muster (docs/security.md,
// docs/accounts-audit.md): login CSRF through the CLI's end of an SSO
// sign-in, a secret flag in camelCase left on argv, and tokens minted by an
// account-less token each taking a share of the audit. `--only 'review-a'`.
import type { Mutant } from './types.ts'

export default [
  {
    name: 'review-a: a cross-site form redeems a CLI grant or device handle (login CSRF: the browser gets the attacker’s session)',
    ci: true,
    file: 'src/http/app.ts',
    from: "const CREDENTIAL_IN_BODY = ['/login', '/office/vouch', '/api/office/vouch', '/auth/oidc/cli/redeem', '/auth/oidc/device/poll']",
    to: "const CREDENTIAL_IN_BODY = ['/login', '/office/vouch', '/api/office/vouch']",
    tests: ['test/e2e/oidc-login-csrf.test.ts'],
  },
  {
    name: 'review-a: a secret flag in the camelCase the parser takes (--enrollmentToken) stays on argv',
    ci: true,
    file: 'src/own-argv.ts',
    from: "    const flag = m?.[1]?.replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase()",
    to: '    const flag = m?.[1]',
    tests: ['test/e2e/argv-secrets.test.ts'],
    filter: 'camelCase',
  },
] satisfies Mutant[]
