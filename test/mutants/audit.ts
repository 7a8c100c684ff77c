// bugs planted by the project's own audit, written from the
// source of src/ha, src/store, src/context/vault.ts, src/crypto/seal.ts, src/swap,
// src/listener and src/federation without reading the tests first (the list as
// first recorded, with the nearest and the wider area's test files for each:
// commit d9dba47). Run against those files, 26 of the 51 survived: the
// entries marked "survived before" below. Each now names the test that kills
// it (added for the survivors), so the whole list stays fast in CI.
// `bun run mutants --only audit:` runs them all.
import type { Mutant } from './types.ts'

export default [
  // ---- ha --------------------------------------------------------------------
  // survived before
  {
    name: "audit: ha: a Platform that cannot renew keeps running leader loops (the local deadline is ignored)",
    file: "src/context/leases.ts",
    from: "return this.holding && performance.now() < this.until",
    to: "return this.holding",
    tests: ["test/ha/deadlines.test.ts"],
    filter: "TTL − renew",
    engines: ["postgres"],
  },
  // survived before
  {
    name: "audit: ha: the local lease deadline is counted from the answer, not from when the renewal was sent",
    file: "src/context/leases.ts",
    from: "sent + this.ttlMs - this.renewMs",
    to: "performance.now() + this.ttlMs - this.renewMs",
    tests: ["test/ha/deadlines.test.ts"],
    filter: "TTL − renew",
    engines: ["postgres"],
  },
  {
    name: "audit: ha: a clean stop does not give its leases up (the others wait out the TTL)",
    file: "src/context/leases.ts",
    from: "      await releaseLease(this.store, l.name, this.holder).catch(() => {})\n",
    to: "",
    tests: ["test/ha/leases.test.ts"],
    filter: "a clean stop gives the lease up",
    engines: ["postgres"],
  },
  {
    name: "audit: ha: releasing a lease releases it whoever holds it (a stopping Platform frees another's lease)",
    file: "src/store/leases.ts",
    from: "UPDATE leases SET expires_at = 0 WHERE name = ?1 AND holder = ?2",
    to: "UPDATE leases SET expires_at = 0 WHERE name = ?1 AND ?2 IS NOT NULL",
    tests: ["test/ha/leases.test.ts"],
    filter: "a clean stop gives the lease up",
    engines: ["postgres"],
  },
  // survived before
  {
    name: "audit: ha: the fence check passes a lease that expired but was not taken yet",
    file: "src/store/leases.ts",
    from: "const unexpired = exclusive ? '' : ` AND expires_at > ${dbNow(t.engine)}`",
    to: "const unexpired = ''",
    tests: ["test/ha/deadlines.test.ts"],
    filter: "expired by the database clock",
    engines: ["postgres"],
  },
  {
    name: "audit: ha: the node-facing Platform list is cached past a change of the live Platforms",
    file: "src/ha/live-platforms.ts",
    from: "if (c && c.live === this.live && c.apiUrl === s.apiUrl",
    to: "if (c && c.apiUrl === s.apiUrl",
    tests: ["test/ha/followers.test.ts"],
    filter: "heartbeat answers list only the live Platforms",
    engines: ["postgres"],
  },
  {
    name: "audit: ha: a cleanly stopped Platform is still offered to nodes (its row is not removed)",
    file: "src/ha/live-platforms.ts",
    from: "    await forgetPlatform(this.ctx.store, this.id).catch(() => {})\n",
    to: "",
    tests: ["test/ha/followers.test.ts"],
    filter: "heartbeat answers list only the live Platforms",
    engines: ["postgres"],
  },
  {
    name: "audit: ha: a Platform not seen for 10 s still counts as live",
    file: "src/store/platforms.ts",
    from: "WHERE last_seen_at > ${dbNow(db.engine)} - ?1 ORDER BY",
    to: "WHERE ?1 > 0 ORDER BY",
    tests: ["test/ha/deadlines.test.ts"],
    filter: "offered to nodes while seen",
    engines: ["postgres"],
  },
  // ---- store -----------------------------------------------------------------
  {
    name: "audit: store: a join token gives one use more than it has (racing enrolls)",
    file: "src/store/join-tokens.ts",
    from: "AND expires_at > ?2 AND uses < max_uses",
    to: "AND expires_at > ?2 AND uses <= max_uses",
    tests: ["test/store/db.test.ts"],
    filter: "150 takes on 100 uses",
  },
  // survived before
  {
    name: "audit: store: pruning the refusal budget deletes enrollment records",
    file: "src/store/enroll-audit.ts",
    from: "DELETE FROM enroll_audit WHERE budget = ?1 AND id <= (",
    to: "DELETE FROM enroll_audit WHERE id <= (",
    tests: ["test/store/edges.test.ts"],
    filter: "pruning keeps exactly",
  },
  // survived before
  {
    name: "audit: store: each audit budget keeps 501 entries",
    file: "src/store/enroll-audit.ts",
    from: "AND id <= (SELECT id FROM enroll_audit",
    to: "AND id < (SELECT id FROM enroll_audit",
    tests: ["test/store/edges.test.ts"],
    filter: "pruning keeps exactly",
  },
  {
    name: "audit: store: the live API-token list shows expired tokens",
    file: "src/store/token-lifecycle.ts",
    from: "const live = 'revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?1)'",
    to: "const live = 'revoked_at IS NULL AND ?1 > 0'",
    tests: ["test/auth/api-tokens.test.ts"],
    filter: "a login token ends after 30 days",
  },
  {
    name: "audit: store: a store holding one migration this binary does not know is opened",
    file: "src/store/db.ts",
    from: "if (unknown.length > 0) {",
    to: "if (unknown.length > 1) {",
    tests: ["test/store/db.test.ts"],
    filter: "written by a newer muster",
  },
  // survived before
  {
    name: "audit: store: Platforms starting together on one PostgreSQL migrate at the same time",
    file: "src/store/db.ts",
    from: "if (db.engine === 'postgres') await db.get('SELECT pg_advisory_xact_lock(?1)', MIGRATION_LOCK)",
    to: "void MIGRATION_LOCK",
    tests: ["test/store/edges.test.ts"],
    filter: "opening one new PostgreSQL database at once",
    engines: ["postgres"],
  },
  // survived before
  {
    name: "audit: store: migrate-store leaves the identity sequences behind (the next row collides with a copied id)",
    file: "src/store/migrate-store.ts",
    from: "        await t.get(`SELECT setval(pg_get_serial_sequence('${table}', '${column}'), GREATEST((SELECT MAX(${column}) FROM ${table}), 1))`)\n",
    to: "        void column\n",
    tests: ["test/store/edges.test.ts"],
    filter: "migrate-store: the next row",
    engines: ["postgres"],
  },
  {
    name: "audit: store: the SQLite store file is readable by other users",
    file: "src/store/sql.ts",
    from: "chmodSync(f, 0o600)",
    to: "chmodSync(f, 0o644)",
    tests: ["test/store/db.test.ts"],
    filter: "WAL and private",
  },
  // survived before
  {
    name: "audit: store: the store's label keeps the PostgreSQL password (it reaches messages and logs)",
    file: "src/store/sql-postgres.ts",
    from: "if (u.password) u.password = '***'",
    to: "void u.password",
    tests: ["test/store/edges.test.ts"],
    filter: "migrate-store: the next row",
    engines: ["postgres"],
  },
  // survived before
  {
    name: "audit: store: a deadlock on PostgreSQL is not retried (the request fails)",
    file: "src/store/sql-postgres.ts",
    from: "if (attempt >= 5 || !RETRYABLE.has(",
    to: "if (attempt >= 1 || !RETRYABLE.has(",
    tests: ["test/store/edges.test.ts"],
    filter: "deadlock",
    engines: ["postgres"],
  },
  {
    name: "audit: store: a failed lone transaction is not rolled back (the connection stays inside it)",
    file: "src/store/sql.ts",
    from: "        if (this.conn.db.inTransaction) exec('ROLLBACK')\n",
    to: "",
    tests: ["test/store/db.test.ts"],
    filter: "transactions roll back whole",
  },
  // ---- vault -----------------------------------------------------------------
  {
    name: "audit: vault: a secret that does not open reads as missing (the Platform would make a new one)",
    file: "src/context/vault.ts",
    from: "    if (value === null) throw sealedError()\n",
    to: "",
    tests: ["test/vault/name-binding.test.ts"],
  },
  // survived before
  {
    name: "audit: vault: a Platform with another master key starts on the store",
    file: "src/context/vault.ts",
    from: "if (!row || this.open(CHECK, row.sealed) !== 'muster') throw sealedError()",
    to: "if (!row) throw sealedError()",
    tests: ["test/vault/at-rest.test.ts"],
    filter: "cannot open the store",
  },
  // survived before
  {
    name: "audit: vault: the secret files of an older data directory stay on disk after the move into the store",
    file: "src/context/vault.ts",
    from: "    unlinkSync(file)\n",
    to: "",
    tests: ["test/vault/at-rest.test.ts"],
    filter: "older data directory",
  },
  {
    name: "audit: seal: the GCM tag is not checked (a changed ciphertext opens)",
    file: "src/crypto/seal.ts",
    from: "    d.setAuthTag(sealed.subarray(sealed.length - 16))\n",
    to: "",
    tests: ["test/vault/name-binding.test.ts"],
  },
  // survived before
  {
    name: "audit: seal: every value is sealed under the same nonce",
    file: "src/crypto/seal.ts",
    from: "const nonce = randomBytes(12)",
    to: "const nonce = new Uint8Array(12)",
    tests: ["test/vault/at-rest.test.ts"],
    filter: "a nonce of its own",
  },
  // ---- swap ------------------------------------------------------------------
  // survived before
  {
    name: "audit: swap: a client's own x-muster-swap-peer header reaches the new engine (its address is spoofed)",
    file: "src/swap/gate.ts",
    from: "headers.set(PEER_HEADER, peerAddress(req))",
    to: "if (!headers.has(PEER_HEADER)) headers.set(PEER_HEADER, peerAddress(req))",
    tests: ["test/swap/gate-forward.test.ts"],
  },
  // survived before
  {
    name: "audit: swap: a long poll is forwarded with its wait (the old engine is kept a minute)",
    file: "src/swap/gate.ts",
    from: "  u.searchParams.delete('wait')\n",
    to: "",
    tests: ["test/swap/gate-forward.test.ts"],
  },
  {
    name: "audit: swap: forwarded answers keep the client's connection to the old engine",
    file: "src/swap/gate.ts",
    from: "    out.set('connection', 'close')\n",
    to: "",
    tests: ["test/swap/quiesce.test.ts"],
  },
  // survived before
  {
    name: "audit: swap: kill -9 of serve kills only the supervisor (its engine stops cleanly: no crash is tested)",
    file: "src/swap/kill.ts",
    from: "  for (const pid of engines) process.kill(pid, 'SIGKILL')\n",
    to: "",
    tests: ["test/e2e/serve-signals.test.ts"],
    filter: "kill -9 kills the engine",
    engines: ["postgres"],
  },
  {
    name: "audit: swap: the new engine steers new connections to the old engine's listener",
    file: "src/sockets/steer.ts",
    from: "const NEWEST = 1",
    to: "const NEWEST = 0",
    tests: ["test/swap/steer-drain.test.ts"],
    filter: "steering",
  },
  // survived before
  {
    name: "audit: swap: stopping serve during a swap leaves the draining old engine running",
    file: "src/swap/supervisor.ts",
    from: "    for (const e of this.engines) e.kill('SIGTERM')",
    to: "    current.kill('SIGTERM')",
    tests: ["test/e2e/serve-signals.test.ts"],
    filter: "SIGTERM while the old engine still drains",
  },
  // survived before
  {
    name: "audit: swap: a SIGHUP that arrives during a swap is lost",
    file: "src/swap/supervisor.ts",
    from: "      this.again = true",
    to: "      this.again = false",
    tests: ["test/e2e/serve-signals.test.ts"],
    filter: "a SIGHUP that arrives during a swap",
  },
  // ---- listener --------------------------------------------------------------
  // survived before
  {
    name: "audit: listener: enroll and trust requests carry the caller's headers (cookies, bearer tokens) into the application",
    file: "src/listener/listener.ts",
    from: "const headers = new Headers({ accept: 'application/json', 'content-type': req.headers.get('content-type') ?? 'application/json' })",
    to: "const headers = new Headers(req.headers)",
    tests: ["test/listener/edges.test.ts"],
    filter: "crosses with its body and content type only",
  },
  // survived before
  {
    name: "audit: listener: a body of exactly 64 KiB is refused",
    file: "src/listener/listener.ts",
    from: "if (size > cap) {",
    to: "if (size >= cap) {",
    tests: ["test/listener/edges.test.ts"],
    filter: "one byte more is 413",
  },
  // survived before
  {
    name: "audit: listener: a waiting connection that went away stays in line (and later holds a slot)",
    file: "src/listener/listener.ts",
    from: "      else this.share.withdraw(client)\n",
    to: "",
    tests: ["test/listener/edges.test.ts"],
    filter: "at the end of its wait",
  },
  // survived before
  {
    name: "audit: listener: the certificate check on a new connection reads the monotonic clock",
    file: "src/listener/listener.ts",
    from: "if (this.ctx.now() >= this.tls.renewAt && this.renewals) {",
    to: "if (performance.now() >= this.tls.renewAt && this.renewals) {",
    tests: ["test/listener/edges.test.ts"],
    filter: "renewed certificate",
  },
  {
    name: "audit: listener: a closed connection never frees its source's share",
    file: "src/listener/fair-share.ts",
    from: "    bump(this.servedBy, key, -1)\n",
    to: "",
    tests: ["test/listener/fair-share.test.ts"],
    filter: "a freed slot goes to the waiting source",
  },
  {
    name: "audit: listener: one source gets one connection more than its share",
    file: "src/listener/fair-share.ts",
    from: "this.openFrom(key) < this.limits.perSource) return this.give(item, key)",
    to: "this.openFrom(key) <= this.limits.perSource) return this.give(item, key)",
    tests: ["test/listener/fair-share.test.ts"],
    filter: "a freed slot goes to the waiting source",
  },
  // survived before
  {
    name: "audit: listener: a freed slot goes to a source already at its share",
    file: "src/listener/fair-share.ts",
    from: "let fewest = this.limits.perSource",
    to: "let fewest = this.limits.perSource + 1",
    tests: ["test/listener/edges.test.ts"],
    filter: "never goes to a waiting source already at its share",
  },
  {
    name: "audit: listener: every IPv6 address of one /64 counts as its own source",
    file: "src/listener/fair-share.ts",
    from: "    .slice(0, 4)\n",
    to: "    .slice(0, 8)\n",
    tests: ["test/listener/fair-share.test.ts"],
    filter: "a source is an IPv4 address or an IPv6 /64",
  },
  {
    name: "audit: listener: IPv4 clients of a dual-stack listener all count as one source",
    file: "src/listener/fair-share.ts",
    from: "  if (mapped) return mapped[1]!\n",
    to: "",
    tests: ["test/listener/fair-share.test.ts"],
    filter: "a source is an IPv4 address or an IPv6 /64",
  },
  {
    name: "audit: listener: --host 0.0.0.0 publishes the wildcard as the address nodes use",
    file: "src/listener/plan.ts",
    from: "const hostIsSpecific = !isLoopback(host) && !WILDCARDS.has(host)",
    to: "const hostIsSpecific = !isLoopback(host)",
    tests: ["test/listener/plan.test.ts"],
    filter: "without addresses",
  },
  // ---- federation ------------------------------------------------------------
  // survived before
  {
    name: "audit: federation: a controller call replayed at the very end of its window is accepted (its nonce is pruned then)",
    file: "src/federation/calls.ts",
    from: "call.issuedAt + 2 * CALL_WINDOW_MS",
    to: "call.issuedAt + CALL_WINDOW_MS",
    tests: ["test/federation/edges.test.ts"],
    filter: "a replay is refused even at the very end",
  },
  {
    name: "audit: federation: a vouch's spent nonce expires in seconds, not milliseconds (it redeems twice)",
    file: "src/federation/office.ts",
    from: "spendNonce(db, vouch.nonce, 'vouch', vouch.expiresAt * 1000, now)",
    to: "spendNonce(db, vouch.nonce, 'vouch', vouch.expiresAt, now)",
    tests: ["test/federation/office.test.ts"],
    filter: "vouch redemption",
  },
  {
    name: "audit: federation: a vouch is accepted in the second it expires",
    file: "src/federation/vouch.ts",
    from: "if (v.expiresAt <= nowSeconds)",
    to: "if (v.expiresAt < nowSeconds)",
    tests: ["test/federation/vouch.test.ts"],
    filter: "refuses after 120 s",
  },
  // survived before
  {
    name: "audit: federation: a vouch that expires far in the future (a controller clock far ahead) is accepted",
    file: "src/federation/vouch.ts",
    from: "if (!signed || v.expiresAt > nowSeconds + VOUCH_TTL_SECONDS + MAX_SKEW_SECONDS) {",
    to: "if (!signed) {",
    tests: ["test/federation/edges.test.ts"],
    filter: "controller clock ahead",
  },
  {
    name: "audit: federation: a revoked office still gets signed registration and heartbeat answers",
    file: "src/federation/controller.ts",
    from: "if (o.revoked_at !== null) throw new MusterError('federation-token-revoked', `The token of office",
    to: "if (o.revoked_at === -1) throw new MusterError('federation-token-revoked', `The token of office",
    tests: ["test/federation/edges.test.ts"],
    filter: "a revoked office gets no signed answer",
  },
  {
    name: "audit: federation: a viewer token of a superadmin account vouches as superadmin",
    file: "src/federation/controller.ts",
    from: "isRole(account.role) ? lowerRole(caller.role, account.role) : caller.role",
    to: "isRole(account.role) ? account.role : caller.role",
    tests: ["test/federation/vouch-privilege.test.ts"],
    filter: "a viewer token of the superadmin account cannot vouch",
  },
  {
    name: "audit: federation: an unsigned heartbeat answer acknowledges break-glass reports (the office stops re-sending)",
    file: "src/federation/office-link.ts",
    from: "if (!this.verifies(DOMAINS.heartbeat, nonce, answer, { acknowledged: answer.acknowledged })) return false",
    to: "this.verifies(DOMAINS.heartbeat, nonce, answer, { acknowledged: answer.acknowledged })",
    tests: ["test/federation/link.test.ts"],
    filter: "a man in the middle cannot acknowledge",
  },
  // survived before
  {
    name: "audit: federation: stopping an office waits out a silent controller (its request is not aborted)",
    file: "src/federation/office-link.ts",
    from: "    this.abort.abort()\n",
    to: "",
    tests: ["test/federation/edges.test.ts"],
    filter: "an office stops at once",
  },
  {
    name: "audit: federation: a break-glass made under an earlier membership keeps the local door open after joining again",
    file: "src/federation/office-store.ts",
    from: "'SELECT * FROM office_break_glass WHERE token_fingerprint = ?1 ORDER BY at DESC, id DESC LIMIT 1'",
    to: "'SELECT * FROM office_break_glass WHERE ?1 IS NOT NULL ORDER BY at DESC, id DESC LIMIT 1'",
    tests: ["test/federation/office.test.ts"],
    filter: "break-glass is scoped to the token",
  },
  // survived before
  {
    name: "audit: federation: MUSTER_JOIN_TOKEN with a different token for the same office is silently ignored",
    file: "src/federation/membership.ts",
    from: "if (envToken && membership && fingerprintOfToken(envToken) !== membership.fingerprint) {",
    to: "if (envToken && membership && envToken.officeId !== membership.token.officeId) {",
    tests: ["test/federation/edges.test.ts"],
    filter: "MUSTER_JOIN_TOKEN naming another token",
  },
] satisfies Mutant[]
