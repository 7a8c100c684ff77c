// The one logger for src/: everything goes to stderr, so a command's stdout
// stays clean for its result (and for --json).
//
// On a terminal, messages are wrapped at word boundaries to its width, so a
// long warning never breaks inside a word or a flag ("-\n-tls-cert") the way
// the terminal's own wrapping does. Pipes and files get the message as is.
//
// `--log-format json` (serve, agent) writes one JSON object a line instead:
// time, level, message, and the fields a call names with `fields({ node })`
// (docs/monitoring.md). The human format leaves the fields out, so a message
// reads the same in both.
import { createConsola, type ConsolaInstance, type ConsolaReporter, type LogObject } from 'consola'
import { format } from 'node:util'
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

const FIELDS = Symbol('log fields')
export type LogFields = Record<string, string | number | boolean | null | undefined> & { readonly [FIELDS]: true }

/** Fields for the JSON format (node, project, request, …), given as a log call's last argument: `log.info('…', fields({ node }))`. */
export function fields(f: Record<string, string | number | boolean | null | undefined>): LogFields {
  return Object.assign(Object.create(null), f, { [FIELDS]: true as const })
}

const isFields = (a: unknown): a is LogFields => typeof a === 'object' && a !== null && FIELDS in a

/** The human reporters, with fields dropped. */
function human(reporters: ConsolaReporter[]): ConsolaReporter {
  return {
    log(logObj, ctx) {
      if (logObj.args.some(isFields)) logObj.args = logObj.args.filter((a) => !isFields(a))
      for (const r of reporters) r.log(logObj, ctx)
    },
  }
}

const LEVELS: Record<string, string> = { fatal: 'fatal', error: 'error', warn: 'warn', log: 'info', info: 'info', success: 'info', ready: 'info', start: 'info', box: 'info', debug: 'debug', trace: 'trace', verbose: 'debug' }

/** One JSON object a line: {time, level, message, …fields}; an error argument adds `error`. */
export function jsonLine(logObj: Pick<LogObject, 'args' | 'type' | 'date'> & { tag?: string }): string {
  const extra: Record<string, unknown> = {}
  const parts: unknown[] = []
  for (const a of logObj.args) {
    if (isFields(a)) {
      for (const [k, v] of Object.entries(a)) if (v !== undefined && !(k in { time: 1, level: 1, message: 1 })) extra[k] = v
    } else if (a instanceof Error) extra.error = a.message
    else parts.push(a)
  }
  const message = parts.map((p) => (typeof p === 'string' ? p : format('%o', p))).join(' ')
  return `${JSON.stringify({ time: logObj.date.toISOString(), level: LEVELS[logObj.type] ?? 'info', message, ...(logObj.tag ? { tag: logObj.tag } : {}), ...extra })}\n`
}

let json = false
/** Whether logs are JSON lines (a command's last error line follows: commands/_main.ts). */
export const logsAreJson = (): boolean => json

const jsonReporter: ConsolaReporter = { log: (logObj) => void process.stderr.write(jsonLine(logObj)) }
const humanReporters = new WeakMap<ConsolaInstance, ConsolaReporter[]>()

/** Sets the format of `log` and of any other consola instances a command prints with (commands/ pass the global one). */
export function setLogFormat(format: 'human' | 'json', ...others: ConsolaInstance[]): void {
  json = format === 'json'
  for (const c of [log, ...others]) {
    if (!humanReporters.has(c)) humanReporters.set(c, c.options.reporters)
    c.setReporters([format === 'json' ? jsonReporter : human(humanReporters.get(c)!)])
  }
}
setLogFormat('human')
