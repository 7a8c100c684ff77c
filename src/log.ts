// The one logger for src/: everything goes to stderr, so a command's stdout
// stays clean for its result (and for --json).
import { createConsola } from 'consola'

export const log = createConsola({
  stdout: process.stderr,
  stderr: process.stderr,
  level: process.env.MUSTER_LOG_LEVEL ? Number(process.env.MUSTER_LOG_LEVEL) : 3,
  formatOptions: { date: false },
})
