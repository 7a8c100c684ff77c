// The one logger for src/: everything goes to stderr, so a command's stdout
// stays clean for its result (and for --json).
//
// On a terminal, messages are wrapped at word boundaries to its width, so a
// long warning never breaks inside a word or a flag ("-\n-tls-cert") the way
// the terminal's own wrapping does. Pipes and files get the message as is.
import { createConsola, type ConsolaReporter } from 'consola'
import { tunableNumber } from './tunables.ts'

export const log = createConsola({
  stdout: process.stderr,
  stderr: process.stderr,
  level: tunableNumber('MUSTER_LOG_LEVEL'),
  formatOptions: { date: false },
})

/** Word-wraps each line of text to `width` columns; continuation lines are indented by `indent` spaces. Words longer than a line are left whole. */
export function wrapWords(text: string, width: number, indent = 0): string {
  if (width <= indent + 10) return text
  return text
    .split('\n')
    .map((line) => {
      const out: string[] = []
      let cur = ''
      for (const word of line.split(' ')) {
        const limit = out.length === 0 ? width : width - indent
        if (cur && cur.length + 1 + word.length > limit) {
          out.push(cur)
          cur = word
        } else cur = cur ? `${cur} ${word}` : word
      }
      out.push(cur)
      return out.join(`\n${' '.repeat(indent)}`)
    })
    .join('\n')
}

const columns = process.stderr.isTTY ? process.stderr.columns : 0
if (columns) {
  const inner = log.options.reporters
  const wrapping: ConsolaReporter = {
    log(logObj, ctx) {
      // The fancy reporter puts a two-column badge ("⚠ ") before the message.
      logObj.args = logObj.args.map((a) => (typeof a === 'string' ? wrapWords(a, columns - 3, 2) : a))
      for (const r of inner) r.log(logObj, ctx)
    },
  }
  log.setReporters([wrapping])
}
