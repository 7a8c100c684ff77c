// Heartbeats per second against the compiled Platform, next to a bare
// Bun.serve; then the Platform's RSS with 100,000 registered nodes.
//   bun run build && bun bench/heartbeat.ts [--nodes 1000] [--beats 60000] [--connections 64] [--registry 100000]
import { Database } from 'bun:sqlite'
import { generateKeyAndCert } from '../src/crypto/x509.ts'
import { signEnrollProof } from '../src/crypto/enroll-proof.ts'
import { drive, peakRssMB, report, rssMB, startBare, startPlatform } from './lib.ts'

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(`--${name}`)
  return i > 0 ? Number(process.argv[i + 1]) : dflt
}
const nodes = arg('nodes', 1000)
const beats = arg('beats', 60000)
const connections = arg('connections', 64)
const registry = arg('registry', 100_000)

const platform = await startPlatform(['--enroll-rate', '1000000', '--enroll-burst', '1000000'])
let stopped = false
try {
  const res = await fetch(`${platform.url}/api/v1/join-tokens`, {
    method: 'POST',
    headers: { authorization: `Bearer ${platform.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ maxUses: nodes }),
  })
  const { token } = (await res.json()) as { token: string }
  const credentials: string[] = []
  for (let i = 0; i < nodes; i++) {
    const { certPem, keyPem } = await generateKeyAndCert({ commonName: `hb${i}`, dnsNames: [], ipAddresses: ['127.0.0.1'], days: 30 })
    const proof = signEnrollProof({ keyPem, certPem, nodeId: `hb-${i}`, token })
    const r = await fetch(`${platform.url}/api/v1/nodes/enroll`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token, nodeId: `hb-${i}`, certPem, version: '0.1.0', ...proof }) })
    credentials.push(((await r.json()) as { credential: string }).credential)
  }
  const body = JSON.stringify({ version: '0.1.0', capacity: { cpuMillis: 2000, memoryMB: 4096 }, replicas: [] })
  const sample = await fetch(`${platform.url}/api/v1/nodes/register`, { method: 'POST', headers: { authorization: `Bearer ${credentials[0]}`, 'content-type': 'application/json' }, body })
  const answer = await sample.text()
  const muster = await drive({
    connections,
    total: beats,
    maxMs: 60_000,
    request: (i) => ({ url: `${platform.url}/api/v1/nodes/register`, init: { method: 'POST', headers: { authorization: `Bearer ${credentials[i % nodes]}`, 'content-type': 'application/json' }, body } }),
  })
  const rss = peakRssMB(platform.pid)
  const bare = await startBare(answer)
  let bareResult
  try {
    bareResult = await drive({ connections, total: beats, maxMs: 60_000, request: () => ({ url: `${bare.url}/`, init: { method: 'POST', headers: { authorization: `Bearer ${credentials[0]}`, 'content-type': 'application/json' }, body } }) })
  } finally {
    await bare.stop()
  }
  console.log(`heartbeat benchmark: ${nodes} enrolled nodes, ${beats} heartbeats, ${connections} connections`)
  console.log(report('muster heartbeat', muster))
  console.log(report('bare Bun.serve', bareResult))
  console.log(`ratio ${(muster.perSecond / bareResult.perSecond).toFixed(2)}   Platform peak RSS ${rss.toFixed(0)} MB`)

  // Registry size: stop, add registered nodes straight into the store (as
  // enrolled rows with distinct certificate hashes), start again, list them all.
  const dataDir = platform.dataDir
  const bin = `${import.meta.dir}/../dist/muster`
  await new Promise((r) => setTimeout(r, 1500))
  process.kill(platform.pid, 'SIGTERM')
  while (Bun.spawnSync(['kill', '-0', String(platform.pid)]).exitCode === 0) await Bun.sleep(50)
  stopped = true
  const db = new Database(`${dataDir}/muster.db`)
  const insert = db.query("INSERT INTO nodes (name, auth, cert_sha256, cert_pem, url, token_id, version, enrolled_at) VALUES (?1, 'enrolled', ?2, NULL, NULL, NULL, '0.1.0', ?3)")
  db.transaction(() => {
    for (let i = 0; i < registry - nodes; i++) insert.run(`reg-${i}`, new Bun.CryptoHasher('sha256').update(`reg-${i}`).digest('hex'), Date.now())
  })()
  db.close()
  const p = Bun.spawn([bin, 'serve', '--data-dir', dataDir, '--port', '0', '--remote-dispatch', '--no-local-node'], { stdout: 'pipe', stderr: 'pipe', env: { ...process.env, MUSTER_LOG_LEVEL: '3' } })
  let out = ''
  void (async () => {
    for await (const c of p.stderr) out += new TextDecoder().decode(c)
  })()
  while (!/listening on (http:\/\/\S+)/.test(out)) await Bun.sleep(20)
  const url = out.match(/listening on (http:\/\/\S+)/)![1]!
  const t0 = performance.now()
  const list = (await (await fetch(`${url}/api/v1/nodes`, { headers: { authorization: `Bearer ${platform.token}` } })).json()) as { nodes: unknown[] }
  const listMs = performance.now() - t0
  // heartbeats from the enrolled nodes keep flowing while the registry is large
  const more = await drive({ connections, total: 20_000, maxMs: 30_000, request: (i) => ({ url: `${url}/api/v1/nodes/register`, init: { method: 'POST', headers: { authorization: `Bearer ${credentials[i % nodes]}`, 'content-type': 'application/json' }, body } }) })
  console.log(`registry: ${list.nodes.length} nodes listed in ${listMs.toFixed(0)} ms; RSS ${rssMB(p.pid).toFixed(0)} MB now, peak ${peakRssMB(p.pid).toFixed(0)} MB`)
  console.log(report('heartbeat @ registry', more))
  p.kill('SIGTERM')
  await p.exited
} finally {
  if (!stopped) await platform.stop()
  else Bun.spawnSync(['rm', '-rf', platform.dataDir])
}
