// Planted bugs in the enrollment, Agent, install and federation wiring and
// in the rate limiter's clock: each must make the named tests fail.
import type { Mutant } from './types.ts'

const ENROLL = 'src/fabric/enroll.ts'
const ENROLL_TEST = 'test/fabric/enroll.test.ts'

export default [
  // byte-identical refusals: one refusal told apart from the rest, or its reason lost.
  {
    name: 'enroll: the tombstone refusal gets its own message',
    ci: true,
    file: ENROLL,
    from: "return await refuse('name was removed (tombstoned)')",
    to: "throw new MusterError('enrollment-refused', 'This name was removed.')",
    tests: [ENROLL_TEST],
    filter: 'byte-identical',
  },
  {
    name: 'enroll: the reserved name is refused with its own code',
    file: ENROLL,
    from: "if (body.nodeId === 'local') return await refuse('reserved name')",
    to: "if (body.nodeId === 'local') throw new MusterError('name-taken', 'The name local is reserved.')",
    tests: [ENROLL_TEST],
    filter: 'byte-identical',
  },
  {
    name: 'enroll: a revoked node repeating its enrollment is told it was revoked',
    file: ENROLL,
    from: "if (existing.revoked_at !== null) return await refuse('node revoked')",
    to: "if (existing.revoked_at !== null) throw new MusterError('node-revoked', 'This node has been revoked.')",
    tests: [ENROLL_TEST],
    filter: 'byte-identical',
  },
  {
    name: 'enroll: refusal reasons no longer reach the audit log',
    file: ENROLL,
    from: "audit('refused', reason, body.nodeId, body.version)",
    to: "audit('refused', null, body.nodeId, body.version)",
    tests: [ENROLL_TEST],
    filter: 'byte-identical',
  },
  {
    name: 'enroll: a malformed token is audited as unknown',
    file: ENROLL,
    from: "m ? 'unknown token' : 'malformed token'",
    to: "'unknown token'",
    tests: [ENROLL_TEST],
    filter: 'byte-identical',
  },
  // the version check ahead of revocation and expiry: a bad token gets a telling 409.
  {
    name: 'enroll: worker-newer checked before revocation, name and expiry',
    ci: true,
    file: ENROLL,
    from: '    // 6. check revocation, name binding or pattern, expiry\n',
    to: `    if (body.version && compareVersions(body.version, VERSION) > 0) throw new MusterError('worker-newer', \`This node runs muster \${body.version}, newer than the Platform's \${VERSION}; update the Platform first.\`)\n`,
    tests: [ENROLL_TEST],
    filter: 'worker-newer never shows',
  },
  // the token-use compare-and-set, contended across two connections (SQLite and PostgreSQL).
  {
    name: 'store: the token-use compare-and-set checks only the id',
    ci: true,
    file: 'src/store/join-tokens.ts',
    from: 'WHERE id = ?1 AND revoked_at IS NULL AND expires_at > ?2 AND uses < max_uses',
    to: 'WHERE id = ?1',
    tests: ['test/store/db.test.ts'],
    filter: '150 takes on 100 uses',
    engines: ['sqlite', 'postgres'],
  },
  // the repeat path's conditions.
  {
    name: 'enroll: a repeat no longer needs the same token',
    ci: true,
    file: ENROLL,
    from: 'existing.cert_sha256 === certSha256 && existing.token_id === token.id',
    to: 'existing.cert_sha256 === certSha256',
    tests: [ENROLL_TEST],
    filter: 'a repeat with the same token',
  },
  {
    name: 'enroll: a repeat no longer checks that the node was revoked',
    ci: true,
    file: ENROLL,
    from: "if (existing.revoked_at !== null) return await refuse('node revoked')",
    to: '',
    tests: [ENROLL_TEST],
    filter: 'byte-identical',
  },
  // install.sh: the download is pinned, not only the probe before it.
  {
    name: 'install.sh: the download no longer pins the probed key',
    ci: true,
    file: 'install.sh',
    from: 'set -- --proto =https --insecure --pinnedpubkey "sha256//$PIN_KEY"',
    to: 'set -- --proto =https --insecure',
    tests: ['test/install/install.test.ts'],
    filter: 'swaps its certificate',
  },
  // the Agent's verification loop: a document whose check failed is applied anyway.
  {
    name: 'agent: assignments that fail their check are applied anyway',
    ci: true,
    file: 'src/agent/workloads.ts',
    from: [
      '      if (!check.ok) {',
      '        log.warn(`refused assignments: ${check.reason}`)',
      '        return',
      '      }',
      '      const next = check.doc.payload',
    ].join('\n'),
    to: ['      if (!check.ok) log.warn(`refused assignments: ${check.reason}`)', '      const next = (doc as Extract<typeof check, { ok: true }>[\'doc\']).payload'].join('\n'),
    tests: ['test/e2e/assignments.test.ts'],
  },
  // the assignment revision across Agent restarts.
  {
    name: 'agent: the assignments revision is no longer written to disk',
    ci: true,
    file: 'src/agent/workloads.ts',
    from: 'if (next.revision !== revision) agent.dataDir.writeSecret(REVISION_FILE, `${next.revision}\\n`)',
    to: '',
    tests: ['test/agent/assignments.test.ts'],
  },
  {
    name: 'agent: the stored assignments revision is not read at start',
    file: 'src/agent/workloads.ts',
    from: "let revision = Number(agent.dataDir.readSecretText(REVISION_FILE)?.trim() ?? '0') || 0",
    to: 'let revision = 0',
    tests: ['test/agent/assignments.test.ts'],
  },
  // Rate limits run on the Platform's clock (the tests move it).
  {
    name: 'rate limits: the enroll limiter ignores the Platform clock',
    file: 'src/fabric/fabric.ts',
    from: "enroll: new RateLimiter('enroll', options.enrollLimit, this.now)",
    to: "enroll: new RateLimiter('enroll', options.enrollLimit)",
    tests: ['test/fabric/trust-limits.test.ts'],
    filter: 'enroll over its limit',
  },
  {
    name: 'rate limits: a clock stepping back drains the bucket',
    file: 'src/fabric/rate-limit.ts',
    from: 'if (now > this.last) {',
    to: 'if (true) {',
    tests: ['test/fabric/rate-limit.test.ts'],
  },
  // the office's registration nonce.
  {
    name: 'federation: the office registers with a constant nonce',
    ci: true,
    file: 'src/federation/office-link.ts',
    from: `const nonce = b64url(randomBytes(32))
    const answer = await this.post('/api/v1/federation/register'`,
    to: `const nonce = 'A'.repeat(43)
    const answer = await this.post('/api/v1/federation/register'`,
    tests: ['test/federation/link.test.ts'],
    filter: 'replayed genuine registration',
  },
  {
    name: 'enroll: a revoked join token is not refused as revoked',
    ci: true,
    file: 'src/fabric/enroll.ts',
    from: "if (token.revoked_at !== null) return await refuse('token revoked')",
    to: '',
    tests: ['test/fabric/enroll.test.ts'],
  },
] satisfies Mutant[]
