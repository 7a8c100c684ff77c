// Enrolls per second against the compiled Platform, next to a bare Bun.serve
// returning a body of the same size, both driven from this process over loopback.
//   bun run build && bun bench/enroll.ts [--count 6000] [--connections 64]
import { generateKeyAndCert } from '../src/crypto/x509.ts'
import { signEnrollProof } from '../src/crypto/enroll-proof.ts'
import { drive, peakRssMB, report, startBare, startPlatform } from './lib.ts'

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(`--${name}`)
  return i > 0 ? Number(process.argv[i + 1]) : dflt
}
const count = arg('count', 6000)
const connections = arg('connections', 64)

process.stdout.write(`making ${count} agent certificates… `)
const certs: { certPem: string; keyPem: string }[] = []
for (let i = 0; i < count; i++) certs.push(await generateKeyAndCert({ commonName: `b${i}`, dnsNames: [], ipAddresses: ['127.0.0.1'], days: 30 }))
process.stdout.write('done\n')

const platform = await startPlatform(['--enroll-rate', '1000000', '--enroll-burst', '1000000', '--enroll-in-flight', '100000'])
try {
  const res = await fetch(`${platform.url}/api/v1/join-tokens`, {
    method: 'POST',
    headers: { authorization: `Bearer ${platform.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ maxUses: count, ttlMinutes: 60 }),
  })
  const { token } = (await res.json()) as { token: string }
  // Every enroll proves possession of its key (SPEC §16.4); signed up front so the client's cost stays out of the figure.
  const bodies = certs.map(({ certPem, keyPem }, i) => JSON.stringify({ token, nodeId: `bench-${i}`, certPem, version: '0.1.0', ...signEnrollProof({ keyPem, certPem, nodeId: `bench-${i}`, token }) }))
  const body = (i: number) => bodies[i]!
  const sample = await fetch(`${platform.url}/api/v1/nodes/enroll`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: body(0) })
  const answer = await sample.text()
  const muster = await drive({
    connections,
    total: count - 1,
    maxMs: 60_000,
    request: (i) => ({ url: `${platform.url}/api/v1/nodes/enroll`, init: { method: 'POST', headers: { 'content-type': 'application/json' }, body: body(i + 1) } }),
  })
  const rss = peakRssMB(platform.pid)
  const bare = await startBare(answer)
  let bareResult
  try {
    bareResult = await drive({
      connections,
      total: count - 1,
      maxMs: 60_000,
      request: (i) => ({ url: `${bare.url}/`, init: { method: 'POST', headers: { 'content-type': 'application/json' }, body: body(i + 1) } }),
    })
  } finally {
    await bare.stop()
  }
  console.log(`enroll benchmark: ${count} enrolls, ${connections} connections, one fleet token`)
  console.log(report('muster enroll', muster))
  console.log(report('bare Bun.serve', bareResult))
  console.log(`ratio ${(muster.perSecond / bareResult.perSecond).toFixed(2)}   Platform peak RSS ${rss.toFixed(0)} MB`)
} finally {
  await platform.stop()
}
