// Fleet upgrades (docs/upgrading.md): each guarantee with a planted bug its
// test kills — signed releases the Platform cannot forge (manifest, keys,
// sequence, directives), rollouts (canaries, the bound, halts, Platforms
// first, one at a time, the audit, who may steer), the Agent's swap and its
// undo (the health gate, the journal, the download's checks) and cheap
// distribution (deltas). docs/testing.md lists them.
import type { Mutant } from './types.ts'

const DOCS = 'test/releases/documents.test.ts'
const PLAN = 'test/rollouts/plan.test.ts'
const SERVICE = 'test/rollouts/service.test.ts'
const ROUTES = 'test/rollouts/node-routes.test.ts'
const UPDATE = 'test/agent/update.test.ts'
const ATTACKS = 'test/agent/update-attacks.test.ts'
const CRASH = 'test/agent/update-crash.test.ts'
const SIGNED = 'src/signed/releases.ts'
const UPDATER = 'src/agent/update/updater.ts'

export default [
  // ---- releases the Platform cannot forge ---------------------------------------------------
  { name: 'upgrades: a manifest is taken without checking its signature', file: SIGNED, from: "  if (!verifyDomain(MANIFEST_DOMAIN, fromB64url(key.publicKey), canonicalJson(d.manifest), fromB64url(d.signature))) return { ok: false, reason: `the release manifest's signature by ${key.kid} does not verify` }\n", to: '', tests: [DOCS, ATTACKS], ci: true },
  { name: 'upgrades: a node holding release keys takes an unendorsed one too (a stolen Platform adds its own)', file: SIGNED, from: '  if (keys.length === 0) {\n    for (const k of list)', to: '  if (true) {\n    for (const k of list)', tests: [DOCS, ATTACKS], ci: true },
  { name: 'upgrades: an endorsement is taken without checking its signature', file: SIGNED, from: "  return k.endorsedBy === endorser.kid && typeof k.signature === 'string' && verifyDomain(ENDORSEMENT_DOMAIN, fromB64url(endorser.publicKey), endorsementBytes(k), fromB64url(k.signature))", to: '  return k.endorsedBy === endorser.kid', tests: [DOCS] },
  { name: 'upgrades: a directive for another node is carried out', file: 'src/signed/signed.ts', from: '  if (p.node !== node) return', to: '  if (false) return', tests: [DOCS, ATTACKS], ci: true },
  { name: 'upgrades: an expired directive is carried out', file: 'src/signed/documents.ts', from: '  if (now >= x.expiresAt) return', to: '  if (false) return', tests: [DOCS, ATTACKS] },
  { name: 'upgrades: an older signed release is installed over a newer one (replay)', file: UPDATER, from: '    if (man.sequence < j.sequence) return', to: '    if (man.sequence < 0) return', tests: [ATTACKS], filter: 'replayed' },
  { name: 'upgrades: a rolled-back release is installed again on the same node', file: 'src/rollouts/plan.ts', from: "  if (skipped.includes(r.sha256)) return", to: '  if (false) return', tests: [PLAN, UPDATE], filter: 'what a node starts as|exits at start' },
  { name: 'upgrades: the downloaded binary is not checked against the manifest SHA-256', file: 'src/agent/update/fetch-release.ts', from: '  if (got !== m.sha256) throw', to: '  if (false) throw', tests: [ATTACKS], filter: 'tampered' },
  { name: 'upgrades: a mirror that fails ends the download (no fallback to the Platform)', file: 'src/agent/update/fetch-release.ts', from: '      if (/no space left/.test(msg)) throw new FetchError(msg)', to: '      throw new FetchError(msg)', tests: [ATTACKS], filter: 'mirror' },
  // ---- rollouts --------------------------------------------------------------------------
  { name: 'upgrades: max-unavailable is not a bound (nodes in flight are not counted)', file: 'src/rollouts/plan.ts', from: '  const room = unavailableBudget(r.max_unavailable, s.total) - sum(s.counts, IN_FLIGHT)', to: '  const room = unavailableBudget(r.max_unavailable, s.total)', tests: [PLAN, SERVICE], ci: true },
  { name: 'upgrades: the rest are told before the canaries are done', file: 'src/rollouts/plan.ts', from: '  if (!canariesDone) {', to: '  if (false) {', tests: [PLAN, SERVICE], ci: true },
  { name: 'upgrades: the canaries go last in the plan', file: 'src/rollouts/plan.ts', from: '  return [...picked, ...rest].map((r, i) => ({ ...r, position: i }))', to: '  return [...rest, ...picked].map((r, i) => ({ ...r, position: i }))', tests: [PLAN] },
  { name: 'upgrades: a failed canary does not halt the rollout', file: 'src/rollouts/plan.ts', from: '  if (canaryFailure && r.failures_forgiven === 0) return', to: '  if (false) return', tests: [PLAN, SERVICE], ci: true },
  { name: 'upgrades: failures past the budget do not halt the rollout', file: 'src/rollouts/plan.ts', from: '  if (failures - r.failures_forgiven > r.max_failures) {', to: '  if (false) {', tests: [PLAN, SERVICE] },
  { name: 'upgrades: the soak after the canaries is not waited for', file: 'src/rollouts/plan.ts', from: '  if (r.canaries_done_at !== null && now < r.canaries_done_at + r.soak_ms) return', to: '  if (false) return', tests: [PLAN] },
  { name: 'upgrades: a rollout may target a version newer than a live Platform', file: 'src/rollouts/service.ts', from: '    if (behind.length === 0) return\n', to: '    return\n', tests: [SERVICE], filter: 'refused', ci: true },
  { name: 'upgrades: two rollouts at once', file: 'src/rollouts/service.ts', from: '    if (active) throw', to: '    if (false) throw', tests: [SERVICE], filter: 'refused' },
  { name: 'upgrades: an operator (not only a superadmin) starts and steers rollouts', file: 'src/http/routes/releases.ts', from: "platform.auth.require(request.headers, 'server.releases.manage')", to: "platform.auth.require(request.headers, 'server.nodes.manage')", tests: [SERVICE, 'test/http/permissions.test.ts'], filter: 'who may|rollouts|releases', ci: true },
  { name: 'upgrades: a node not told gets a directive', file: 'src/rollouts/service.ts', from: '    if (!n || !IN_FLIGHT.includes(n.state) || !n.release_sha256) return null', to: '    if (!n || !n.release_sha256) return null', tests: [ROUTES, SERVICE], ci: true },
  { name: "upgrades: a node's report for another release moves its row", file: 'src/rollouts/service.ts', from: '    if (!n || n.release_sha256 !== rep.sha256) return', to: '    if (!n) return', tests: [ROUTES] },
  { name: 'upgrades: a node told is not audited', file: 'src/rollouts/driver.ts', from: "            await this.step(t, r.id, 'rollout.node.told', row.name,", to: "            void (t, r.id, 'rollout.node.told', row.name,", tests: [SERVICE], filter: 'audited' },
  { name: 'upgrades: the heartbeat answer never says a rollout waits', file: 'src/fabric/heartbeat.ts', from: ` + (fabric.updateWanted(n.name) ? ',"update":true}' : '}')`, to: " + '}'", tests: ['test/fabric/heartbeat-answer.test.ts', SERVICE], ci: true },
  { name: 'upgrades: a node that joins during the rollout is left out', file: 'src/rollouts/driver.ts', from: '    if (fresh.length === 0) return', to: '    if (true) return', tests: [SERVICE], filter: 'joins during' },
  // ---- the Agent swaps itself and undoes a bad swap ----------------------------------------------
  { name: 'upgrades: a new Agent that exited passes the health gate', file: 'src/agent/update/gate.ts', from: '  if (!alive) return', to: '  if (false) return', tests: [UPDATE], filter: 'exits at start', ci: true },
  { name: 'upgrades: replicas killed by the new Agent do not fail the health gate', file: 'src/agent/update/gate.ts', from: '    if (!sameProcess(r.pid, r.startTime, u.boot ?? bootId())) return', to: '    if (false) return', tests: [UPDATE], filter: 'kills replicas' },
  { name: 'upgrades: a new Agent that never heartbeats passes the gate at the deadline', file: 'src/agent/update/gate.ts', from: '  if (!beat) return { state: \'fail\'', to: '  if (false) return { state: \'fail\'', tests: [UPDATE], filter: 'never heartbeats' },
  { name: 'upgrades: a rolled-back release is not skipped by the node afterwards', file: 'src/agent/update/verdict.ts', from: '  const skipped = [...j.skipped.filter((s) => s.sha256 !== u.to.sha256), { sha256: u.to.sha256, sequence: u.to.sequence, version: u.to.version, reason, at: new Date(now).toISOString() }].slice(-32)', to: '  const skipped = j.skipped', tests: [UPDATE], filter: 'exits at start' },
  { name: 'upgrades: an update interrupted before its trial is not undone at the next start', file: 'src/agent/update/launch.ts', from: "  if (j.step && j.step !== 'trial') {", to: '  if (false) {', tests: [CRASH], filter: 'downloading' },
  { name: 'upgrades: a trial whose watchdog died is never judged', file: UPDATER, from: '      if (watchdogAlive) return', to: '      if (true) return', tests: [CRASH], filter: 'watchdog' },
  { name: 'upgrades: a full disk is reported as an unexplained write failure', file: 'src/agent/update/fetch-release.ts', from: "      failure = err.code === 'ENOSPC' || err.code === 'EDQUOT'", to: '      failure = false', tests: [CRASH], filter: 'full disk' },
  // ---- cheap to distribute ------------------------------------------------------------------
  { name: 'upgrades: no delta for a node that runs a release the Platform holds', file: 'src/releases/service.ts', from: '    if (from && from !== sha256 && (await releaseBySha(this.ctx.store, from))) {', to: '    if (false) {', tests: [ROUTES], filter: 'delta', ci: true },
] satisfies Mutant[]
