// A refused heartbeat gives its place back (docs/nodes.md, rate limits): the
// heartbeat limit counts the requests in flight, and one that ends refused
// (a forged or stale credential) no longer counts, else a few thousand
// refusals would fill it and every node's heartbeat would be turned away.
// Real heartbeats over HTTP to a real Platform whose in-flight cap is 2.
import { expect, test } from 'bun:test'
import { VERSION } from '../../src/version.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import { startPlatform } from '../helpers/platform.ts'

test('refused heartbeats do not use up the in-flight cap: a real one is still answered after many', async () => {
  await using p = await startPlatform({ remoteDispatch: true, heartbeatLimit: { perSecond: 10_000, burst: 10_000, maxInFlight: 2 } })
  const { token } = await p.client.nodes.createEnrollment({ nodeId: 'w1' })
  const r = await enrollRaw(p.url, { token, nodeId: 'w1', certPem: (await newCert('w1')).certPem, version: VERSION })
  const { credential } = (await r.json()) as { credential: string }
  const beat = (bearer: string) =>
    fetch(`${p.url}/api/v1/nodes/register`, { method: 'POST', headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' }, body: JSON.stringify({ version: VERSION }) }).then((x) => x.status)
  expect(await beat(credential)).toBe(200)
  // A credential of the right shape whose mac is wrong, ten times: each refused.
  const forged = credential.replace(/\.[^.]+$/, `.${'A'.repeat(43)}`)
  const refused: number[] = []
  for (let i = 0; i < 10; i++) refused.push(await beat(forged))
  expect(refused).toEqual(new Array(10).fill(401))
  expect(p.platform.fabric.limits.heartbeat.active).toBe(0)
  expect(await beat(credential)).toBe(200)
})
