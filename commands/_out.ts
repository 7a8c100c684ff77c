// Human and machine output for commands: JSON to stdout alone, tables for people.
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
