// Planted bugs for the engine swap (SPEC §16.8) and the listener's per-source
// share (SPEC §16.7): each must make the named tests fail.
import type { Mutant } from './types.ts'

export default [
  {
    name: 'one source may take every listener connection',
    file: 'src/listener/listener.ts',
    from: 'export const MAX_PER_SOURCE = 16',
    to: 'export const MAX_PER_SOURCE = 64',
    tests: ['test/listener/fair-share.test.ts'],
  },
  {
    name: 'freed listener slots go in plain arrival order (a flooding source takes its turns back to back)',
    file: 'src/listener/fair-share.ts',
    from: '        if (open < fewest) {',
    to: '        if (open < this.limits.perSource && i < 0) {',
    tests: ['test/listener/fair-share.test.ts'],
  },
  {
    name: 'a full waiting line never makes room for another source',
    file: 'src/listener/fair-share.ts',
    from: 'if (this.line.length >= this.limits.waiting && !this.makeRoomFor(key)) return this.refuse(item)',
    to: 'if (this.line.length >= this.limits.waiting) return this.refuse(item)',
    tests: ['test/listener/fair-share.test.ts'],
  },
  {
    name: 'the new engine does not steer the reuseport group to itself',
    file: 'src/swap/steer.ts',
    from: 'if (steerGroup(fd, NEWEST)) steered++',
    to: 'if (fd >= 0) steered++',
    tests: ['test/swap/steer-drain.test.ts'],
    filter: 'steering',
  },
  {
    name: 'the old engine closes its listener without waiting for its accept queue (queued connections are reset)',
    file: 'src/swap/sockets.ts',
    from: 'export async function untilListenersDrained(port: number, deadlineMs: number): Promise<boolean> {',
    to: 'export async function untilListenersDrained(port: number, deadlineMs: number): Promise<boolean> {\n  if (port) return true',
    tests: ['test/swap/steer-drain.test.ts'],
    filter: 'drain',
  },
  {
    name: 'the old engine keeps handling requests after its services stopped (no hold, no forward)',
    file: 'src/swap/gate.ts',
    from: '    this.held ??= new Promise((resolve) => (this.settle = resolve))',
    to: '    this.settle = () => {}',
    tests: ['test/e2e/engine-swap.test.ts'],
  },
  {
    name: 'the new engine starts without the old one’s probe results (ready nodes flap to unreachable)',
    file: 'src/serve.ts',
    from: '  seedProbes(platform, probes)',
    to: '  void seedProbes',
    tests: ['test/e2e/engine-swap.test.ts'],
  },
  {
    name: 'a replacement engine reads its files only after the old one stopped (a bad file ends serve)',
    file: 'src/serve.ts',
    from: '    preflight(options)',
    to: '    void preflight',
    tests: ['test/e2e/engine-swap.test.ts'],
  },
  {
    name: 'a SIGHUP sent to an engine ends it',
    file: 'src/serve.ts',
    from: "  process.on('SIGHUP', () =>",
    to: "  process.on('SIGUSR2', () =>",
    tests: ['test/e2e/engine-swap.test.ts'],
  },
  {
    name: 'a new binary that never starts is waited on for far longer than 10 s',
    file: 'src/swap/supervisor.ts',
    from: 'export const START_WITHIN_MS = 10_000',
    to: 'export const START_WITHIN_MS = 100_000',
    tests: ['test/e2e/engine-swap.test.ts'],
  },
  {
    name: 'an engine starts without the serve process holding the lock',
    file: 'src/serve.ts',
    from: 'if (serveLockHolder(new DataDir(options.dataDir)) !== process.ppid) throw',
    to: 'if (serveLockHolder(new DataDir(options.dataDir)) === -1) throw',
    tests: ['test/e2e/engine-swap.test.ts'],
  },
] satisfies Mutant[]
