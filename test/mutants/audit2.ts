// second self-audit (worktree audit2): one-line bugs of the
// kind a tired developer makes, planted by reading the source of agent,
// fabric, auth, http, cloud, projects, bootstrap and the CLI — before looking
// at which tests would catch them. Every entry stays, killed by the test named
// first (the ones that survived the first run got a test of their own).
import type { Mutant } from './types.ts'

export default [
  // ---- agent -----------------------------------------------------------------------------------
  {
    name: 'audit2: a stopped replica is never dropped from the runner (reported and never started again)',
    file: 'src/replicas/runner.ts',
    from: '    if (this.replicas.get(key) === s) this.replicas.delete(key)\n',
    to: '    void key\n',
    tests: ['test/projects/runner.test.ts', 'test/agent/workloads.test.ts'],
  },
  {
    name: 'audit2: an adopted replica that exits after the Agent adopted it is never restarted',
    file: 'src/replicas/runner.ts',
    from: '      if (!s.placeholder) this.scheduleRestart(s)',
    to: '      void s.placeholder',
    tests: ['test/projects/runner.test.ts', 'test/agent/workloads.test.ts'],
  },
  {
    name: 'audit2: the restart backoff resets while a replica crash-loops (stable-run check flipped)',
    file: 'src/replicas/runner.ts',
    from: 'if (s.startedAt && Date.now() - s.startedAt > this.opts.stableAfterMs) s.restarts = 0',
    to: 'if (s.startedAt && Date.now() - s.startedAt < this.opts.stableAfterMs) s.restarts = 0',
    tests: ['test/projects/runner.test.ts', 'test/agent/workloads.test.ts'],
  },
  {
    name: 'audit2: log rotation copies to .1 but never truncates the current log',
    file: 'src/replicas/log-files.ts',
    from: '    truncateSync(file, 0)\n',
    to: '',
    tests: ['test/projects/log-files.test.ts', 'test/projects/runner.test.ts'],
  },
  {
    name: 'audit2: revision 0 on a new Agent leaves what an earlier Agent ran running',
    file: 'src/agent/workloads.ts',
    from: '      runner.apply([])\n',
    to: '',
    tests: ['test/agent/agent-audit2.test.ts', 'test/agent/workloads.test.ts', 'test/agent/assignments.test.ts'],
  },
  {
    name: 'audit2: after an operator rotates the credential the Agent does not renew at once',
    file: 'src/agent/agent.ts',
    from: 'if ((credentialGeneration(this.credential) ?? r.generation) < r.generation) await this.renew()',
    to: 'if ((credentialGeneration(this.credential) ?? r.generation) > r.generation) await this.renew()',
    tests: ['test/agent/agent.test.ts', 'test/agent/refresh.test.ts'],
  },
  {
    name: 'audit2: a failed daily trust refresh waits a whole period, not a minute',
    file: 'src/agent/agent.ts',
    from: 'this.trustDueAt = asked + Math.min(RETRY_MS, this.intervals.trust)',
    to: 'this.trustDueAt = asked + this.intervals.trust',
    tests: ['test/agent/agent-audit2.test.ts', 'test/agent/refresh.test.ts', 'test/agent/agent.test.ts'],
  },
  {
    name: 'audit2: a node joined over https takes a plain-http Platform from a heartbeat list',
    file: 'src/agent/platform-choice.ts',
    from: "const protocols = joinedApi.startsWith('https:') ? ['https:'] : ['https:', 'http:']",
    to: "const protocols = ['https:', 'http:']",
    tests: ['test/agent/platforms.test.ts', 'test/agent/agent.test.ts'],
  },
  {
    name: 'audit2: a trust answer moves the node to a plain-http API on another machine',
    file: 'src/agent/anchors.ts',
    from: "(u.protocol === 'http:' && (isLoopback(u.hostname) || a.insecureNodeTraffic === true))",
    to: "u.protocol === 'http:'",
    tests: ['test/agent/anchors.test.ts', 'test/agent/trust.test.ts', 'test/agent/refresh.test.ts'],
  },
  {
    name: 'audit2: a join over a dead credential keeps the old agent key and certificate',
    file: 'src/agent/join.ts',
    from: 'for (const f of [WORKER.config, WORKER.credential, PLATFORMS_FILE, WORKER.key, WORKER.cert]) rmSync',
    to: 'for (const f of [WORKER.config, WORKER.credential, PLATFORMS_FILE]) rmSync',
    tests: ['test/agent/join.test.ts', 'test/agent/standing.test.ts', 'test/e2e/node-truth.test.ts'],
  },
  {
    name: 'audit2: a trust answer holding only keys not valid yet replaces the working set',
    file: 'src/signed/keys.ts',
    from: "if (keysValidAt(live, now).length === 0) throw new Error('no key in the answer is valid now')",
    to: "if (live.length === 0) throw new Error('no key in the answer is valid now')",
    tests: ['test/agent/trust.test.ts', 'test/agent/refresh.test.ts'],
  },
  // ---- fabric ----------------------------------------------------------------------------------
  {
    name: "audit2: an idle node's renewals pile up past the burst of 3 (bucket not capped)",
    file: 'src/fabric/renew.ts',
    from: 'b.tokens = Math.min(this.opts.burst, b.tokens + (now - b.at) / this.opts.intervalMs)',
    to: 'b.tokens = b.tokens + (now - b.at) / this.opts.intervalMs',
    tests: ['test/fabric/fabric-audit2.test.ts', 'test/fabric/renew.test.ts', 'test/fabric/rate-limit.test.ts'],
  },
  {
    name: "audit2: a revoked node's credential is told it is valid (its Agent never stops)",
    file: 'src/fabric/node-state.ts',
    from: "    if (n.revokedAt !== null) return { nodeId, credential: 'revoked' }\n",
    to: '',
    tests: ['test/agent/standing.test.ts', 'test/fabric/credentials.test.ts', 'test/e2e/node-truth.test.ts'],
  },
  {
    // Replaces "a rebind leaves earlier pending enrollments usable", planted here and by perms at once (perms.ts keeps it).
    name: "audit2: a fleet token's name pattern is matched the wrong way round",
    file: 'src/fabric/enroll.ts',
    from: '!globMatch(token.name_pattern, body.nodeId)) return await refuse',
    to: '!globMatch(body.nodeId, token.name_pattern)) return await refuse',
    tests: ['test/fabric/enroll.test.ts', 'test/fabric/glob.test.ts', 'test/fabric/credentials.test.ts'],
  },
  {
    name: 'audit2: a new generation is not read back into the registry (the old one stays current here)',
    file: 'src/fabric/fabric.ts',
    from: '    await this.registry.refresh(name)\n    if (generation === null)',
    to: '    if (generation === null)',
    tests: ['test/fabric/renew.test.ts', 'test/fabric/credentials.test.ts', 'test/fabric/windows.test.ts'],
  },
  {
    // Replaces "enroll-token --replace leaves the earlier token usable", planted here and by perms at once (perms.ts keeps it).
    name: 'audit2: a fleet token with uses left is listed as used one use early',
    file: 'src/fabric/join-tokens.ts',
    from: "t.uses >= t.max_uses ? 'used' : 'active'",
    to: "t.uses >= t.max_uses - 1 ? 'used' : 'active'",
    tests: ['test/fabric/fabric-audit2.test.ts', 'test/fabric/enroll.test.ts', 'test/e2e/tokens.test.ts'],
  },
  {
    name: 'audit2: a node enrolled after the first listing is missing from later listings (sorted names not reset)',
    file: 'src/fabric/registry.ts',
    from: '      if (had < 0) this.placeName(name, true)\n',
    to: '',
    tests: ['test/fabric/fabric-audit2.test.ts', 'test/fabric/listing.test.ts', 'test/e2e/listing.test.ts'],
  },
  {
    name: 'audit2: the local node is repeated on every page of the node listing',
    file: 'src/fabric/listing.ts',
    from: 'if (q.after === undefined && (q.state === undefined || local.state === q.state)) nodes.push(local)',
    to: 'if (q.state === undefined || local.state === q.state) nodes.push(local)',
    tests: ['test/fabric/listing.test.ts', 'test/e2e/local-node.test.ts'],
  },
  {
    name: 'audit2: an agent answering /health as another node passes the readiness probe',
    file: 'src/fabric/probe.ts',
    from: 'if (body?.node !== name) return failed(',
    to: "if (typeof body?.node !== 'string') return failed(",
    tests: ['test/fabric/fabric-audit2.test.ts', 'test/fabric/probe.test.ts'],
  },
  // ---- auth ------------------------------------------------------------------------------------
  {
    name: 'audit2: an API token of a disabled account keeps working',
    file: 'src/auth/auth.ts',
    from: 'if (!acct || acct.disabled || expired(acct.expires_at, now) || !isRole(acct.role)) return null\n      // A token never',
    to: 'if (!acct || expired(acct.expires_at, now) || !isRole(acct.role)) return null\n      // A token never',
    tests: ['test/auth/accounts.test.ts', 'test/auth/auth.test.ts', 'test/e2e/accounts.test.ts'],
  },
  {
    name: 'audit2: a password of exactly the minimum length is refused',
    file: 'src/auth/accounts.ts',
    from: 'if (b.password.length < MIN_PASSWORD_LENGTH)',
    to: 'if (b.password.length <= MIN_PASSWORD_LENGTH)',
    tests: ['test/e2e/cli-audit2.test.ts', 'test/auth/accounts.test.ts', 'test/e2e/accounts.test.ts'],
  },
  {
    name: "audit2: one account's successful login clears its address's failures for every account",
    file: 'src/auth/throttle.ts',
    from: 'if (b) b.failures = b.failures.filter((f) => f.account !== account)',
    to: 'if (b) b.failures = []',
    tests: ['test/http/login.test.ts', 'test/auth/auth.test.ts'],
  },
  // ---- http ------------------------------------------------------------------------------------
  {
    // The link itself (GET /office/vouch) is a page that spends nothing now (docs/federation.md); its form's POST redeems.
    name: 'audit2: a vouch redeemed by its link (POST /office/vouch, the page\'s form) is not audited as a redemption',
    file: 'src/http/audit-actions.ts',
    from: "  { method: 'POST', path: '/office/vouch', action: 'federation.vouch.redeem', anonymous: { principal: UNKNOWN_PRINCIPAL, kind: 'anonymous' }, notes: true },\n",
    to: '',
    tests: ['test/audit/vouch-link-audit.test.ts', 'test/audit/audit.test.ts', 'test/federation/vouch.test.ts'],
  },
  {
    name: 'audit2: the documented maximum page size (limit=5000) is refused',
    file: 'src/wire/paging.ts',
    from: 'Number(rawLimit) > MAX_LIMIT)',
    to: 'Number(rawLimit) >= MAX_LIMIT)',
    tests: ['test/fabric/listing.test.ts', 'test/http/malformed.test.ts', 'test/client/sdk.test.ts'],
  },
  // ---- the CLI ---------------------------------------------------------------------------------
  {
    name: 'audit2: `nodes audit --all` stops after the second page',
    file: 'commands/nodes/audit.ts',
    from: 'while (r.nextCursor !== null) {',
    to: 'if (r.nextCursor !== null) {',
    tests: ['test/e2e/cli-audit2.test.ts', 'test/e2e/nodes.test.ts', 'test/e2e/cli.test.ts'],
  },
  {
    name: "audit2: a saved login's token is sent to whatever --platform-url names",
    file: 'commands/_client.ts',
    from: 'const same = saved && saved.url === url',
    to: 'const same = saved',
    tests: ['test/e2e/cli-audit2.test.ts', 'test/e2e/cli.test.ts', 'test/e2e/tokens.test.ts'],
  },
  {
    name: 'audit2: --token on the command line gives no warning',
    file: 'commands/_main.ts',
    from: "if (flag !== '--database' && flag !== '--to') warnArgvSecret(flag)",
    to: "if (flag !== '--database' && flag !== '--to' && flag !== '--token') warnArgvSecret(flag)",
    tests: ['test/e2e/cli-audit2.test.ts', 'test/e2e/cli.test.ts', 'test/e2e/output.test.ts'],
  },
  {
    name: 'audit2: a usage error exits 1 instead of 2',
    file: 'commands/_main.ts',
    from: '    say(`${label}: ${e.message}\\nRun \\`${label} --help\\` for usage.\\n`)\n    return 2\n  }\n  if (e instanceof MusterError)',
    to: '    say(`${label}: ${e.message}\\nRun \\`${label} --help\\` for usage.\\n`)\n    return 1\n  }\n  if (e instanceof MusterError)',
    tests: ['test/e2e/cli.test.ts'],
  },
  {
    name: 'audit2: a secret file others can read is accepted (--password-file, --enrollment-token-file)',
    file: 'commands/_secret.ts',
    from: '      assertPrivate(src.file.value)\n',
    to: '',
    tests: ['test/e2e/cli-audit2.test.ts', 'test/e2e/cli.test.ts', 'test/e2e/accounts.test.ts', 'test/e2e/worker.test.ts'],
  },
  // ---- cloud -----------------------------------------------------------------------------------
  {
    // Replaces "a failed provision's first-boot token stays usable", planted here and by perms at once (perms.ts keeps it).
    name: 'audit2: a create that is not idempotent is sent again after its answer was lost',
    file: 'src/cloud/http.ts',
    from: 'if (!o.idempotent || last || waited + wait > policy.maxWaitMs) throw e',
    to: 'if (last || waited + wait > policy.maxWaitMs) throw e',
    tests: ['test/cloud/resilience.test.ts', 'test/cloud/providers.test.ts', 'test/cloud/every-provider.test.ts'],
  },
  {
    name: 'audit2: a permanent refusal of a create is retried until the provision times out',
    file: 'src/cloud/provisioner.ts',
    from: 'if (retryable(e) && now() - row.created_at < this.timeoutMs) {',
    to: 'if (now() - row.created_at < this.timeoutMs) {',
    tests: ['test/cloud/provision.test.ts', 'test/cloud/resilience.test.ts'],
  },
  {
    name: 'audit2: a create that is not idempotent is sent again after a transient answer',
    file: 'src/cloud/http.ts',
    from: "if (!verdict || last || (verdict.kind === 'transient' && !o.idempotent)) return { ...a, verdict }",
    to: 'if (!verdict || last) return { ...a, verdict }',
    tests: ['test/cloud/http-retry-audit2.test.ts', 'test/cloud/resilience.test.ts', 'test/cloud/providers.test.ts'],
  },
  {
    name: 'audit2: 501 Not Implemented is retried as a transient failure',
    file: 'src/cloud/retry.ts',
    from: 'if (status >= 500 && status !== 501 && status !== 505)',
    to: 'if (status >= 500 && status !== 505)',
    tests: ['test/cloud/http-retry-audit2.test.ts', 'test/cloud/resilience.test.ts', 'test/cloud/providers.test.ts', 'test/cloud/every-provider.test.ts'],
  },
  {
    name: 'audit2: a shortfall that ended and came back is held from its first start',
    file: 'src/cloud/autoscale.ts',
    from: '    if (this.cloud.deps.projects.shortfall().total === 0) {\n      this.shortfallSince = null\n',
    to: '    if (this.cloud.deps.projects.shortfall().total === 0) {\n',
    tests: ['test/cloud/autoscale.test.ts'],
  },
  {
    name: 'audit2: scale-out orders one machine past the maximum',
    file: 'src/cloud/autoscale.ts',
    from: 'if ((await existingMachines(db)).length >= s.max_machines)',
    to: 'if ((await existingMachines(db)).length > s.max_machines)',
    tests: ['test/cloud/autoscale.test.ts'],
  },
  // ---- projects --------------------------------------------------------------------------------
  {
    name: 'audit2: a replica is placed on a node without the memory for it',
    file: 'src/projects/placement.ts',
    from: 'return f !== undefined && f.cpu >= spec.cpu && f.memory >= spec.memory',
    to: 'return f !== undefined && f.cpu >= spec.cpu',
    tests: ['test/projects/placement.test.ts', 'test/projects/projects.test.ts'],
  },
  {
    name: 'audit2: a deploy that changes only the env keeps the revision (nodes keep the old env)',
    file: 'src/projects/service.ts',
    from: 'canonicalJson({ command: old.command, env: old.env, cpu: old.cpu, memory: old.memory })',
    to: 'canonicalJson({ command: old.command, env: spec.env, cpu: old.cpu, memory: old.memory })',
    tests: ['test/projects/redeploy-env.test.ts', 'test/projects/projects.test.ts', 'test/agent/assignments.test.ts'],
  },
  {
    // Replaces "another operator's follow cursor reads the follow", planted here and by perms at once (perms.ts keeps it;
    // projects/log-follow-audit2.test.ts kills both).
    name: 'audit2: replicas leave an unreachable node before its grace ends (the stale window not counted)',
    file: 'src/projects/service.ts',
    from: "quietFor <= reg.staleAfterMs + this.graceMs",
    to: 'quietFor <= this.graceMs',
    tests: ['test/projects/grace-edge.test.ts', 'test/projects/projects.test.ts', 'test/projects/placement.test.ts'],
  },
  {
    name: "audit2: a follow's keep-alive is stored as a chunk (the lines sent next under its seq are lost)",
    file: 'src/projects/logs.ts',
    from: '    if (chunk.seq > 0 && chunk.lines.length === 0) return\n',
    to: '',
    tests: ['test/projects/log-follow-audit2.test.ts', 'test/projects/local-logs.test.ts', 'test/e2e/logs.test.ts'],
  },
  // ---- bootstrap -------------------------------------------------------------------------------
  {
    name: 'audit2: the bootstrap runs an install.sh whose checksum does not match',
    file: 'src/bootstrap/bootstrap.sh',
    from: '[ "$got" = "$INSTALL_SHA256" ] || die',
    to: '[ -n "$got" ] || die',
    tests: ['test/e2e/bootstrap.test.ts'],
  },
] satisfies Mutant[]
