// Planted bugs in the HTTP edge (SPEC §16.5–16.7): login throttling, the
// Origin checks, requests without a usable Host, certificates only BoringSSL
// refuses, the probe's address rule and generic reason, env masking.
import type { Mutant } from './types.ts'

export default [
  {
    name: 'a locked-out login is still checked (no 429)',
    file: 'src/auth/throttle.ts',
    from: "if (wait > 0) throw new MusterError('rate-limited'",
    to: "if (wait < 0) throw new MusterError('rate-limited'",
    tests: ['test/http/login.test.ts'],
    filter: 'login throttling',
  },
  {
    name: 'parallel guesses are not counted while pending',
    file: 'src/auth/throttle.ts',
    from: 'this.recent(s).length + s.pending >= this.opts.maxFailures',
    to: 'this.recent(s).length >= this.opts.maxFailures',
    tests: ['test/http/login.test.ts'],
    filter: 'parallel guesses',
  },
  {
    name: 'lockouts do not double',
    file: 'src/auth/throttle.ts',
    from: 'this.opts.firstLockMs * 2 ** s.lockouts',
    to: 'this.opts.firstLockMs',
    tests: ['test/http/login.test.ts'],
    filter: 'guessing loop',
  },
  {
    name: 'a success does not reset the account',
    file: 'src/auth/throttle.ts',
    from: 'if (a) Object.assign(a, { failures: [], lockouts: 0 })',
    to: '',
    tests: ['test/http/login.test.ts'],
    filter: 'guessing loop',
  },
  {
    name: 'login CSRF: only urlencoded forms need the Origin (multipart slips through)',
    file: 'src/http/app.ts',
    from: "request.method === 'POST' && !isJson(request) && !sameOrigin(request, publicHost)",
    to: "request.method === 'POST' && mediaType(request) === 'application/x-www-form-urlencoded' && !sameOrigin(request, publicHost)",
    tests: ['test/http/login.test.ts'],
    filter: 'login CSRF',
  },
  {
    name: 'a malformed Origin is parsed as a URL (500)',
    file: 'src/http/request.ts',
    from: "if (!/^https?:\\/\\/[^/?#\\s]+\\/?$/i.test(origin) || !URL.canParse(origin)) return 'opaque'",
    to: "if (origin === 'null') return 'opaque'",
    tests: ['test/http/login.test.ts', 'test/http/fuzz.test.ts'],
  },
  {
    name: 'an opaque Origin counts as this Platform',
    file: 'src/http/request.ts',
    from: "if (host === 'opaque') return false",
    to: "if (host === 'opaque') return true",
    tests: ['test/http/login.test.ts'],
    filter: 'login CSRF',
  },
  {
    name: 'a request without a usable Host is served',
    file: 'src/http/request.ts',
    from: 'if (/^https?:\\/\\//.test(request.url) && URL.canParse(request.url)) return null',
    to: 'return null',
    tests: ['test/http/malformed.test.ts'],
  },
  {
    name: 'anonymous certificates reach our DER reader without BoringSSL judging them',
    file: 'src/crypto/x509.ts',
    from: '    new X509Certificate(der)\n',
    to: '    void X509Certificate\n',
    tests: ['test/http/malformed.test.ts'],
  },
  {
    name: 'the probe dials a URL its certificate does not name',
    file: 'src/fabric/probe.ts',
    from: 'if (!urlNamedByCertificate(url, certPem)) return',
    to: 'if (!url) return',
    tests: ['test/fabric/probe.test.ts'],
  },
  {
    name: 'the node list shows why a probe failed (a port-scan oracle)',
    file: 'src/fabric/probe.ts',
    from: 'reason: PROBE_FAILED, detail })',
    to: 'reason: detail, detail })',
    tests: ['test/fabric/probe.test.ts'],
  },
  {
    name: 'viewers read env values',
    file: 'src/projects/redact.ts',
    from: "if (roleCan(role, 'server.projects.manage')) return project",
    to: 'return project',
    tests: ['test/e2e/env-masking.test.ts'],
  },
] satisfies Mutant[]
