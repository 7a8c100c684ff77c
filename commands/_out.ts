// Human and machine output for commands: JSON to stdout alone, tables for people.
// Every write is tracked, so the CLI ends only once its output is delivered,
// on a pipe to a slow reader too (docs/operations.md: a
// process.exit right after a write cuts a pipe at 64 KiB in Bun).

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

/** Starts tracking stdout and stderr (the CLI calls this first). */
export function trackOutput(): void {
  track(process.stdout)
  track(process.stderr)
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

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`)
}

export function printLine(line = ''): void {
  process.stdout.write(`${line}\n`)
}

/** A plain aligned table; `-` for empty cells. */
export function printTable(headers: string[], rows: (string | number | null | undefined)[][]): void {
  const cells = rows.map((r) => r.map((c) => (c === null || c === undefined || c === '' ? '-' : String(c))))
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
