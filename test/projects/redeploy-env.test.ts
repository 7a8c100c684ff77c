// A deploy that changes only the env is a new revision (second self-audit,
// test/mutants/audit2.ts): the running replica is replaced by one with the new
// env, as on any node (here the Platform's own, serve --local-node).
import { expect, test } from 'bun:test'
import { startPlatform } from '../helpers/platform.ts'
import { waitFor } from '../helpers/tmp.ts'

test('an env-only redeploy makes a new revision and the replica runs with the new env', { timeout: 60_000 }, async () => {
  await using p = await startPlatform({ localNode: true })
  const spec = { name: 'envy', replicas: 1, cpu: 10, memory: 10, command: ['sh', '-c', 'echo "colour=$COLOUR"; sleep 300'] }
  const seen = async (line: string) => (await p.client.projects.logs('envy', { tail: 20 })).lines.includes(line)
  try {
    expect((await p.client.projects.deploy({ ...spec, env: { COLOUR: 'red' } })).revision).toBe(1)
    await waitFor(() => seen('colour=red'), { what: 'revision 1 running' })
    // The same spec again: nothing changes.
    expect((await p.client.projects.deploy({ ...spec, env: { COLOUR: 'red' } })).revision).toBe(1)
    // Only the env differs: a new revision, and the replica is restarted with it.
    expect((await p.client.projects.deploy({ ...spec, env: { COLOUR: 'blue' } })).revision).toBe(2)
    await waitFor(() => seen('colour=blue'), { what: 'revision 2 running with the new env' })
    await waitFor(async () => (await p.client.projects.show('envy')).placements.every((x) => x.state === 'running'), { what: 'the placement to run' })
  } finally {
    await p.client.projects.remove('envy')
  }
})
