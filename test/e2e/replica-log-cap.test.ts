// A replica's log stays under its cap when its Agent is gone (docs/workloads.md,
// reading a replica's output): replicas outlive their Agent by design, and their output goes
// through a writer of their own that rotates the file, so no Agent is needed to
// keep it capped. Through dist/muster: a worker's Agent killed with -9 while a
// replica writes fast; the replica writes on, several caps' worth, and neither
// its log nor the rotated one passes the cap. Stopping the replicas afterwards
// leaves no writer behind.
import { describe, expect, test } from 'bun:test'
import { existsSync, readFileSync, statSync } from 'node:fs'
import { DEFAULT_LOG_MAX_BYTES } from '../../src/replicas/log-files.ts'
import { markedProcesses } from '../helpers/leftovers.ts'
import { joinWorker, runMuster, startServeWithListener, type Daemon } from '../helpers/binary.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

const CAP = DEFAULT_LOG_MAX_BYTES
/** A chunk of whole lines ends at the cap, on top of at most a sixteenth of it; the Agent's own lines (start, exit) come on top. */
const SLACK = CAP / 16 + 4096

describe('a replica whose Agent is gone', () => {
  test('writes on, and its log stays under its cap without an Agent', { timeout: 180_000 }, async () => {
    using dir = tmpDir()
    await using serve = await startServeWithListener(`${dir.path}/platform`)
    const env = serve.env
    const { token } = JSON.parse((await runMuster(['nodes', 'enroll-token', 'w1', '--json'], { env })).stdout) as { token: string }
    let agent: Daemon | undefined = await joinWorker(dir.path, 'w1', serve, token, ['--label', 'role=chatty'])
    try {
      await waitFor(async () => (JSON.parse((await runMuster(['nodes', 'list', '--json'], { env })).stdout) as { nodes: { name: string; state: string }[] }).nodes.some((n) => n.name === 'w1' && n.state === 'ready'), { what: 'w1 ready', timeoutMs: 30_000 })
      // About 100 bytes a line, as fast as a shell writes them.
      const loop = 'i=0; while :; do i=$((i+1)); echo "line $i ..........................................................................................."; done'
      expect((await runMuster(['projects', 'deploy', 'chatty', '--replicas', '1', '--cpu', '10', '--memory', '8', '--node-label', 'role=chatty', '--', 'sh', '-c', loop], { env })).code).toBe(0)
      const file = `${dir.path}/w1/worker/logs/chatty-0.log`
      await waitFor(() => existsSync(file) && statSync(file).size > 0, { what: 'the replica writing its log', timeoutMs: 30_000 })
      const recorded = () => (JSON.parse(readFileSync(`${dir.path}/w1/worker/replicas.json`, 'utf8')) as { replicas: { pid: number }[] }).replicas[0]?.pid
      const pid = await waitFor(() => (existsSync(`${dir.path}/w1/worker/replicas.json`) ? recorded() : undefined), { what: 'the replica recorded', timeoutMs: 30_000 })
      // The Agent is killed; the replica is not.
      agent.proc.kill('SIGKILL')
      await agent.proc.exited
      const lastLine = () => {
        const text = readFileSync(file, 'utf8').trimEnd()
        return Number(/line (\d+) \.+$/.exec(text.slice(text.lastIndexOf('\n') + 1))?.[1] ?? 0)
      }
      const from = lastLine()
      let largest = 0
      const sizes = () => {
        largest = Math.max(largest, statSync(file).size, existsSync(`${file}.1`) ? statSync(`${file}.1`).size : 0)
      }
      // Five caps' worth written with no Agent: about 50,000 lines.
      await waitFor(
        () => {
          sizes()
          // Done after five caps' worth, or as soon as a file passed the cap.
          return lastLine() - from > (5 * CAP) / 100 || largest > CAP + SLACK
        },
        { what: 'the replica writing on for five caps', timeoutMs: 120_000, intervalMs: 10 },
      )
      expect(process.kill(pid, 0)).toBe(true)
      expect(existsSync(`${file}.1`)).toBe(true)
      expect(largest).toBeLessThanOrEqual(CAP + SLACK)
      // The next Agent adopts the replica; stopping the replicas ends it, and its writer with it.
      agent = await (async () => {
        const { startMuster } = await import('../helpers/binary.ts')
        return startMuster(['agent', '--data-dir', `${dir.path}/w1`], { env: { MUSTER_AGENT_HOST: '127.0.0.1', MUSTER_AGENT_HEARTBEAT_MS: '300' } })
      })()
      await agent.waitForLog(/adopted/)
      await agent.stop()
      agent = undefined
      await waitFor(() => markedProcesses(process.env.MUSTER_TEST_RUN!).every((p) => !/(^| )split /.test(p.command) && !p.command.includes('line $i')), { what: 'the replica and its log writer gone', timeoutMs: 20_000 })
    } finally {
      await agent?.stop()
    }
  })
})
