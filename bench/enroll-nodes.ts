// Enrolls N nodes through the real enroll route (distinct keys, certificates
// and proofs of key, one fleet token) and writes their credentials, one a line.
//   bun bench/enroll-nodes.ts --url URL --data-dir D --nodes N --out FILE
// (the Platform must run with a high --enroll-rate/--enroll-burst).
import { writeFileSync } from 'node:fs'
import { enrollBody, identities } from './identities.ts'
import { ROOT } from './lib.ts'

export async function adminToken(dataDir: string): Promise<string> {
  const minted = Bun.spawnSync([`${ROOT}/dist/muster`, 'admin', 'api-token', '--data-dir', dataDir, '--json'])
  if (minted.exitCode !== 0) throw new Error(`admin api-token: ${minted.stderr.toString()}`)
  return (JSON.parse(minted.stdout.toString()) as { token: string }).token
}

export async function fleetToken(url: string, admin: string, maxUses: number): Promise<string> {
  const res = await fetch(`${url}/api/v1/join-tokens`, {
    method: 'POST',
    headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
    body: JSON.stringify({ maxUses, ttlMinutes: 600 }),
  })
  if (!res.ok) throw new Error(`join token: ${res.status} ${await res.text()}`)
  return ((await res.json()) as { token: string }).token
}

/** Enrolls `count` nodes named `${prefix}${i}`; returns their credentials in order. */
export async function enrollNodes(opts: { url: string; admin: string; count: number; prefix?: string; connections?: number; log?: (s: string) => void }): Promise<string[]> {
  const log = opts.log ?? (() => {})
  const prefix = opts.prefix ?? 'node-'
  const ids = await identities(opts.count, log)
  const token = await fleetToken(opts.url, opts.admin, opts.count)
  const credentials = new Array<string>(opts.count)
  let next = 0
  const started = performance.now()
  const worker = async () => {
    for (;;) {
      const i = next++
      if (i >= opts.count) return
      const body = enrollBody(token, `${prefix}${i}`, ids[i]!)
      for (let attempt = 0; ; attempt++) {
        const res = await fetch(`${opts.url}/api/v1/nodes/enroll`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
        const text = await res.text()
        if (res.ok) {
          credentials[i] = (JSON.parse(text) as { credential: string }).credential
          break
        }
        if (res.status !== 429 || attempt > 100) throw new Error(`enroll ${prefix}${i}: ${res.status} ${text}`)
        await Bun.sleep(50)
      }
      if (i > 0 && i % 10_000 === 0) log(`${i} enrolled (${((performance.now() - started) / 1000).toFixed(0)} s) `)
    }
  }
  await Promise.all(Array.from({ length: opts.connections ?? 64 }, worker))
  log(`${opts.count} enrolled in ${((performance.now() - started) / 1000).toFixed(1)} s\n`)
  return credentials
}

if (import.meta.main) {
  const arg = (name: string) => {
    const i = process.argv.indexOf(`--${name}`)
    if (i < 0 || !process.argv[i + 1]) throw new Error(`--${name} is required`)
    return process.argv[i + 1]!
  }
  const creds = await enrollNodes({ url: arg('url'), admin: await adminToken(arg('data-dir')), count: Number(arg('nodes')), log: (s) => process.stderr.write(s) })
  writeFileSync(arg('out'), `${creds.join('\n')}\n`)
}
