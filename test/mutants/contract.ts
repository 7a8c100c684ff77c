// Planted bugs in the node rules from the seeds (SPEC §16.6, §16.8, §16.11):
// removing a healthy node, `newer` compatibility, the local node's superadmin
// rule, join tokens as bearers, declared names, label placement, the build
// rule, and the enroll in-flight cap.
import type { Mutant } from './types.ts'

export default [
  {
    name: 'a healthy node is removed without --force',
    file: 'src/fabric/fabric.ts',
    from: 'if (!force && this.registry.healthy(n)) {',
    to: 'if (!force && false) {',
    tests: ['test/fabric/node-rules.test.ts'],
    filter: 'nodes remove and health',
  },
  {
    name: 'a node heartbeating within the stale window does not count as healthy',
    file: 'src/fabric/registry.ts',
    from: 'return n.lastSeenAt !== null && this.now() - n.lastSeenAt <= this.staleAfterMs',
    to: 'return n.lastSeenAt !== null && this.now() - n.lastSeenAt <= 0',
    tests: ['test/fabric/node-rules.test.ts'],
    filter: 'nodes remove and health',
  },
  {
    name: 'a node newer than the Platform is listed current',
    file: 'src/fabric/registry.ts',
    from: "return order < 0 ? 'behind' : order > 0 ? 'newer' : 'current'",
    to: "return order < 0 ? 'behind' : 'current'",
    tests: ['test/fabric/enroll.test.ts'],
    filter: 'compatibility',
  },
  {
    name: 'the local node takes any project (an operator runs code with the Platform’s privileges)',
    file: 'src/projects/placement.ts',
    from: "if (node.name === 'local' && !spec.allowLocal) return false",
    to: '',
    tests: ['test/projects/placement.test.ts', 'test/projects/eligibility.test.ts', 'test/e2e/local-node.test.ts'],
  },
  {
    name: 'any deployer counts as a superadmin for the local node',
    file: 'src/projects/service.ts',
    from: "const mayRunOnLocal = (p: Project) => p.origin === 'local' && p.deployerRole === 'superadmin'",
    to: "const mayRunOnLocal = (p: Project) => p.origin === 'local'",
    tests: ['test/projects/eligibility.test.ts', 'test/e2e/local-node.test.ts'],
  },
  {
    name: 'a controller-placed project counts as a superadmin’s',
    file: 'src/projects/service.ts',
    from: "const mayRunOnLocal = (p: Project) => p.origin === 'local' && p.deployerRole === 'superadmin'",
    to: "const mayRunOnLocal = (p: Project) => p.deployerRole === 'superadmin' || p.origin !== 'local'",
    tests: ['test/projects/eligibility.test.ts'],
    filter: 'the local node',
  },
  {
    name: 'a join token is accepted as a bearer (no 403)',
    file: 'src/http/request.ts',
    from: "if (!/^mjt_/i.test(bearer) || isPath(request, '/api/v1/nodes/enroll')) return null",
    to: 'return null',
    tests: ['test/fabric/node-rules.test.ts'],
    filter: 'join token',
  },
  {
    name: 'a declared name enrolls with a fleet token',
    file: 'src/fabric/enroll.ts',
    from: "if (token.kind !== 'enrollment' && fabric.declared.has(body.nodeId)) return await refuse('declared name needs an enrollment for it')",
    to: '',
    tests: ['test/fabric/declared.test.ts', 'test/e2e/nodes.test.ts'],
  },
  {
    name: 'a declared name registers with the legacy shared token',
    file: 'src/fabric/fabric.ts',
    from: 'if (this.declared.has(nodeId)) throw',
    to: 'if (false) throw',
    tests: ['test/fabric/declared.test.ts'],
    filter: 'declared nodes',
  },
  {
    name: 'what the node reports wins over the nodes file',
    file: 'src/fabric/fabric.ts',
    from: 'return { labels: d?.labels ?? n.labels, drained: d?.drained ?? n.drained, declared: d !== undefined }',
    to: 'return { labels: n.labels, drained: n.drained, declared: d !== undefined }',
    tests: ['test/fabric/declared.test.ts', 'test/e2e/nodes.test.ts'],
  },
  {
    name: 'a bad nodes file on reload replaces the running set',
    file: 'src/fabric/nodes-file.ts',
    from: 'const fresh = readNodesFile(this.file)',
    to: 'let fresh = new Map<string, DeclaredNode>()\n    try {\n      fresh = readNodesFile(this.file)\n    } catch {}',
    tests: ['test/fabric/declared.test.ts'],
    filter: 'reload',
  },
  {
    name: 'a project is placed on a node missing a label it asks for',
    file: 'src/fabric/labels.ts',
    from: 'for (const [k, val] of Object.entries(wanted)) if (node[k] !== val) return false',
    to: '',
    tests: ['test/projects/placement.test.ts', 'test/projects/eligibility.test.ts', 'test/e2e/labels.test.ts'],
  },
  {
    name: 'a build node takes projects that do not ask for role=build',
    file: 'src/fabric/labels.ts',
    from: "if (node.role === 'build' && wanted.role !== 'build') return false",
    to: '',
    tests: ['test/projects/placement.test.ts', 'test/projects/eligibility.test.ts', 'test/e2e/labels.test.ts'],
  },
  {
    name: 'the enroll in-flight cap is not enforced',
    file: 'src/fabric/rate-limit.ts',
    from: 'if (this.inFlight >= this.opts.maxInFlight) throw this.refusal(1)',
    to: '',
    tests: ['test/fabric/enroll-cap.test.ts'],
  },
] satisfies Mutant[]
