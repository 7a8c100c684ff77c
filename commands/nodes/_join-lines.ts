// After a join token: what to run on the new machine (docs/operations.md), on stderr
// so that stdout stays the token alone for scripts (`--json` carries both lines).
import type { JoinCommands } from '../../src/client/nodes.ts'
import { clean, note } from '../_out.ts'

export function printJoinLines(c: JoinCommands, fleet: { pattern: string | null } | null): void {
  const out: string[] = ['']
  if (c.bootstrapCommand) {
    out.push('On the new machine, as root, with only curl and sh (it asks for the token above without echoing it):', `  ${clean(c.bootstrapCommand)}`)
    out.push('  (add --root DIR or --no-start at the end of the line to pass them to install.sh; running it again is harmless)')
  }
  if (c.joinCommand) {
    out.push(c.bootstrapCommand ? 'Or, where muster is installed (the token from stdin or the prompt):' : 'On the new machine, where muster is installed (the token from stdin or the prompt):', `  ${clean(c.joinCommand)}`)
    if (!c.bootstrapCommand) out.push('  (no bootstrap line: this Platform runs from source and has no muster binary to serve)')
  } else {
    out.push('No join line: this Platform has no enrollment listener. Start serve with --enrollment-port 7443 (and --host ADDR) to print one.')
  }
  if (fleet && c.joinCommand) out.push(`Replace NAME with the machine's name${fleet.pattern ? ` (matching ${clean(fleet.pattern)})` : ''}.`)
  note(out.join('\n'))
}
