// What the Agent reads about a process from /proc (Linux): its start time in
// clock ticks since boot (field 22 of /proc/PID/stat), its state and process
// group. A PID with the start time and boot recorded when it was started is
// the same process; a recycled PID has another start time, and after a reboot
// the boot id differs, so neither is ever taken for a replica.
import { readFileSync } from 'node:fs'

export interface ProcStat {
  /** One letter: R, S, D, Z (zombie), T, X … */
  state: string
  pgrp: number
  /** Clock ticks since boot, as text (it can pass 2^53 on no real machine, but is kept exact). */
  startTime: string
}

/** /proc/PID/stat, or null when there is no such process (or no /proc). */
export function procStat(pid: number): ProcStat | null {
  if (!Number.isInteger(pid) || pid <= 0) return null
  let text: string
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'latin1')
  } catch {
    return null
  }
  // "PID (comm) S PPID PGRP …": comm may hold spaces and parentheses, so split after the last ')'.
  const end = text.lastIndexOf(')')
  if (end < 0) return null
  const f = text.slice(end + 2).split(' ')
  // f[0] is field 3 (state), f[2] field 5 (pgrp), f[19] field 22 (starttime).
  const state = f[0]
  const startTime = f[19]
  if (!state || !startTime || !/^\d+$/.test(startTime)) return null
  return { state, pgrp: Number(f[2]), startTime }
}

let bootIdCache: string | undefined

/** This boot's id (/proc/sys/kernel/random/boot_id); '' where there is none. */
export function bootId(): string {
  if (bootIdCache === undefined) {
    try {
      bootIdCache = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()
    } catch {
      bootIdCache = ''
    }
  }
  return bootIdCache
}

/** Whether `pid` is still the process that started at `startTime` in boot `boot`, and has not exited. */
export function sameProcess(pid: number, startTime: string, boot: string): boolean {
  if (!boot || boot !== bootId()) return false
  const s = procStat(pid)
  return s !== null && s.startTime === startTime && s.state !== 'Z' && s.state !== 'X'
}

/** Sends `signal` to the process group `pgid` (a replica is its group's leader); false when nothing was there. */
export function signalGroup(pgid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, signal)
    return true
  } catch {
    return false
  }
}
