// Through dist/muster: anonymous junk used to wipe the
// audit (600 bad enrolls pushed every enrollment record out). Refusals now
// have a budget of their own (docs/security.md).
import { describe, expect, test } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { runMuster, startServe } from '../helpers/binary.ts'
import { newCert } from '../helpers/certs.ts'
import { tmpDir } from '../helpers/tmp.ts'

describe('audit flood through dist/muster', () => {
  test('650 bad enrolls leave the enrollment records in the audit', { timeout: 90_000 }, async () => {
    using dir = tmpDir()
    const data = `${dir.path}/data`
    await using serve = await startServe(data, ['--remote-dispatch'])
    const minted = JSON.parse((await runMuster(['admin', 'api-token', '--data-dir', data, '--json'])).stdout) as { token: string }
    const env = { MUSTER_URL: serve.url, MUSTER_TOKEN: minted.token }
    for (const name of ['w1', 'w2']) {
      const { token } = JSON.parse((await runMuster(['nodes', 'enroll-token', name, '--json'], { env })).stdout) as { token: string }
      const cert = await newCert(name)
      writeFileSync(`${dir.path}/${name}.crt`, cert.certPem)
      writeFileSync(`${dir.path}/${name}.key`, cert.keyPem, { mode: 0o600 })
      writeFileSync(`${dir.path}/${name}.token`, token, { mode: 0o600 })
      const r = await runMuster(['nodes', 'enroll', name, '--enrollment-token-file', `${dir.path}/${name}.token`, '--cert-file', `${dir.path}/${name}.crt`, '--key-file', `${dir.path}/${name}.key`, '--agent-url', 'https://127.0.0.1:7381', '--json'], { env })
      expect(r.code).toBe(0)
    }
    const certPem = (await newCert()).certPem
    const junk = (i: number) =>
      fetch(`${serve.url}/api/v1/nodes/enroll`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: i % 4 === 0 ? '{"token":1}' : JSON.stringify({ token: `mjt_${'a'.repeat(16)}.${'A'.repeat(43)}`, nodeId: `junk-${i}`, certPem, proofTime: 0, proof: 'x' }),
      })
    for (let start = 0; start < 650; start += 50) {
      const statuses = (await Promise.all(Array.from({ length: 50 }, (_, i) => junk(start + i)))).map((r) => r.status)
      expect(statuses.every((s) => s === 400 || s === 403)).toBe(true)
    }
    const audit = JSON.parse((await runMuster(['nodes', 'audit', '--json'], { env })).stdout) as { entries: { outcome: string; nodeId: string | null }[] }
    expect(audit.entries.filter((e) => e.outcome === 'enrolled').map((e) => e.nodeId).sort()).toEqual(['w1', 'w2'])
    expect(audit.entries.filter((e) => e.outcome === 'refused' || e.outcome === 'invalid')).toHaveLength(500)
  })
})
