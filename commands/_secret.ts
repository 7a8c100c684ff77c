// Reading secrets: a file, an environment variable, stdin when piped, or a
// no-echo prompt on a terminal. A secret on argv works but warns; with no
// terminal and no secret the command fails at once instead of waiting.
import { fstatSync, readFileSync } from 'node:fs'
import { consola } from 'consola'
import { MusterError } from '../src/errors.ts'
import { assertPrivate } from '../src/datadir.ts'
import { tunable, type TunableName } from '../src/tunables.ts'
import { SECRET_FLAGS } from '../src/own-argv.ts'
import { esc } from './_out.ts'

export interface SecretSource {
  /** What the secret is, for messages: "enrollment token". */
  what: string
  /** The value given on argv, if any, and the flag it came from. */
  argv?: { value: string | undefined; flag: string }
  /** A file flag's value and name. */
  file?: { value: string | undefined; flag: string }
  env?: TunableName
}

/** The warning for a secret given as a flag: muster hid it from `ps` at start (commands/_argv-first.ts), but not from shell history. */
const warned = new Set<string>()
export function warnArgvSecret(flag: string): void {
  if (warned.has(flag)) return
  warned.add(flag)
  const instead = SECRET_FLAGS[flag.replace(/^--/, '')]?.instead ?? 'a file, stdin or the prompt'
  consola.warn(esc`${flag} on the command line lands in shell history (muster hid it from the process list as it started); give it with ${instead} instead.`)
}

function stdinKind(): 'tty' | 'data' | 'none' {
  if (process.stdin.isTTY) return 'tty'
  try {
    const st = fstatSync(0)
    if (st.isFIFO() || st.isFile() || st.isSocket()) return 'data'
  } catch {
    return 'none'
  }
  return 'none'
}

export async function readSecret(src: SecretSource): Promise<string> {
  if (src.file?.value) {
    try {
      assertPrivate(src.file.value)
      return readFileSync(src.file.value, 'utf8').trim()
    } catch (e) {
      if (e instanceof MusterError) throw e
      throw new MusterError('not-configured', `Cannot read ${src.file.flag} ${src.file.value}: ${(e as Error).message}`)
    }
  }
  if (src.argv?.value) {
    warnArgvSecret(src.argv.flag)
    return src.argv.value
  }
  const fromEnv = src.env && tunable(src.env)
  if (fromEnv) return fromEnv.trim()
  const ways = [src.file && `${src.file.flag} FILE`, src.env && `$${src.env}`].filter(Boolean)
  const how = ways.length ? `with ${ways.join(', ')} or on stdin` : 'on stdin (or run this at a terminal to be asked)'
  const kind = stdinKind()
  if (kind === 'data') {
    const text = (await Bun.stdin.text()).replace(/\r?\n$/, '')
    if (text) return text
    throw new MusterError('not-configured', `No ${src.what} on stdin. Pass it ${how}.`)
  }
  if (kind === 'tty') return promptSecret(`${src.what[0]?.toUpperCase()}${src.what.slice(1)}`)
  throw new MusterError('not-configured', `No ${src.what} given and no terminal to ask on. Pass it ${how}.`)
}

// Prompts draw on stderr: stdout stays the command's output alone (`--json`
// into a file or a pipe, the bootstrap's `worker join --json >file`), and the
// question is still seen at the terminal.
export async function promptSecret(message: string): Promise<string> {
  const p = await import('@clack/prompts')
  const value = await p.password({ message, mask: '•', output: process.stderr })
  if (p.isCancel(value)) throw new MusterError('not-configured', 'Cancelled.')
  return value
}

export async function promptText(message: string): Promise<string> {
  const p = await import('@clack/prompts')
  const value = await p.text({ message, output: process.stderr })
  if (p.isCancel(value)) throw new MusterError('not-configured', 'Cancelled.')
  return value
}

export function hasTty(): boolean {
  return stdinKind() === 'tty'
}
