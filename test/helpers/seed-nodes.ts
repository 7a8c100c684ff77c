// Many registered nodes at once, written into a store the way enrollment
// writes them (auth 'enrolled', a distinct certificate hash, a fleet token id,
// the version), for listings at fleet size. `kind` picks each node's state:
// ready (seen now), unreachable (seen an hour ago), enrolled (never seen) or revoked;
// `labels` (optional) the labels a node reported at enroll.
import type { Db } from '../../src/store/db.ts'
import { labelsToJson } from '../../src/wire/labels.ts'

const labelsJson = (l: Record<string, string> | null) => (l ? labelsToJson(l) : null)

export type SeedKind = 'ready' | 'unreachable' | 'enrolled' | 'revoked'

export async function seedNodes(db: Db, names: string[], kind: (i: number) => SeedKind, now = Date.now(), labels: (i: number) => Record<string, string> | null = () => null): Promise<void> {
  const CHUNK = 500
  await db.tx(async (t) => {
    for (let i = 0; i < names.length; i += CHUNK) {
      const rows = names.slice(i, i + CHUNK).map((name, j) => {
        const k = kind(i + j)
        const seen = k === 'ready' || k === 'revoked' ? now : k === 'unreachable' ? now - 3600_000 : null
        return [name, new Bun.CryptoHasher('sha256').update(`seed ${name}`).digest('hex'), 'seedtokenid00000', '0.1.0', now - 86400_000, seen, seen === null ? null : 2000, seen === null ? null : 4096, seen === null ? null : '[]', k === 'revoked' ? now : null, labelsJson(labels(i + j))]
      })
      const values = rows.map((_, r) => `(?${r * 11 + 1}, 'enrolled', ${Array.from({ length: 10 }, (_, c) => `?${r * 11 + c + 2}`).join(', ')})`).join(', ')
      await t.run(`INSERT INTO nodes (name, auth, cert_sha256, token_id, version, enrolled_at, last_seen_at, cpu_millis, memory_mb, replicas, revoked_at, labels) VALUES ${values}`, ...rows.flat())
    }
  })
}
