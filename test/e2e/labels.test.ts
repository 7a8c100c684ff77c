// Labels through dist/muster (docs/cloud.md; Role): a worker joined with
// `--label role=build` shows it in `nodes list` and runs only projects that
// ask for role=build; `projects deploy --node-label` places on labelled nodes.
import { describe, expect, test } from 'bun:test'
import { joinWorker, runMuster, startServeWithListener, type Daemon } from '../helpers/binary.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

interface Project {
  name: string
  reason: string | null
  nodeLabels: Record<string, string>
  placements: { replica: number; node: string | null; state: string }[]
}

describe('labels through dist/muster', () => {
  test('a worker joined with --label role=build runs only build projects', { timeout: 120_000 }, async () => {
    using dir = tmpDir()
    const marker = `muster-labels-${crypto.randomUUID().slice(0, 8)}`
    await using serve = await startServeWithListener(`${dir.path}/platform`)
    const env = serve.env
    const show = async (name: string) => JSON.parse((await runMuster(['projects', 'show', name, '--json'], { env })).stdout) as Project
    const agents: Daemon[] = []
    try {
      for (const [node, labels] of [['builder', ['--label', 'role=build', '--label', 'arch=x86']], ['gen', []]] as const) {
        const { token } = JSON.parse((await runMuster(['nodes', 'enroll-token', node, '--json'], { env })).stdout) as { token: string }
        agents.push(await joinWorker(dir.path, node, serve, token, [...labels]))
      }
      const bad = await runMuster(['worker', 'join', '--platform-url', serve.enrollUrl, '--node-id', 'x', '--label', 'role'], { env: { MUSTER_ENROLLMENT_TOKEN: 'mjt_x' } })
      expect(bad.code).toBe(2)
      expect(bad.stderr).toContain('--label needs KEY=VALUE')
      await waitFor(async () => {
        const list = JSON.parse((await runMuster(['nodes', 'list', '--json'], { env })).stdout) as { nodes: { name: string; state: string }[] }
        return ['builder', 'gen'].every((n) => list.nodes.find((x) => x.name === n)?.state === 'ready')
      }, { timeoutMs: 30_000, what: 'both workers ready' })
      const listed = JSON.parse((await runMuster(['nodes', 'list', '--json'], { env })).stdout) as { nodes: { name: string; labels: Record<string, string> }[] }
      expect(listed.nodes.map((n) => [n.name, n.labels])).toEqual([['builder', { arch: 'x86', role: 'build' }], ['gen', {}]])
      expect((await runMuster(['nodes', 'list'], { env })).stdout).toMatch(/^builder\s.*arch=x86,role=build/m)

      // A plain project: both replicas on gen, none on the build node.
      expect((await runMuster(['projects', 'deploy', 'web', '--replicas', '2', '--cpu', '10', '--memory', '8', '--', 'sh', '-c', `sleep 300; true ${marker}`], { env })).code).toBe(0)
      const web = await waitFor(async () => {
        const p = await show('web')
        return p.placements.filter((x) => x.state === 'running').length === 2 ? p : null
      }, { timeoutMs: 30_000, what: 'web running' })
      expect(web.placements.map((x) => x.node)).toEqual(['gen', 'gen'])
      // A build project: on the build node.
      const deployed = await runMuster(['projects', 'deploy', 'compile', '--replicas', '1', '--cpu', '10', '--memory', '8', '--node-label', 'role=build', '--json', '--', 'sh', '-c', `sleep 300; true ${marker}`], { env })
      expect(deployed.code).toBe(0)
      expect((JSON.parse(deployed.stdout) as Project).nodeLabels).toEqual({ role: 'build' })
      await waitFor(async () => (await show('compile')).placements.every((x) => x.node === 'builder' && x.state === 'running'), { timeoutMs: 30_000, what: 'compile running on builder' })
      expect((await runMuster(['projects', 'show', 'compile'], { env })).stdout).toContain('runs only on nodes labelled: role=build')
      // Asking for a label nobody has: unplaced, no shortfall.
      const none = JSON.parse((await runMuster(['projects', 'deploy', 'gpu', '--replicas', '1', '--node-label', 'gpu=yes', '--json', '--', 'true'], { env })).stdout) as Project & { shortfall: number }
      expect(none).toMatchObject({ reason: 'no-eligible-node', shortfall: 0 })
      const badLabel = await runMuster(['projects', 'deploy', 'x', '--replicas', '1', '--node-label', 'Role=Build', '--', 'true'], { env })
      expect(badLabel.code).toBe(2)
      // Draining gen leaves web nowhere to go: the build node still takes none of it.
      expect((await runMuster(['nodes', 'drain', 'gen'], { env })).code).toBe(0)
      await waitFor(async () => (await show('web')).placements.every((x) => x.node === null), { what: 'web unplaced' })
      expect((await show('web')).reason).toBe('no-eligible-node')
      expect((await show('compile')).placements.map((x) => x.node)).toEqual(['builder'])
    } finally {
      for (const a of agents) await a.stop()
    }
  })
})
