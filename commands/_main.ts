// Runs the CLI: finds the subcommand, prints help, refuses unknown flags (exit
// 2), runs it, and turns errors into one clear line (exit 1), never a stack.
import { renderUsage, runCommand, type ArgsDef, type CommandDef } from 'citty'
import { MusterError } from '../src/errors.ts'
import { jsonLine, logsAreJson, wrapWords } from '../src/log.ts'
import { UsageError } from './_args.ts'
import { examplesFor } from './_examples.ts'
import { clean, cleanLines, outputDelivered, trackOutput } from './_out.ts'
import { tunable } from '../src/tunables.ts'

/** A command's own exit status with one line for stderr (the Agent's 3: its credential is refused for good). */
export class ExitStatus extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message)
    this.name = 'ExitStatus'
  }
}

/**
 * The CLI's whole life: runs the command, then ends the process only once
 * its output has left (a pipe to a slow reader gets every byte; docs/operations.md).
 */
export async function runCli(root: AnyCommand, argv: string[]): Promise<never> {
  trackOutput()
  // A secret given as a flag was hidden from `ps` as the process started; say so, and where it belongs, at once.
  const { HIDDEN_SECRET_FLAGS } = await import('./_argv-first.ts')
  if (HIDDEN_SECRET_FLAGS.length > 0) {
    const { warnArgvSecret } = await import('./_secret.ts')
    // (A store URL's password: serve and migrate-store say it in their own words.)
    for (const flag of HIDDEN_SECRET_FLAGS) if (flag !== '--database' && flag !== '--to') warnArgvSecret(flag)
  }
  const code = await main(root, argv)
  process.exitCode = code
  await outputDelivered()
  process.exit(code)
}

/** Edit distance (insertions, deletions, substitutions, and swaps of neighbours), for "did you mean". */
export function editDistance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)))
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const row = d[i]!
      row[j] = Math.min(d[i - 1]![j]! + 1, row[j - 1]! + 1, d[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1))
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) row[j] = Math.min(row[j]!, d[i - 2]![j - 2]! + 1)
    }
  }
  return d[a.length]![b.length]!
}

/** The closest of `names` to a mistyped `word` (a prefix counts), when close enough to be a guess. */
export function closest(word: string, names: string[]): string | undefined {
  const prefixed = names.filter((n) => n.startsWith(word) && word.length >= 2)
  if (prefixed.length === 1) return prefixed[0]
  let best: { name: string; d: number } | undefined
  for (const name of names) {
    const d = editDistance(word, name)
    if (!best || d < best.d) best = { name, d }
  }
  return best && best.d <= Math.max(1, Math.floor(best.name.length / 3)) ? best.name : undefined
}

type AnyCommand = CommandDef<ArgsDef>
const resolve = async <T>(v: T | Promise<T> | (() => T | Promise<T>)): Promise<T> => (typeof v === 'function' ? (v as () => T | Promise<T>)() : v)

export async function main(root: AnyCommand, argv: string[]): Promise<number> {
  // `muster help [COMMAND…]` is `muster [COMMAND…] --help`.
  if (argv[0] === 'help') argv = [...argv.slice(1).filter((a) => a !== '--help' && a !== '-h'), '--help']
  if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-v')) {
    const meta = await resolve(root.meta ?? {})
    process.stdout.write(`muster ${meta.version}\n`)
    return 0
  }
  let cmd = root
  const names = ['muster']
  let i = 0
  for (;;) {
    const subs = cmd.subCommands ? await resolve(cmd.subCommands) : undefined
    const next = argv[i]
    if (!subs || !next || next.startsWith('-')) break
    const sub = subs[next]
    if (!sub) {
      const guess = closest(next, [...Object.keys(subs), ...(names.length === 1 ? ['help'] : [])])
      const hint = guess ? ` Did you mean \`${[...names, guess].join(' ')}\`?` : ''
      process.stderr.write(cleanLines(`muster: unknown command "${[...names, next].join(' ')}".${hint} Run \`${names.join(' ')} --help\` to see the commands.\n`))
      return 2
    }
    cmd = (await resolve(sub)) as AnyCommand
    names.push(next)
    i++
  }
  const rest = argv.slice(i)
  const beforeDashes = rest.includes('--') ? rest.slice(0, rest.indexOf('--')) : rest
  const label = names.join(' ')
  const usage = async () => {
    const text = await renderUsage(cmd, { meta: { name: names.slice(0, -1).join(' ') } } as AnyCommand)
    // Colours only for a terminal; trailing padding never.
    const plain = process.stdout.isTTY ? text : stripAnsi(text)
    process.stdout.write(`${plain.replace(/[ \t]+$/gm, '').replace(/\n+$/, '')}\n${examplesFor(names.slice(1))}`)
  }
  if (beforeDashes.includes('--help') || beforeDashes.includes('-h')) {
    await usage()
    return 0
  }
  if (!cmd.run) {
    await usage()
    return rest.length === 0 && names.length === 1 ? 0 : 2
  }
  try {
    checkFlags(label, (await resolve(cmd.args ?? {})) as ArgsDef, beforeDashes)
    await runCommand(cmd, { rawArgs: rest })
    return 0
  } catch (e) {
    return reportError(label, e)
  }
}

// One line per error for pipes and scripts; on a terminal the line is wrapped
// between words to its width, never inside a flag.
function say(raw: string): void {
  // A server's error message can carry what its request carried: escaped, so it cannot move the cursor.
  const text = cleanLines(raw)
  if (logsAreJson()) return void process.stderr.write(jsonLine({ args: [text.trimEnd()], type: 'error', date: new Date() }))
  const columns = process.stderr.isTTY ? process.stderr.columns : 0
  process.stderr.write(columns ? `${wrapWords(text.trimEnd(), columns - 1, 2)}\n` : text)
}

export function reportError(label: string, e: unknown): number {
  if (e instanceof ExitStatus) {
    say(`${label}: ${e.message}\n`)
    return e.status
  }
  if (e instanceof UsageError) {
    say(`${label}: ${e.message}\nRun \`${label} --help\` for usage.\n`)
    return 2
  }
  if (e instanceof MusterError) {
    // A server's message is one line whatever it carries (a newline in it would start a forged line).
    say(`${label}: ${typeof e.detail?.status === 'number' ? clean(e.message) : e.message}\n`)
    return 1
  }
  const err = e as { name?: string; message?: string; stack?: string }
  if (err?.name === 'CLIError') {
    say(`${label}: ${stripAnsi(err.message ?? '')}\nRun \`${label} --help\` for usage.\n`)
    return 2
  }
  say(`${label}: unexpected error: ${err?.message ?? String(e)}\n`)
  if (tunable('MUSTER_DEBUG')) process.stderr.write(`${err?.stack}\n`)
  return 1
}

function stripAnsi(s: string): string {
  // biome-ignore lint: control characters are the point
  return s.replace(/\u001b\[[0-9;]*m/g, '')
}

const kebab = (s: string) => s.replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase()

/** Refuses flags the command does not define, and a string flag given without a value. */
function checkFlags(label: string, defs: ArgsDef, argv: string[]): void {
  const known = new Map<string, string>()
  for (const [name, def] of Object.entries(defs)) {
    if (def.type === 'positional') continue
    known.set(kebab(name), def.type ?? 'string')
    for (const a of [('alias' in def ? def.alias : undefined) ?? []].flat()) known.set(a, def.type ?? 'string')
  }
  for (let i = 0; i < argv.length; i++) {
    const tok = argv[i]!
    if (!tok.startsWith('-') || tok === '-') continue
    const raw = tok.replace(/^--?/, '').split('=')[0]!
    let type = known.get(kebab(raw))
    if (!type && raw.startsWith('no-') && known.get(raw.slice(3)) === 'boolean') type = 'boolean'
    if (!type) {
      const guess = closest(kebab(raw), [...known.keys()].filter((k) => k.length > 1))
      throw new UsageError(`unknown flag ${tok.split('=')[0]} for \`${label}\`${guess ? ` (did you mean --${guess}?)` : ''}`)
    }
    if (type !== 'boolean' && !tok.includes('=')) {
      const value = argv[i + 1]
      if (value === undefined || (value.startsWith('--') && value.length > 2)) throw new UsageError(`flag ${tok} needs a value`)
      i++
    }
  }
}
