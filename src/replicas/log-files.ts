// A replica's output on its node: one file per replica, `<project>-<replica>.log`,
// written by the replica's own writer (src/replicas/log-pipe.ts), which keeps it
// capped with or without an Agent. Where there is no writer the replica's
// stdout and stderr are opened on the file (O_APPEND), and the Agent keeps the
// size capped: past the cap the file is copied to `.1` (replacing the older one)
// and truncated in place (the replica's descriptor stays valid). Either way a
// replica's output takes at most about twice the cap on disk. The tail is read
// for the log relay.
import { closeSync, copyFileSync, fstatSync, openSync, readSync, statSync, truncateSync } from 'node:fs'
import { join } from 'node:path'
import { TUNABLES } from '../tunables.ts'

export const DEFAULT_LOG_MAX_BYTES = TUNABLES.MUSTER_AGENT_LOG_MAX_BYTES.default
/** A line longer than this is cut (the rest is dropped) when read for the relay. */
export const MAX_LINE_CHARS = 4096
/** At most this many bytes of lines go in one answer. */
export const MAX_REPLY_BYTES = 1024 * 1024
export const MAX_TAIL_LINES = 10_000

const PROJECT = /^[a-z0-9][a-z0-9-]{0,62}$/

export function logFileName(dir: string, project: string, replica: number): string {
  if (!PROJECT.test(project) || !Number.isInteger(replica) || replica < 0) throw new Error(`not a replica: ${project}/${replica}`)
  return join(dir, `${project}-${replica}.log`)
}

/** Opens `file` for appending (0600), for a replica's stdout and stderr. */
export function openForAppend(file: string): number {
  return openSync(file, 'a', 0o600)
}

/** Rotates `file` when it has passed `maxBytes`: copy to `.1`, truncate in place. True when it did. */
export function rotateIfOver(file: string, maxBytes: number): boolean {
  let size: number
  try {
    size = statSync(file).size
  } catch {
    return false
  }
  if (size <= maxBytes) return false
  try {
    copyFileSync(file, `${file}.1`)
    truncateSync(file, 0)
    return true
  } catch {
    return false
  }
}

function readRange(file: string, from: number, to?: number): { bytes: Uint8Array; size: number } | null {
  let fd: number
  try {
    fd = openSync(file, 'r')
  } catch {
    return null
  }
  try {
    const size = fstatSync(fd).size
    const end = Math.min(to ?? size, size)
    const start = Math.max(0, Math.min(from, end))
    const buf = new Uint8Array(end - start)
    let got = 0
    while (got < buf.length) {
      const n = readSync(fd, buf, got, buf.length - got, start + got)
      if (n <= 0) break
      got += n
    }
    return { bytes: buf.subarray(0, got), size }
  } finally {
    closeSync(fd)
  }
}

const cut = (line: string) => (line.length > MAX_LINE_CHARS ? `${line.slice(0, MAX_LINE_CHARS)}…` : line)

export interface Tail {
  lines: string[]
  /** Older output exists that is not in `lines` (left out by `tail` or the size cap). */
  truncated: boolean
  /** Where the current file ended when it was read: a follower goes on from here. */
  offset: number
}

/** The last `tail` lines of a replica's output (the rotated `.1` first, then the current file). */
export function readTail(file: string, tail: number, maxBytes = DEFAULT_LOG_MAX_BYTES): Tail {
  const want = Math.max(0, Math.min(MAX_TAIL_LINES, Math.floor(tail)))
  const budget = Math.min(MAX_REPLY_BYTES, 2 * maxBytes + 2 * MAX_LINE_CHARS)
  const current = readRange(file, 0)
  const offset = current?.size ?? 0
  let cur: Uint8Array = current?.bytes ?? new Uint8Array()
  // Output older than what is read: the start of the current file, or the rotated one.
  const curClipped = cur.length > budget
  if (curClipped) cur = cur.subarray(cur.length - budget)
  let clipped = curClipped
  let older: Uint8Array = new Uint8Array()
  const olderSize = statSafe(`${file}.1`)
  if (olderSize > 0) {
    const room = budget - cur.length
    const r = room > 0 ? readRange(`${file}.1`, Math.max(0, olderSize - room)) : null
    if (r) older = r.bytes
    if (older.length < olderSize) clipped = true
  }
  const dec = new TextDecoder()
  let text = dec.decode(older) + dec.decode(cur)
  if (text.endsWith('\n')) text = text.slice(0, -1)
  let lines = text === '' ? [] : text.split('\n')
  // A read that started inside a line: drop that partial first line.
  const partialFirst = older.length > 0 ? older.length < olderSize : curClipped
  if (partialFirst && lines.length > 0) lines = lines.slice(1)
  if (lines.length > want) {
    lines = lines.slice(lines.length - want)
    clipped = true
  }
  lines = lines.map(cut)
  // Keep the answer under its byte budget, newest lines first.
  let bytes = 0
  let keep = lines.length
  while (keep > 0 && bytes + lines[keep - 1]!.length + 1 <= MAX_REPLY_BYTES) bytes += lines[--keep]!.length + 1
  if (keep > 0) {
    lines = lines.slice(keep)
    clipped = true
  }
  return { lines, truncated: clipped, offset }
}

function statSafe(file: string): number {
  try {
    return statSync(file).size
  } catch {
    return 0
  }
}

/** Reads what a replica writes after an offset, line by line (a follower of its log). */
export class LogFollower {
  private partial = ''
  private dec = new TextDecoder()

  constructor(
    private readonly file: string,
    private offset: number,
  ) {}

  /** Complete lines written since the last read (after a rotation, from the new file's start). */
  read(): string[] {
    const size = statSafe(this.file)
    if (size < this.offset) {
      // Rotated (copied to .1 and truncated): go on from the start of the new file.
      this.offset = 0
      this.partial = ''
      this.dec = new TextDecoder()
    }
    if (size === this.offset) return []
    const r = readRange(this.file, this.offset, Math.min(size, this.offset + MAX_REPLY_BYTES))
    if (!r) return []
    this.offset += r.bytes.length
    const text = this.partial + this.dec.decode(r.bytes, { stream: true })
    const parts = text.split('\n')
    this.partial = parts.pop() ?? ''
    // A very long line without its end yet: send what there is.
    if (this.partial.length > MAX_LINE_CHARS) {
      parts.push(this.partial)
      this.partial = ''
    }
    return parts.map(cut)
  }
}
