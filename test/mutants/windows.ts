// Issue 27: time windows checked on both sides and bindings no test separated
// before. Each entry is killed by a test that performs the violation through
// the path users hit (the Agent's HTTPS port, an office's call route, a
// Platform starting on its store).
import type { Mutant } from './types.ts'

export default [
  {
    name: 'a Platform-to-Agent request stamped in the future is accepted (skew check one-sided)',
    file: 'src/agent/signing.ts',
    from: 'if (Math.abs(now - timestamp) > MAX_SKEW_MS)',
    to: 'if (now - timestamp > MAX_SKEW_MS)',
    tests: ['test/agent/agent.test.ts'],
    filter: 'trust-key signature',
  },
  {
    name: 'the Agent accepts a signature by a trust key whose window has ended',
    file: 'src/agent/trust.ts',
    from: 'return keys.filter((k) => Date.parse(k.notBefore) <= now && now < Date.parse(k.notAfter))',
    to: 'return keys.filter((k) => Date.parse(k.notBefore) <= now)',
    tests: ['test/agent/agent.test.ts'],
    filter: 'window has ended',
  },
  {
    name: 'the Platform signs with an expired trust key when asked directly',
    file: 'src/fabric/trust-schedule.ts',
    from: 'const live = keys.filter((k) => nb(k) <= now && now < na(k))',
    to: 'const live = keys.filter((k) => nb(k) <= now)',
    tests: ['test/fabric/trust-schedule.test.ts'],
    filter: 'asked directly',
  },
  {
    name: 'an office accepts a controller call stamped in the future',
    file: 'src/federation/calls.ts',
    from: 'if (Math.abs(now - call.issuedAt) > CALL_WINDOW_MS)',
    to: 'if (now - call.issuedAt > CALL_WINDOW_MS)',
    tests: ['test/federation/place.test.ts'],
    filter: 'edited, replayed',
  },
  {
    name: 'the vault seals without the secret name (a copied row opens)',
    file: 'src/vault.ts',
    from: 'const sealedAs = (name: string) => `${PURPOSE}:${name}`',
    to: 'const sealedAs = (name: string) => `${PURPOSE}:${name.length >= 0 ? "" : name}`',
    tests: ['test/vault/name-binding.test.ts'],
  },
  {
    name: 'a fleet token claims a name being rebound (the rebind check loses its token kind)',
    file: 'src/fabric/enroll.ts',
    from: "const rebinding = existing !== null && existing.cert_sha256 === null && token.kind === 'enrollment'",
    to: 'const rebinding = existing !== null && existing.cert_sha256 === null',
    tests: ['test/fabric/credentials.test.ts'],
    filter: 'rebind kills',
  },
  {
    name: 'a node keeps replicas that no longer fit when its reported capacity shrinks',
    file: 'src/projects/placement.ts',
    from: 'if (n?.keeps && eligible(spec, n) && fits(n.name, spec)) {',
    to: 'if (n?.keeps && eligible(spec, n)) {',
    tests: ['test/projects/projects.test.ts'],
    filter: 'capacity shrinks',
  },
] satisfies Mutant[]
