// Through dist/muster: under --node-auth both|legacy a legacy
// node that was revoked and removed must not come straight back with its next
// shared-token heartbeat. The name stays reserved (403, not listed) until the
// operator reuses it on purpose.
import { describe, expect, test } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { VERSION } from '../../src/version.ts'
import { runMuster, startServe } from '../helpers/binary.ts'
import { tmpDir } from '../helpers/tmp.ts'

const FLEET = 'fleet-shared-token-0123456789abcdef'

describe.each(['both', 'legacy'])('--node-auth %s', (auth) => {
  test('a removed legacy node stays removed for the shared token', { timeout: 90_000 }, async () => {
    using dir = tmpDir()
    const data = `${dir.path}/platform`
    writeFileSync(`${dir.path}/fleet`, `${FLEET}\n`, { mode: 0o600 })
    await using serve = await startServe(data, ['--remote-dispatch', '--node-auth', auth, '--fleet-token-file', `${dir.path}/fleet`])
    const { token } = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', data, '--json'])).stdout) as { token: string }
    const env = { MUSTER_URL: serve.url, MUSTER_TOKEN: token }
    const beat = async (name: string) => {
      const r = await fetch(`${serve.url}/api/v1/nodes/register`, {
        method: 'POST',
        headers: { authorization: `Bearer ${FLEET}`, 'content-type': 'application/json' },
        body: JSON.stringify({ nodeId: name, version: VERSION, capacity: { cpuMillis: 1000, memoryMB: 1024 }, replicas: [] }),
      })
      return { status: r.status, body: (await r.json()) as { error?: { message: string } } }
    }
    const listed = async () => (JSON.parse((await runMuster(['nodes', 'list', '--json'], { env })).stdout) as { nodes: { name: string; state: string }[] }).nodes

    expect((await beat('l9')).status).toBe(200)
    expect((await beat('l8')).status).toBe(200)
    expect((await listed()).find((n) => n.name === 'l9')?.state).toBe('ready')
    expect((await runMuster(['nodes', 'revoke', 'l9'], { env })).code).toBe(0)
    expect((await beat('l9')).status).toBe(403)
    const removed = await runMuster(['nodes', 'remove', 'l9'], { env })
    expect(removed.code).toBe(0)
    // The attack: the next shared-token heartbeats (the machine still runs its old Agent).
    for (let i = 0; i < 3; i++) {
      const again = await beat('l9')
      expect(again.status).toBe(403)
      expect(again.body.error?.message).toContain('was removed')
    }
    expect((await listed()).map((n) => n.name)).toEqual(['l8'])
    expect(serve.log().match(/legacy node l9 registered/g)).toHaveLength(1)
    // Other legacy nodes are untouched, and a new name still registers.
    expect((await beat('l8')).status).toBe(200)
    expect((await beat('l10')).status).toBe(200)
    // Reusing the name on purpose (--replace clears the reservation) lets it back.
    if (auth === 'both') {
      expect((await runMuster(['nodes', 'enroll-token', 'l9', '--replace'], { env })).code).toBe(0)
      expect((await beat('l9')).status).toBe(200)
    }
  })
})
