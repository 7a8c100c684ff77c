// Planted bugs in the fourth round of trust fixes (docs/security.md): no-op
// writes are no actions, unforgeable audit principals, vouched sessions bound
// to the membership and limited, escaped terminal output, the vouch link
// without login CSRF or HEAD, an office's version checked, secrets off argv,
// node log uploads capped. `--only 'security4'`.
import type { Mutant } from './types.ts'

export default [
  {
    name: 'security4: a percent-decoded path parameter lands in the audit target unchecked',
    ci: true,
    file: 'src/http/audit-actions.ts',
    from: 'const p = (name: string) => (params: Record<string, string>) => str(params[name] ?? null)',
    to: 'const p = (name: string) => (params: Record<string, string>) => params[name] ?? null',
    tests: ['test/e2e/terminal-escapes.test.ts'],
    filter: 'anonymous DELETE',
  },
  {
    name: 'security4: the CLI prints a value from outside raw (no escaping of control characters)',
    ci: true,
    file: 'commands/_out.ts',
    from: "  return (value === null || value === undefined ? '' : String(value)).replace(UNSAFE, escapeOne)",
    to: "  return value === null || value === undefined ? '' : String(value)",
    tests: ['test/e2e/terminal-escapes.test.ts'],
    filter: 'dist/muster',
  },
  {
    name: "security4: a server's error message is printed with its newlines and escapes",
    file: 'commands/_main.ts',
    from: "typeof e.detail?.status === 'number' ? clean(e.message) : e.message",
    to: 'e.message',
    tests: ['test/e2e/terminal-escapes.test.ts'],
    filter: 'hostile server',
  },
  {
    name: 'security4: a logout that ends no session is recorded as an action',
    ci: true,
    file: 'src/http/routes/auth.ts',
    from: "      if (!sid || !(await platform.auth.logout(sid))) noteAudit(request, { unchanged: true })",
    to: '      if (sid) await platform.auth.logout(sid)',
    tests: ['test/e2e/audit-principals.test.ts'],
    filter: 'logging out in a loop',
  },
  {
    name: 'security4: an entry written before its action ran trims the actions budget (a refused or no-op write pushes an action out on its way in)',
    file: 'src/audit/audit.ts',
    from: "        (e.outcome ?? 'started') !== 'started',",
    to: '        true,',
    tests: ['test/e2e/audit-principals.test.ts'],
    filter: 'logging out in a loop',
  },
  {
    name: "security4: no principal's share of the budget (one principal's real writes push everyone else's out)",
    ci: true,
    file: 'src/store/audit-log.ts',
    from: '  if (writer !== undefined) {',
    to: '  if (false) {',
    tests: ['test/e2e/audit-principals.test.ts'],
    filter: 'logging out in a loop',
  },
  {
    name: 'security4: an account-less API token appears in the audit under the name its minter chose',
    ci: true,
    file: 'src/audit/audit.ts',
    from: "  if (p.kind === 'api-token') return { principal: principalName(p), kind: 'api-token', tokenId: p.token?.id ?? null }",
    to: "  if (p.kind === 'api-token') return { principal: p.account ?? p.name, kind: 'api-token', tokenId: p.token?.id ?? null }",
    tests: ['test/e2e/audit-principals.test.ts'],
    filter: 'never her',
  },
  {
    name: 'security4: "deployed by" names an account-less token by its chosen name',
    file: 'src/auth/auth.ts',
    from: "  return p.account ?? (p.token ? `token:${p.token.id}` : `token:${p.name}`)",
    to: '  return p.account ?? p.name',
    tests: ['test/e2e/audit-principals.test.ts'],
    filter: 'never her',
  },
  {
    name: "security4: a refused request presenting someone's token id is recorded under that token",
    file: 'src/http/audit-hook.ts',
    from: '          .record({ principal: UNKNOWN_PRINCIPAL, kind: ',
    to: '          .record({ principal: tokenId ? `token:${tokenId}` : UNKNOWN_PRINCIPAL, kind: ',
    tests: ['test/e2e/audit-principals.test.ts'],
    filter: 'never her',
  },
] satisfies Mutant[]
