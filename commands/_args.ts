// Shared arguments and their parsing helpers. Usage errors exit 2.
import type { ArgsDef } from 'citty'

export class UsageError extends Error {}

export const jsonArg = { json: { type: 'boolean', description: 'Print machine-readable JSON only' } } as const satisfies ArgsDef

export const dataDirArg = {
  'data-dir': { type: 'string', valueHint: 'DIR', description: 'Data directory (default: $MUSTER_DATA_DIR, else /var/lib/muster)' },
} as const satisfies ArgsDef

/** `--log-format` of the long-running commands (serve, agent): one JSON object a line, or the human lines. */
export const logFormatArg = {
  'log-format': { type: 'enum', options: ['human', 'json'], default: 'human', valueHint: 'human|json', description: 'Log as human lines (default) or one JSON object a line: time, level, message, node, project, request (docs/monitoring.md)' },
} as const satisfies ArgsDef

/** How an https Platform is authenticated when its certificate comes from its own CA (docs/security.md). */
export const platformPinArgs = {
  'platform-fingerprint': { type: 'string', valueHint: 'sha256:HEX', description: 'Pin of the Platform CA (`muster nodes platform`; default: $MUSTER_PLATFORM_FINGERPRINT, then the pin saved by `muster login`)' },
  'platform-ca-file': { type: 'string', valueHint: 'FILE', description: 'Verify the Platform with this CA certificate (PEM) instead' },
} as const satisfies ArgsDef

export const clientArgs = {
  'platform-url': { type: 'string', valueHint: 'URL', description: 'Platform URL (default: $MUSTER_URL, then the URL saved by `muster login`, then http://127.0.0.1:7380)' },
  token: { type: 'string', valueHint: 'mat_…', description: 'Operator API token (default: $MUSTER_TOKEN, then the token saved by `muster login`)' },
  ...platformPinArgs,
  ...jsonArg,
} as const satisfies ArgsDef

/** Flags of a paged listing. */
export const pageArgs = {
  limit: { type: 'string', valueHint: 'N', description: 'At most N per page (default 1000, at most 5000)' },
  all: { type: 'boolean', description: 'Every page, not only the first' },
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

/** Every `--FLAG KEY=VALUE` as labels (docs/cloud.md); a bad one is a usage error. */
export async function labelArgs(rawArgs: string[], flag: string): Promise<Record<string, string>> {
  const { parseLabelArgs } = await import('../src/wire/labels.ts')
  try {
    return parseLabelArgs(multiArg(rawArgs, flag), `--${flag}`)
  } catch (e) {
    throw new UsageError((e as Error).message)
  }
}

const NAME = /^[a-z0-9][a-z0-9-]{0,62}$/

/** A node or project name, checked before anything is sent. */
export function checkName(value: string, what: string): string {
  if (!NAME.test(value)) throw new UsageError(`${what} must be lowercase letters, digits and dashes (at most 63, like worker-1), got "${value}"`)
  return value
}

export function checkFingerprint(value: string | undefined, flag: string): string | undefined {
  if (value !== undefined && !/^sha256:[0-9a-fA-F]{64}$/.test(value)) throw new UsageError(`${flag} must be sha256: and 64 hex digits (see \`muster nodes platform\`), got "${value}"`)
  return value
}

export function checkUrl(value: string | undefined, flag: string): string | undefined {
  if (value === undefined) return value
  let u: URL
  try {
    u = new URL(value)
  } catch {
    throw new UsageError(`${flag} must be a URL like https://10.0.0.1:7443, got "${value}"`)
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new UsageError(`${flag} must be an http(s) URL, got "${value}"`)
  return value
}
