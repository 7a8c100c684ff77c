// Shared arguments and their parsing helpers. Usage errors exit 2.
import type { ArgsDef } from 'citty'

export class UsageError extends Error {}

export const jsonArg = { json: { type: 'boolean', description: 'Print machine-readable JSON only' } } as const satisfies ArgsDef

export const dataDirArg = {
  'data-dir': { type: 'string', valueHint: 'DIR', description: 'Data directory (default: $MUSTER_DATA_DIR, else /var/lib/muster)' },
} as const satisfies ArgsDef

export const clientArgs = {
  'platform-url': { type: 'string', valueHint: 'URL', description: 'Platform URL (default: $MUSTER_URL, then the URL saved by `muster login`, then http://127.0.0.1:7380)' },
  token: { type: 'string', valueHint: 'mat_…', description: 'Operator API token (default: $MUSTER_TOKEN, then the token saved by `muster login`)' },
  ...jsonArg,
} as const satisfies ArgsDef

/** An integer flag within bounds; undefined when not given. */
export function intArg(args: Record<string, unknown>, name: string, min: number, max: number): number | undefined {
  const raw = args[name]
  if (raw === undefined || raw === null) return undefined
  const s = String(raw)
  if (!/^-?\d+$/.test(s)) throw new UsageError(`--${name} must be a whole number, got "${s}"`)
  const n = Number(s)
  if (n < min || n > max) throw new UsageError(`--${name} must be between ${min} and ${max}, got ${n}`)
  return n
}

/** Every value of a repeatable string flag (`--address A --address B`), from the raw argv. */
export function multiArg(rawArgs: string[], name: string): string[] {
  const out: string[] = []
  for (let i = 0; i < rawArgs.length; i++) {
    const tok = rawArgs[i]!
    if (tok === '--') break
    if (tok === `--${name}`) {
      const v = rawArgs[i + 1]
      if (v !== undefined) out.push(v)
      i++
    } else if (tok.startsWith(`--${name}=`)) out.push(tok.slice(name.length + 3))
  }
  return out
}

/** The words after `--` (a command line to run). */
export function afterDashes(rawArgs: string[]): string[] {
  const i = rawArgs.indexOf('--')
  return i < 0 ? [] : rawArgs.slice(i + 1)
}
