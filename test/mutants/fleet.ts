// Planted bugs for machines across a network (docs/operations.md): the
// refused setup, addresses that bind what they say, the checks before serve
// creates anything, the listener's allow-list, and the bootstrap's checks.
import type { Mutant } from './types.ts'

export default [
  {
    name: 'a listener other machines reach with a loopback-only API starts anyway',
    ci: true,
    file: 'src/listener/plan.ts',
    from: '  if (plan.binds.every(isLoopback)) return\n',
    to: '  if (plan.binds.length > 0) return\n',
    tests: ['test/e2e/serve-start.test.ts'],
    filter: 'command that fixes it',
  },
  {
    name: '--enrollment-address 127.0.0.2 binds 127.0.0.1 (an address flag does not bind what it says)',
    ci: true,
    file: 'src/listener/plan.ts',
    from: "  return [...new Set(addresses.map((a) => (a === 'localhost' ? '127.0.0.1' : a)))]",
    to: "  return addresses.every(isLoopback) ? ['127.0.0.1'] : ['0.0.0.0']",
    tests: ['test/e2e/serve-start.test.ts'],
    filter: 'binds what it says',
  },
  {
    name: 'serve creates the CA, keys and superadmin before finding its port busy',
    ci: true,
    file: 'src/platform/serve-preflight.ts',
    from: "  await checkPort(o.host ?? '127.0.0.1', o.port ?? 7380, '--port')\n",
    to: '',
    tests: ['test/e2e/serve-start.test.ts'],
    filter: 'busy API port',
  },
  {
    name: 'an unwritable data directory is not checked first (EACCES from deep inside)',
    file: 'src/platform/serve-preflight.ts',
    from: '    accessSync(at, constants.W_OK | constants.X_OK)',
    to: '    accessSync(at, constants.F_OK)',
    tests: ['test/e2e/serve-start.test.ts'],
    filter: 'cannot write',
  },
  {
    name: 'the listener forwards any method on an allowed path',
    ci: true,
    file: 'src/listener/listener.ts',
    from: '    if (!method || req.method !== method) {',
    to: '    if (!method) {',
    tests: ['test/listener/listener.test.ts'],
    filter: 'GETs it forwards|every other method',
  },
  {
    name: 'the listener forwards the caller\'s headers (cookies, bearer tokens) with a bootstrap download',
    file: 'src/listener/listener.ts',
    from: "      return this.forward(new Request(`http://enrollment-listener${path}`, { method: 'GET' }))",
    to: "      return this.forward(new Request(`http://enrollment-listener${path}`, { method: 'GET', headers: req.headers }))",
    tests: ['test/listener/listener.test.ts'],
    filter: 'GETs it forwards',
  },
  {
    name: 'the bootstrap line runs a script from a Platform whose CA it did not check',
    ci: true,
    file: 'src/bootstrap/join-lines.ts',
    from: '| sha256sum -c >/dev/null || ',
    to: '| cat >/dev/null || ',
    tests: ['test/e2e/bootstrap.test.ts'],
    filter: 'impostor',
  },
  {
    name: 'the bootstrap installs a binary whose SHA-256 is not the one it names',
    ci: true,
    file: 'src/bootstrap/bootstrap.sh',
    from: '	[ "$got" = "$BIN_SHA256" ] || die "checksum mismatch for the muster binary',
    to: '	true || die "checksum mismatch for the muster binary',
    tests: ['test/e2e/bootstrap.test.ts'],
    filter: 'SHA-256',
  },
  {
    name: 'join tokens come without the lines to run on the machine',
    file: 'src/http/routes/nodes.ts',
    from: '      return { ...(await createFleetToken(fabric, parseBody(CreateJoinToken, body))), ...nodeCommands(platform, null) }',
    to: '      return { ...(await createFleetToken(fabric, parseBody(CreateJoinToken, body))) }',
    tests: ['test/e2e/remote-machines.test.ts'],
  },
] satisfies Mutant[]
