// The local node through dist/muster (docs/security.md): off by
// default; when on, an operator's project never runs there with the
// Platform's privileges (the attack: copy platform/master.key), while a
// superadmin's does.
import { describe, expect, test } from 'bun:test'
import { chmodSync, existsSync, mkdirSync } from 'node:fs'
import { runMuster, startServe } from '../helpers/binary.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

interface Project {
  name: string
  reason: string | null
  deployedBy: string | null
  placements: { replica: number; node: string | null; state: string }[]
}

async function token(dataDir: string, role: string, name: string): Promise<string> {
  const r = await runMuster(['admin', 'api-token', '--data-dir', dataDir, '--role', role, '--name', name, '--json'])
  expect(r.code).toBe(0)
  return (JSON.parse(r.stdout) as { token: string }).token
}

describe('the local node through dist/muster', () => {
  test('off by default (and with --no-local-node): nodes list has no local', { timeout: 60_000 }, async () => {
    using dir = tmpDir()
    for (const extra of [[], ['--no-local-node']]) {
      const data = `${dir.path}/p${extra.length}`
      await using serve = await startServe(data, extra)
      const env = { MUSTER_URL: serve.url, MUSTER_TOKEN: await token(data, 'superadmin', 'admin') }
      const list = await runMuster(['nodes', 'list', '--json'], { env })
      expect(list.code).toBe(0)
      expect(JSON.parse(list.stdout)).toEqual({ nodes: [], pendingEnrollments: [], nextCursor: null, counts: { total: 0, enrolled: 0, ready: 0, unreachable: 0, revoked: 0 } })
    }
  })

  test('with --local-node an operator\'s project never runs on local and cannot copy master.key; a superadmin\'s does run there', { timeout: 90_000 }, async () => {
    using dir = tmpDir()
    const data = `${dir.path}/platform`
    const out = `${dir.path}/out`
    // As root the local node runs each project as a uid of its own (docs/security.md): it writes only where anyone may.
    chmodSync(dir.path, 0o711)
    mkdirSync(out, { mode: 0o777 })
    chmodSync(out, 0o1777)
    await using serve = await startServe(data, ['--local-node'])
    const admin = { MUSTER_URL: serve.url, MUSTER_TOKEN: await token(data, 'superadmin', 'admin') }
    const operator = { MUSTER_URL: serve.url, MUSTER_TOKEN: await token(data, 'operator', 'op') }
    expect(JSON.parse((await runMuster(['nodes', 'list', '--json'], { env: operator })).stdout).nodes.map((n: { name: string }) => n.name)).toEqual(['local'])
    const show = async (name: string) => JSON.parse((await runMuster(['projects', 'show', name, '--json'], { env: admin })).stdout) as Project
    const deploy = async (env: Record<string, string>, name: string, script: string) => {
      const r = await runMuster(['projects', 'deploy', name, '--replicas', '1', '--json', '--', 'sh', '-c', `mkdir -p ${out}; ${script}; sleep 300`], { env })
      expect(r.code).toBe(0)
      return JSON.parse(r.stdout) as Project
    }

    // The attack: an operator deploys a project that copies the master key out.
    const steal = await deploy(operator, 'steal', `cp ${data}/platform/master.key ${out}/stolen`)
    expect(steal).toMatchObject({ reason: 'no-eligible-node', deployedBy: `token:${operator.MUSTER_TOKEN.slice(4, 20)}` })
    expect(steal.placements.map((x) => x.node)).toEqual([null])
    // An operator's update of a superadmin's project is the operator's project: it leaves local too.
    const control = await deploy(admin, 'control', `touch ${out}/control`)
    expect(control.placements.map((x) => x.node)).toEqual(['local'])
    await waitFor(() => existsSync(`${out}/control`), { timeoutMs: 20_000, what: "the superadmin's project running on local" })
    const hijack = await deploy(operator, 'control', `cp ${data}/platform/master.key ${out}/stolen-2`)
    expect(hijack.placements.map((x) => x.node)).toEqual([null])
    // A later superadmin project runs on local, so the local node has applied everything before it.
    await deploy(admin, 'later', `touch ${out}/later`)
    await waitFor(() => existsSync(`${out}/later`), { timeoutMs: 20_000, what: 'a later superadmin project running on local' })
    expect(existsSync(`${out}/stolen`)).toBe(false)
    expect(existsSync(`${out}/stolen-2`)).toBe(false)
    expect((await show('steal')).placements).toEqual([{ replica: 0, node: null, state: 'pending' }])
    expect((await show('later')).placements).toMatchObject([{ node: 'local', state: 'running' }])
  })
})
