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
  {
    name: 'review-a: each token an account-less token mints is a principal of its own (a share of the audit each: children flush it)',
    ci: true,
    file: 'src/auth/auth.ts',
    from: "  return p.account ?? (p.token ? `token:${p.token.root}` : `token:${p.name}`)",
    to: "  return p.account ?? (p.token ? `token:${p.token.id}` : `token:${p.name}`)",
    tests: ['test/e2e/audit-principals.test.ts'],
    filter: 'seventy children',
  },
  {
    name: 'review-a: a child token starts a lineage of its own (its children act as it, not as the token the host made)',
    file: 'src/auth/api-tokens.ts',
    from: "  const rootId = p.kind === 'api-token' ? p.token?.root : undefined",
    to: "  const rootId = p.kind === 'api-token' ? p.token?.id : undefined",
    tests: ['test/e2e/audit-principals.test.ts'],
    filter: 'seventy children',
  },
  {
    name: 'review-a: tokens minted before lineage roots keep no lineage at the upgrade (each descendant its own principal)',
    file: 'src/store/schema/auth.ts',
    from: '      UPDATE api_tokens SET root_id = (SELECT root FROM lineage WHERE lineage.id = api_tokens.id) WHERE parent_id IS NOT NULL;',
    to: '      UPDATE api_tokens SET root_id = NULL WHERE parent_id IS NOT NULL;',
    tests: ['test/auth/token-lineage-root.test.ts'],
  },
] satisfies Mutant[]
