// Planted bugs in replica containment and the node's files (trust, round four):
// each replica in its own cgroup with its limits, one uid per project, an Agent
// without systemd given the capabilities, and root writing safely into a
// directory another account owns. `--only 'replicas4'`.
import type { Mutant } from './types.ts'

export default [
  {
    name: 'replicas4: writeFileAtomic opens a predictable temporary name and follows a planted symlink',
    ci: true,
    file: 'src/datadir.ts',
    from: "  const tmp = `${file}.tmp-${randomBytes(12).toString('hex')}`\n  const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, mode & 0o777)",
    to: "  const tmp = `${file}.tmp-${process.pid}-${Date.now()}`\n  const fd = openSync(tmp, 'w', mode & 0o777)",
    tests: ['test/e2e/join-race.test.ts'],
  },
  {
    name: 'replicas4: a secret is written through a folder that is a symlink',
    file: 'src/datadir.ts',
    from: '    const dir = openDirNoFollow(this.root, dirname(rel))\n',
    to: '    const dir = undefined as number | undefined\n',
    tests: ['test/e2e/join-race.test.ts'],
  },
  {
    name: 'replicas4: keepOwner hands over a root-owned file that has another hard link',
    file: 'src/agent/keep-owner.ts',
    from: '        if (!dir && !(st.isFile() && st.nlink === 1)) continue',
    to: '        if (!dir && !st.isFile()) continue',
    tests: ['test/e2e/join-race.test.ts'],
  },
] satisfies Mutant[]
