// Planted bugs for "a node's state is the truth", "errors say what to do" and
// "CLI output a script can trust" (docs/operations.md).
import type { Mutant } from './types.ts'

const STANDING_TEST = 'test/agent/standing.test.ts'
const NODE_TRUTH_E2E = 'test/e2e/node-truth.test.ts'
const JOIN_ERRORS_E2E = 'test/e2e/join-errors.test.ts'
const OUTPUT_E2E = 'test/e2e/output.test.ts'

export default [
  // The Agent: stops for good only on a refusal the Platform confirms; retries everything else, soon.
  {
    name: 'agent: a credential the Platform holds dead does not stop the Agent (it retries forever)',
    ci: true,
    file: 'src/agent/standing.ts',
    from: '    return isDead(r.standing) ? r.standing : undefined',
    to: '    return undefined',
    tests: [STANDING_TEST],
    filter: 'stops only when',
  },
  {
    name: 'agent: a Platform that cannot answer (5xx, 404) counts as a refusal for good',
    ci: true,
    file: 'src/agent/standing.ts',
    from: "    return code === 'node-revoked' ? 'revoked' : undefined",
    to: "    return 'revoked'",
    tests: [STANDING_TEST],
    filter: 'stops only when',
  },
  {
    name: 'agent: the reconnect back-off is not capped (40 s after a 25 s outage)',
    ci: true,
    file: 'src/agent/backoff.ts',
    from: '  const ceiling = Math.min(RECONNECT_CAP_MS, base * 2 ** Math.min(Math.max(failures - 1, 0), 16))',
    to: '  const ceiling = base * 2 ** Math.min(Math.max(failures - 1, 0), 16)',
    tests: [STANDING_TEST, NODE_TRUTH_E2E],
    filter: 'back-off|within 10 s',
  },
  {
    name: 'muster agent: a refusal for good exits 1 (the unit restarts it in a loop)',
    file: 'commands/agent.ts',
    from: '    if (refused) throw new ExitStatus(3, refused)',
    to: '    if (refused) throw new ExitStatus(1, refused)',
    tests: [NODE_TRUTH_E2E],
    filter: 'revoked, rebound',
  },
  {
    name: 'install.sh: the Agent unit restarts on status 3',
    file: 'install.sh',
    from: 'RestartPreventExitStatus=3\n',
    to: '',
    tests: ['test/install/install.test.ts'],
    filter: 'never on status 3',
  },
  // doctor and the node-state route
  {
    name: 'doctor: a revoked (dead) credential is a warning, so doctor exits 0',
    ci: true,
    file: 'src/doctor/doctor.ts',
    from: "    if (isDead(r.standing)) return add('credential', 'fail',",
    to: "    if (isDead(r.standing)) return add('credential', 'warn',",
    tests: [NODE_TRUTH_E2E],
    filter: 'revoked, rebound',
  },
  {
    name: 'node-state route: answers without checking the MAC (anyone learns a node is revoked)',
    ci: true,
    file: 'src/fabric/node-state.ts',
    from: '    if (!fabric.credentials.verify(c, certSha256)) throw refused()\n',
    to: '',
    tests: [STANDING_TEST],
    filter: 'generic refusal',
  },
  {
    name: 'node-state route: a node bound to another certificate reads as valid',
    file: 'src/fabric/node-state.ts',
    from: "    if (n.certSha256 !== certSha256) return { nodeId, credential: 'rebound' }\n",
    to: '',
    tests: [STANDING_TEST],
    filter: 'generic refusal',
  },
  {
    name: 'worker join: a directory whose credential is dead says "already joined; nothing to do"',
    ci: true,
    file: 'src/agent/join.ts',
    from: '    replaced = await deadCredential(dataDir, existing)\n',
    to: '',
    tests: [NODE_TRUTH_E2E],
    filter: 'revoked, rebound',
  },
  // readiness
  {
    name: 'probes: a node that never heartbeated is probed (and shows unreachable when its Agent starts)',
    ci: true,
    file: 'src/fabric/probe.ts',
    from: '(n) => n.lastSeenAt !== null && (!n.probe',
    to: '(n) => (!n.probe',
    tests: [NODE_TRUTH_E2E],
    filter: 'without passing through unreachable',
  },
  {
    name: 'registry: a heartbeating node not probed yet shows unreachable',
    file: 'src/fabric/registry.ts',
    from: "      if (!n.probe) return { state: 'enrolled', reason: 'health probe pending' }",
    to: "      if (!n.probe) return { state: 'unreachable', reason: 'health probe pending' }",
    tests: ['test/fabric/probe.test.ts'],
    filter: 'not yet probed',
  },
  // errors on the node
  {
    name: 'worker join: the API URL is not checked (joins a --tls-cert Platform it can never heartbeat to)',
    ci: true,
    file: 'src/agent/join.ts',
    from: '  await checkPlatformApi(url, pin, apiCaPem)\n',
    to: '',
    tests: [JOIN_ERRORS_E2E],
    filter: 'tls-cert',
  },
  {
    name: 'agent: the CA file given beside the pin is not used for the API',
    file: 'src/agent/connect.ts',
    from: '  const roots = fetcherFor(config.apiCaPem ? { caPem: config.apiCaPem } : { system: true })',
    to: '  const roots = fetcherFor({ system: true })',
    tests: [JOIN_ERRORS_E2E],
    filter: 'tls-cert',
  },
  {
    name: 'worker join: an untrusted chain shows the TLS library text, not the flags',
    file: 'src/client/net-errors.ts',
    from: "  if (UNTRUSTED.has(code) || /self[- ]signed certificate|unable to verify the first certificate|unable to get (local )?issuer certificate/i.test(text)) {",
    to: '  if (false) {',
    tests: [JOIN_ERRORS_E2E],
    filter: 'trust failure',
  },
  {
    name: 'worker join: a token of the wrong shape is sent to the Platform',
    file: 'src/agent/join.ts',
    from: '  checkTokenShape(token)\n',
    to: '',
    tests: [JOIN_ERRORS_E2E],
    filter: 'trust failure',
  },
  {
    name: 'worker join: the plain-http API port is not recognised',
    file: 'src/agent/join-checks.ts',
    from: '    if (await isMusterApi(url)) {',
    to: '    if (false) {',
    tests: [JOIN_ERRORS_E2E],
    filter: 'trust failure',
  },
  // output
  {
    name: 'CLI: the process exits before its output is delivered (a pipe is cut at 64 KiB)',
    ci: true,
    file: 'commands/_main.ts',
    from: '  await outputDelivered()\n',
    to: '',
    tests: [OUTPUT_E2E],
    filter: '1 MiB',
  },
  {
    name: 'CLI: no "did you mean" for a mistyped command',
    file: 'commands/_main.ts',
    from: '  return best && best.d <= Math.max(1, Math.floor(best.name.length / 3)) ? best.name : undefined',
    to: '  return undefined',
    tests: [OUTPUT_E2E],
    filter: 'did you mean',
  },
  {
    name: 'cloud provision: a loopback enrollment listener is accepted for a real provider (billed, never joins)',
    ci: true,
    file: 'src/cloud/reachable.ts',
    from: '  if (loopbackUrl(urls.enrollmentUrl)) return',
    to: '  if (false) return',
    tests: ['test/cloud/provision.test.ts'],
    filter: 'could never reach',
  },
] satisfies Mutant[]
