// Pre-made enroll bodies for wrk: one fleet token for all, and per body a
// distinct agent key, certificate and proof of key (docs/security.md), one JSON a line.
//   bun bench/enroll-bodies.ts --url URL --data-dir D --count N --out FILE [--prefix e-]
import { writeFileSync } from 'node:fs'
import { adminToken, fleetToken } from './enroll-nodes.ts'
import { enrollBody, identities } from './identities.ts'

const arg = (name: string, dflt?: string) => {
  const i = process.argv.indexOf(`--${name}`)
  const v = i > 0 ? process.argv[i + 1] : dflt
  if (v === undefined) throw new Error(`--${name} is required`)
  return v
}
const count = Number(arg('count'))
const prefix = arg('prefix', 'e-')
const ids = await identities(count, (s) => process.stderr.write(s))
const token = await fleetToken(arg('url'), await adminToken(arg('data-dir')), count)
const now = Date.now()
const lines: string[] = []
for (let i = 0; i < count; i++) lines.push(enrollBody(token, `${prefix}${i}`, ids[i]!, now))
writeFileSync(arg('out'), `${lines.join('\n')}\n`)
process.stderr.write(`${count} enroll bodies (distinct keys, certificates and proofs) in ${arg('out')}\n`)
