// Store seeding that leaves exactly what N enrollments through one fleet token
// leave (src/fabric/enroll.ts), written while the Platform is stopped:
// - a node row per node: auth 'enrolled', the certificate and its SHA-256, no
//   address, the token's id, the version, the enroll time, generation 1;
// - the token's uses raised by N;
// - the audit's newest 500 'enrolled' entries (enroll prunes to 500 anyway).
// Credentials are not stored anywhere: each is computed from master.key, as
// the Platform computes it (src/fabric/credentials.ts).
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { NodeCredentials } from '../src/fabric/credentials.ts'
import { openStore } from '../src/store/db.ts'
import { AUDIT_MAX_ENTRIES } from '../src/store/enroll-audit.ts'
import { VERSION } from '../src/version.ts'
import type { Identity } from './identities.ts'
import { tokenIdOf } from './identities.ts'

/** `store`: the store's URL when it is not the data directory's SQLite file (a PostgreSQL store, bench/ha.ts). */
export async function seedFleet(dataDir: string, token: string, names: string[], ids: Identity[], now = Date.now(), store_ = join(dataDir, 'muster.db')): Promise<string[]> {
  const store = await openStore(store_)
  const tokenId = tokenIdOf(token)
  try {
    await store.tx(async (t) => {
      const CHUNK = 400
      for (let i = 0; i < names.length; i += CHUNK) {
        const rows = names.slice(i, i + CHUNK).map((name, j) => [name, ids[i + j]!.sha256, ids[i + j]!.certPem, tokenId, VERSION, now])
        const values = rows.map((_, r) => `(?${r * 6 + 1}, 'enrolled', ?${r * 6 + 2}, ?${r * 6 + 3}, NULL, ?${r * 6 + 4}, ?${r * 6 + 5}, ?${r * 6 + 6})`).join(', ')
        await t.run(`INSERT INTO nodes (name, auth, cert_sha256, cert_pem, url, token_id, version, enrolled_at) VALUES ${values}`, ...rows.flat())
      }
      if ((await t.run('UPDATE join_tokens SET uses = uses + ?2 WHERE id = ?1 AND uses + ?2 <= max_uses', tokenId, names.length)) !== 1) throw new Error('the fleet token has too few uses left')
      for (const name of names.slice(-AUDIT_MAX_ENTRIES)) await t.run("INSERT INTO enroll_audit (at, outcome, reason, node_id, version) VALUES (?1, 'enrolled', NULL, ?2, ?3)", now, name, VERSION)
    })
  } finally {
    await store.close()
  }
  const credentials = new NodeCredentials(new Uint8Array(readFileSync(join(dataDir, 'platform', 'master.key'))))
  return names.map((name, i) => credentials.issue(name, ids[i]!.sha256, 1))
}
