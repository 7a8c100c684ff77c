// Secrets out of this process's own command line (docs/security.md, "Secrets
// never on argv"): Linux shows every process's argv to every local user in
// /proc/PID/cmdline, so a secret given as a flag is overwritten in place with
// `*` as soon as the process starts. The program keeps its own copy
// (process.argv), so parsing is unaffected; what `ps` shows is starred.
import { closeSync, openSync, readFileSync, readSync, writeSync } from 'node:fs'

/** Overwrites every occurrence of `secret` (and its percent-encoding) in this process's argv; whether any was found. */
export function hideInOwnArgv(secret: string): boolean {
  if (process.platform !== 'linux' || secret.length === 0) return false
  let fd: number | undefined
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8')
    const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ')
    // proc(5): arg_start and arg_end are fields 48 and 49; `fields` starts at field 3.
    const start = Number(fields[45])
    const end = Number(fields[46])
    if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || end <= start || end - start > 1 << 20) return false
    fd = openSync('/proc/self/mem', 'r+')
    const argv = Buffer.alloc(end - start)
    readSync(fd, argv, 0, argv.length, start)
    const needles = [...new Set([secret, encodeURIComponent(secret)])].map((s) => Buffer.from(s))
    let hidden = false
    for (const needle of needles) {
      for (let at = argv.indexOf(needle); at >= 0; at = argv.indexOf(needle, at + needle.length)) {
        writeSync(fd, Buffer.alloc(needle.length, '*'), 0, needle.length, start + at)
        hidden = true
      }
    }
    return hidden
  } catch {
    return false
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
}

/** The flags whose value is a secret, and where the secret belongs instead. */
export const SECRET_FLAGS: Record<string, { whole: boolean; instead: string }> = {
  token: { whole: true, instead: '$MUSTER_TOKEN or `muster login`' },
  'enrollment-token': { whole: true, instead: 'stdin, --enrollment-token-file FILE or $MUSTER_ENROLLMENT_TOKEN' },
  // A store URL: only its password is the secret.
  database: { whole: false, instead: '$MUSTER_DATABASE_URL or --database-file FILE' },
  to: { whole: false, instead: '$MUSTER_DATABASE_URL' },
}

/** The password a URL carries (user:PASSWORD@ or ?password=), if any. */
export function databasePassword(url: string): string | undefined {
  try {
    const u = new URL(url)
    const pw = decodeURIComponent(u.password) || u.searchParams.get('password') || ''
    return pw === '' ? undefined : pw
  } catch {
    return undefined
  }
}

/**
 * Hides the value of every secret flag in `args` (`--token X`, `--token=X`; for a URL flag, its password) from
 * this process's command line. The flags hidden, for the warning the command prints.
 */
export function hideSecretFlags(args: string[]): string[] {
  const hidden: string[] = []
  for (let i = 0; i < args.length; i++) {
    const tok = args[i]!
    if (tok === '--') break
    const m = /^--([A-Za-z][A-Za-z0-9-]*)(?:=(.*))?$/s.exec(tok)
    // The parser takes a flag in camelCase too (`--enrollmentToken` is --enrollment-token): the same secret.
    const flag = m?.[1]?.replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase()
    if (!m || !flag || !Object.hasOwn(SECRET_FLAGS, flag)) continue
    const value = m[2] ?? args[++i]
    if (value === undefined) continue
    const secret = SECRET_FLAGS[flag]!.whole ? value : databasePassword(value)
    if (secret && hideInOwnArgv(secret)) hidden.push(`--${flag}`)
  }
  return hidden
}
