// The heartbeat's door of the request gate (src/swap/gate.ts): the route
// counts itself in and out without handle's promise callback, so a swap
// waits for heartbeats in flight as for any request, and a heartbeat that
// arrives while a swap holds requests never runs in the old engine.
import { expect, test } from 'bun:test'
import { RequestGate } from '../../src/swap/gate.ts'
import { VERSION } from '../../src/version.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import { startPlatform } from '../helpers/platform.ts'

test('enter counts a request in until leave; while a swap holds requests, nothing enters', async () => {
  const gate = new RequestGate()
  expect(gate.enter()).toBe(true)
  expect(await gate.idle(30)).toBe(false)
  gate.leave()
  expect(await gate.idle(30)).toBe(true)
  gate.hold()
  expect(gate.enter()).toBe(false)
  let ran = false
  void gate.handle(new Request('http://x/'), async () => ((ran = true), new Response('')))
  await Bun.sleep(20)
  expect(ran).toBe(false)
  gate.abandon()
})

test('heartbeats through the dedicated route leave the gate idle once answered', async () => {
  await using p = await startPlatform({ remoteDispatch: true })
  const { token } = await p.client.nodes.createEnrollment({ nodeId: 'gate-1' })
  const r = await enrollRaw(p.url, { token, nodeId: 'gate-1', certPem: (await newCert()).certPem, version: VERSION })
  const { credential } = (await r.json()) as { credential: string }
  const beat = () => fetch(`${p.url}/api/v1/nodes/register`, { method: 'POST', headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' }, body: JSON.stringify({ version: VERSION }) })
  const answers = await Promise.all(Array.from({ length: 20 }, beat))
  expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200))
  // A bad credential takes the general path, and a bodiless request the framework: both leave it too.
  await fetch(`${p.url}/api/v1/nodes/register`, { method: 'POST', headers: { authorization: 'Bearer mnc_gate-1.1.x', 'content-type': 'application/json' }, body: '{}' })
  await fetch(`${p.url}/api/v1/nodes/register`, { method: 'POST', headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' } })
  expect(await p.platform.gate.idle(2_000)).toBe(true)
})
