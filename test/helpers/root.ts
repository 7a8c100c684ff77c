// Tests that need root (useradd --root, files owned by another account, setpriv)
// run in describeAsRoot: as root their names end in "[root]", so a summary can
// count that they ran; otherwise they are skipped with the reason in their names
// and one line on stderr.
import { describe } from 'bun:test'

export const asRoot = process.getuid?.() === 0

export function describeAsRoot(name: string, fn: () => void): void {
  if (asRoot) {
    describe(`${name} [root]`, fn)
    return
  }
  process.stderr.write(`skip: "${name}" needs root (running as uid ${process.getuid?.()}); CI runs it as root\n`)
  describe.skip(`${name} [root: skipped, not running as root]`, fn)
}
