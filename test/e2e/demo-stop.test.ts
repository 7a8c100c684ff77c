// `muster demo` stopped with Ctrl-C (cleanups observed): the
// Platform, both Agents and the replicas they ran are gone afterwards — the
// replicas outlive a plain Agent stop, so the demo must ask its Agents to stop
// them — and its directory is removed.
import { expect, test } from 'bun:test'
import { existsSync, readFileSync } from 'node:fs'
import { startMuster } from '../helpers/binary.ts'
import { waitFor } from '../helpers/tmp.ts'

const alive = (pid: number) => {
  try {
    return !/\) [ZX] /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))
  } catch {
    return false
  }
}

test('Ctrl-C stops the Platform, the Agents and every replica, and removes the directory', { timeout: 150_000 }, async () => {
  const demo = await startMuster(['demo'])
  let replicas: number[] = []
  try {
    await demo.waitForLog(/Press Ctrl-C/, 120_000)
    const dir = demo.log().match(/muster is running in (\S+)/)![1]!
    replicas = ['worker-1', 'worker-2'].flatMap((w) => (JSON.parse(readFileSync(`${dir}/${w}/worker/replicas.json`, 'utf8')) as { replicas: { pid: number }[] }).replicas.map((r) => r.pid))
    expect(replicas).toHaveLength(2)
    for (const pid of replicas) expect(alive(pid)).toBe(true)
    demo.proc.kill('SIGINT')
    expect(await demo.proc.exited).toBe(130)
    for (const pid of replicas) expect(`replica ${pid} ${alive(pid) ? 'alive' : 'gone'}`).toBe(`replica ${pid} gone`)
    expect(existsSync(dir)).toBe(false)
  } finally {
    if (demo.proc.exitCode === null) demo.proc.kill('SIGKILL')
    for (const pid of replicas) if (alive(pid)) process.kill(-pid, 'SIGKILL') // its group: a replica is a group leader
    await waitFor(() => replicas.every((pid) => !alive(pid)), { timeoutMs: 5_000 }).catch(() => {})
  }
})
