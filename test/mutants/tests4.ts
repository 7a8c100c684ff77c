// The guarantees an independent audit still broke unseen (tests, round four):
// a time window that must forget, bookkeeping of connections that went away,
// a pair of writes a crash can separate, a lease taken again with a new fence,
// and token lineage by origin. Each entry is killed by a test through the real
// component (a held clock, real sockets, the store after a crash between the
// writes, two `muster serve` on PostgreSQL).
import type { Mutant } from './types.ts'

export default [
  {
    name: 'tests4: the failed-login window never forgets (old typos add up to a lockout)',
    ci: true,
    file: 'src/auth/throttle.ts',
    from: 'return (s.failures = s.failures.filter((f) => now - f.at < this.opts.windowMs))',
    to: 'return s.failures',
    tests: ['test/auth/throttle-window.test.ts'],
  },
  {
    name: 'tests4: a failed login still counts at the very millisecond it is 5 minutes old',
    file: 'src/auth/throttle.ts',
    from: 'return (s.failures = s.failures.filter((f) => now - f.at < this.opts.windowMs))',
    to: 'return (s.failures = s.failures.filter((f) => now - f.at <= this.opts.windowMs))',
    tests: ['test/auth/throttle-window.test.ts'],
    filter: 'not at the 5 minutes',
  },
  {
    name: "tests4: listener: a waiting connection that went away still counts in its source's share of the line",
    ci: true,
    file: 'src/listener/fair-share.ts',
    from: '    bump(this.waitingBy, this.line[i]!.key, -1)\n    this.line.splice(i, 1)',
    to: '    this.line.splice(i, 1)',
    tests: ['test/listener/gone-waiters.test.ts'],
  },
  {
    name: 'tests4: a stored server certificate whose key is not its own (a crash between the writes) is served',
    ci: true,
    file: 'src/pki/server-cert.ts',
    from: "  if (!keyMatchesCert(stored.certPem, stored.keyPem)) return 'the key does not match the certificate'\n",
    to: '',
    tests: ['test/pki/torn-cert.test.ts'],
  },
  {
    name: 'tests4: a lease taken again with a new fence is not announced (only holder changes are)',
    ci: true,
    file: 'src/context/leases.ts',
    from: 'const changed = held !== this.holding || (held && fence !== this.fence)',
    to: 'const changed = held !== this.holding',
    tests: ['test/ha/lease-regained.test.ts'],
  },
  {
    name: "tests4: a password change revokes the login tokens but not the tokens minted with them (lineage not followed)",
    ci: true,
    file: 'src/store/account-admin.ts',
    from: `    tokens: await revokeTokensWhere(t, "account = ?2 AND origin = 'login'", now, account),`,
    to: `    tokens: await t.run("UPDATE api_tokens SET revoked_at = ?1 WHERE account = ?2 AND origin = 'login' AND revoked_at IS NULL", now, account),`,
    tests: ['test/auth/token-lineage.test.ts'],
    filter: 'through their lineage',
  },
  {
    // Through the routes this one is equivalent: the lineage ends such a token with the password anyway
    // (token-lineage.test.ts shows it by rewriting the origin). It is killed by the stored record the
    // test reads, which keeps the origin a second tie for when no parent is known.
    name: "tests4: a token minted with a login's token is stored as an ordinary API token (origin 'api')",
    file: 'src/auth/api-tokens.ts',
    from: "origin = p.token?.origin === 'login' ? 'login' : 'api'",
    to: "origin = 'api'",
    tests: ['test/auth/token-lineage.test.ts'],
  },
  // ---- the same classes elsewhere (docs/testing.md, "Windows, cleanups, torn writes and leases") ----
  {
    name: 'tests4: lockouts are never forgotten (a lockout today doubles next week’s)',
    file: 'src/auth/throttle.ts',
    from: 's.lockedUntil + (s.lockouts > 0 ? this.opts.maxLockMs : 0)',
    to: 's.lockedUntil + (s.lockouts > 0 ? Infinity : 0)',
    tests: ['test/auth/lockout-memory.test.ts'],
  },
  {
    name: 'tests4: lockouts are forgotten as soon as one ends (they never double)',
    file: 'src/auth/throttle.ts',
    from: 's.lockedUntil + (s.lockouts > 0 ? this.opts.maxLockMs : 0)',
    to: 's.lockedUntil',
    tests: ['test/auth/lockout-memory.test.ts'],
  },
  {
    name: 'tests4: a node uploads to a log request after it expired',
    file: 'src/projects/logs.ts',
    from: "if (!row || row.node !== node.name || row.expires_at <= now) throw new MusterError('not-found', 'No such log request for this node.')",
    to: "if (!row || row.node !== node.name) throw new MusterError('not-found', 'No such log request for this node.')",
    tests: ['test/projects/log-expiry-edge.test.ts'],
  },
  {
    name: 'tests4: a node uploads to a log request at the very millisecond it expires',
    file: 'src/projects/logs.ts',
    from: "if (!row || row.node !== node.name || row.expires_at <= now) throw new MusterError('not-found', 'No such log request for this node.')",
    to: "if (!row || row.node !== node.name || row.expires_at < now) throw new MusterError('not-found', 'No such log request for this node.')",
    tests: ['test/projects/log-expiry-edge.test.ts'],
  },
  {
    name: 'tests4: a polled log follow is not renewed (it ends a minute after it began)',
    file: 'src/projects/logs.ts',
    from: '    await renewLogRequest(this.ctx.store, id, this.ctx.now() + FOLLOW_TTL_MS)\n',
    to: '',
    tests: ['test/projects/log-follow-window.test.ts'],
  },
  {
    name: 'tests4: a log follow whose node went quiet never ends',
    file: 'src/projects/logs.ts',
    from: 'if (heard === null || this.ctx.now() - heard > NODE_SILENT_MS) {',
    to: 'if (heard === null) {',
    tests: ['test/projects/log-follow-silent.test.ts'],
  },
  {
    name: 'tests4: a log follow ends when its node was quiet for exactly the stale window',
    file: 'src/projects/logs.ts',
    from: 'if (heard === null || this.ctx.now() - heard > NODE_SILENT_MS) {',
    to: 'if (heard === null || this.ctx.now() - heard >= NODE_SILENT_MS) {',
    tests: ['test/projects/log-follow-silent.test.ts'],
  },
  {
    name: 'tests4: a rollout whose new revision never runs keeps the old one assigned for ever',
    file: 'src/projects/service.ts',
    from: ' || this.now() - p.previous.since > ROLLING_LIMIT_MS),',
    to: '),',
    tests: ['test/projects/rolling-limit.test.ts'],
  },
  {
    name: 'tests4: a rollout drops the old revision at exactly 10 minutes',
    file: 'src/projects/service.ts',
    from: ' || this.now() - p.previous.since > ROLLING_LIMIT_MS),',
    to: ' || this.now() - p.previous.since >= ROLLING_LIMIT_MS),',
    tests: ['test/projects/rolling-limit.test.ts'],
  },
  {
    name: 'tests4: a replica that ran stably keeps its longest restart delay (the backoff never forgets)',
    file: 'src/replicas/runner.ts',
    from: '    if (s.startedAt && Date.now() - s.startedAt > this.opts.stableAfterMs) s.restarts = 0\n',
    to: '',
    tests: ['test/projects/runner-backoff.test.ts'],
  },
  {
    name: 'tests4: a refused heartbeat keeps its in-flight place (refusals fill the heartbeat limit)',
    file: 'src/http/heartbeat.ts',
    from: '      return new Response(acceptHeartbeatText(fabric, n, body), { headers: JSON_HEADERS })\n    } catch (e) {\n      return refusal(e)\n    } finally {\n      limit.leave()\n    }',
    to: '      const answer = new Response(acceptHeartbeatText(fabric, n, body), { headers: JSON_HEADERS })\n      limit.leave()\n      return answer\n    } catch (e) {\n      return refusal(e)\n    }',
    tests: ['test/fabric/heartbeat-slots.test.ts'],
  },
  {
    name: 'tests4: enrollment audit pruning removes entries younger than 30 days',
    file: 'src/store/enroll-audit.ts',
    from: "await db.run('DELETE FROM enroll_audit WHERE at < ?1', now - AUDIT_MAX_AGE_MS)",
    to: "await db.run('DELETE FROM enroll_audit WHERE at <= ?1', now - AUDIT_MAX_AGE_MS)",
    tests: ['test/store/audit-age.test.ts'],
  },
  {
    name: 'tests4: a password change ends the sessions in a transaction of its own (a crash between leaves them working)',
    ci: true,
    file: 'src/auth/auth.ts',
    from: '    return this.db.tx(async (t) => {\n      await setPasswordHash(t, account, hash)\n      return endAccountSessions(t, account, this.now())\n    })',
    to: '    await setPasswordHash(this.db, account, hash)\n    return endAccountSessions(this.db, account, this.now())',
    tests: ['test/e2e/password-torn.test.ts'],
  },
] satisfies Mutant[]
