// Human and machine output for commands: JSON to stdout alone, tables for people.
// Every write is tracked, so the CLI ends only once its output is delivered,
// on a pipe to a slow reader too (a process.exit right after a write cuts a
// pipe at 64 KiB).
//
// The one place that makes text from outside safe for a terminal
// (docs/security.md, "What reaches a terminal"): a node's or office's version,
// a percent-decoded path in the audit, a log line, a server's error message
// can carry CR, LF, ESC sequences, C1 controls or bidi overrides; printed raw
// they move the cursor, erase rows and forge new ones. `clean` escapes every
// such character of a value (so a value is always one line); every table, line,
// log message and error the CLI prints passes through it or `cleanLines`.

// C0 controls, DEL and C1 controls; the bidi embeddings, overrides and isolates; line and paragraph separators.
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ufeff]/g
// The same, but newlines kept: for text this program composed over several lines.
const UNSAFE_BUT_NEWLINE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ufeff]/g
// What JSON.stringify leaves raw in a string (it escapes C0 controls itself).
const UNSAFE_IN_JSON = /[\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ufeff]/g
const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t', '\u001b': '\\e' }
const escapeOne = (c: string): string => NAMED[c] ?? (c.charCodeAt(0) <= 0xff ? `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}` : `\\u{${c.charCodeAt(0).toString(16)}}`)

/** A value from outside as one inert line: every control character (CR, LF, TAB, ESC, C1, DEL) and bidi control shown as an escape (`\e`, `\r`, `\x9b`, `\u{202e}`). */
export function clean(value: unknown): string {
  return (value === null || value === undefined ? '' : String(value)).replace(UNSAFE, escapeOne)
}

/** Text this program composed, possibly over several lines: the same escapes, but its own newlines kept. */
export function cleanLines(text: string): string {
  return text.replace(UNSAFE_BUT_NEWLINE, escapeOne)
}

/** A template whose literal parts are this program's and whose values are cleaned: esc`Node ${name} removed`. */
export function esc(strings: TemplateStringsArray, ...values: unknown[]): string {
  return strings.reduce((out, s, i) => out + s + (i < values.length ? clean(values[i]) : ''), '')
}
import { consola, type ConsolaInstance, type ConsolaReporter } from 'consola'
import { log } from '../src/log.ts'

type Write = (chunk: unknown, encoding?: unknown, cb?: (err?: Error | null) => void) => boolean
const lastWrite = new Map<NodeJS.WriteStream, Promise<void>>()

/** Wraps the stream's write (whoever calls it: these helpers, consola, citty) so its last write can be awaited. */
function track(stream: NodeJS.WriteStream): void {
  if (lastWrite.has(stream)) return
  lastWrite.set(stream, Promise.resolve())
  const original = stream.write.bind(stream) as Write
  stream.write = ((chunk: unknown, encoding?: unknown, cb?: (err?: Error | null) => void) => {
    const callback = typeof encoding === 'function' ? (encoding as typeof cb) : cb
    let done!: () => void
    // Bun calls write callbacks in order, so the newest one settling means every earlier write is out.
    lastWrite.set(stream, new Promise<void>((resolve) => (done = resolve)))
    return original(chunk, typeof encoding === 'function' ? undefined : encoding, (err) => {
      done()
      callback?.(err)
    })
  }) as NodeJS.WriteStream['write']
}

/** Every message a logger prints (the CLI's consola, src/log.ts of the Agent and serve) passes `cleanLines` first. */
function guardLogger(logger: ConsolaInstance): void {
  const inner = [...logger.options.reporters]
  const guarded: ConsolaReporter = {
    log(logObj, ctx) {
      logObj.args = logObj.args.map((a) => (typeof a === 'string' ? cleanLines(a) : a))
      for (const r of inner) r.log(logObj, ctx)
    },
  }
  logger.setReporters([guarded])
}

/** Starts tracking stdout and stderr and guards the loggers (the CLI calls this first). */
export function trackOutput(): void {
  track(process.stdout)
  track(process.stderr)
  guardLogger(consola)
  guardLogger(log)
}

/** Resolves once everything written so far to stdout and stderr has left the process. */
export async function outputDelivered(): Promise<void> {
  // A write made while waiting (a late log line) is waited for too.
  for (;;) {
    const pending = [...lastWrite.values()]
    await Promise.all(pending)
    if (pending.every((p, i) => p === [...lastWrite.values()][i])) return
  }
}

/**
 * JSON text whose strings are safe on a terminal too: JSON.stringify escapes C0 controls, and this escapes
 * what it leaves raw (DEL, C1 controls such as the 8-bit CSI, bidi controls) the same JSON way (the value is unchanged).
 */
export function jsonText(value: unknown, indent?: number): string {
  return (JSON.stringify(value, null, indent) ?? 'null').replace(UNSAFE_IN_JSON, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}

export function printJson(value: unknown): void {
  process.stdout.write(`${jsonText(value, 2)}\n`)
}

/** One JSON object on one line (`--json` of a command that prints one result, `--jsonl`). */
export function printJsonLine(value: unknown): void {
  process.stdout.write(`${jsonText(value)}\n`)
}

/** A line to stdout; values in it should come through `esc` (a raw newline in a value would start a forged line). */
export function printLine(line = ''): void {
  process.stdout.write(`${cleanLines(line)}\n`)
}

/** A line for people on stderr (what a command did, what is shown once below it). */
export function note(line: string): void {
  process.stderr.write(`${cleanLines(line)}\n`)
}

/** A plain aligned table; `-` for empty cells; every cell cleaned. */
export function printTable(headers: string[], rows: (string | number | null | undefined)[][]): void {
  const cells = rows.map((r) => r.map((c) => (c === null || c === undefined || c === '' ? '-' : clean(c))))
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((r) => r[i]?.length ?? 0)))
  const fmt = (r: string[]) => r.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  ').trimEnd()
  printLine(fmt(headers.map((h) => h.toUpperCase())))
  for (const r of cells) printLine(fmt(r))
}

export function ago(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return 'never'
  const s = Math.round((now - Date.parse(iso)) / 1000)
  if (s < 0) return `in ${-s}s`
  if (s < 90) return `${s}s ago`
  if (s < 5400) return `${Math.round(s / 60)}m ago`
  if (s < 129600) return `${Math.round(s / 3600)}h ago`
  return `${Math.round(s / 86400)}d ago`
}
