// Imported first by the CLI's entry (commands/index.ts), before anything else
// loads: a secret given as a flag leaves this process's command line (what
// every local user reads in /proc/PID/cmdline) within the first milliseconds,
// not when the command gets round to reading it (src/own-argv.ts).
import { hideSecretFlags } from '../src/own-argv.ts'

/** The secret flags this process was given and hid; the commands warn about each as they read it. */
export const HIDDEN_SECRET_FLAGS: readonly string[] = hideSecretFlags(process.argv.slice(2))
