// serve --heartbeat-rate/--heartbeat-burst: the heartbeat bucket is
// the operator's to size, through the compiled binary; past it a heartbeat is
// 429 with Retry-After, which the Agent waits out.
import { expect, test } from 'bun:test'
import { runMuster, startServe } from '../helpers/binary.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import { tmpDir } from '../helpers/tmp.ts'
import { VERSION } from '../../src/version.ts'

test('serve --heartbeat-rate 1 --heartbeat-burst 2 admits two heartbeats, then answers 429 with Retry-After', { timeout: 120_000 }, async () => {
  using dir = tmpDir()
  const data = `${dir.path}/data`
  await using serve = await startServe(data, ['--remote-dispatch', '--heartbeat-rate', '1', '--heartbeat-burst', '2'])
  const { token } = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', data, '--json'])).stdout) as { token: string }
  const et = JSON.parse((await runMuster(['nodes', 'enroll-token', 'w1', '--json'], { env: { MUSTER_URL: serve.url, MUSTER_TOKEN: token } })).stdout) as { token: string }
  const enrolled = await enrollRaw(serve.url, { token: et.token, nodeId: 'w1', certPem: (await newCert('w1')).certPem, version: VERSION })
  expect(enrolled.status).toBe(200)
  const { credential } = (await enrolled.json()) as { credential: string }
  const beat = () => fetch(`${serve.url}/api/v1/nodes/register`, { method: 'POST', headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' }, body: JSON.stringify({ version: VERSION }) })
  const statuses: number[] = []
  let refused: Response | undefined
  for (let i = 0; i < 4; i++) {
    const r = await beat()
    statuses.push(r.status)
    if (r.status === 429) refused = r
  }
  // The burst of two, then (within a second: at most one more token) a refusal.
  expect(statuses.slice(0, 2)).toEqual([200, 200])
  expect(statuses).toContain(429)
  expect(refused!.headers.get('retry-after')).toMatch(/^[1-9]\d*$/)
  expect(((await refused!.json()) as { error: { code: string } }).error.code).toBe('rate-limited')
  // A bad value is refused at start with the flag's name.
  const bad = await runMuster(['serve', '--data-dir', `${dir.path}/other`, '--port', '0', '--heartbeat-rate', '0'])
  expect(bad.code).not.toBe(0)
  expect(bad.stderr).toContain('--heartbeat-rate')
})
