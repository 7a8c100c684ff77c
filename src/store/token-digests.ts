// The one-time upgrade to keyed token digests (src/crypto/token-digest.ts).
// Rows that older versions wrote hold the plain SHA-256 of their secret; they
// are re-keyed in place, in one transaction, the first time a Platform (or a
// host command) of this version opens the store, and token_digest_state
// records that it happened. After that, a row holding a plain SHA-256 is never
// re-keyed again: it authenticates nothing.
//
// Everything in the store can be written by whoever the re-key is meant to
// stop, the record too. So the re-key also never runs once any keyed row
// exists: to make it run again, a writer would have to delete the record AND
// every token and session of the Platform (which ends every login), and wait
// for a restart. Federation tokens keep their fingerprint (derived from the
// plain SHA-256, which both sides of a membership compute) in a column of its own.
import { KEYED_PREFIX, keyedDigest, tokenDigestKey } from '../crypto/token-digest.ts'
import { tokenFingerprint } from '../wire/federation-formats.ts'
import { log } from '../log.ts'
import type { Db } from './db.ts'

/** Every table whose rows are found by a secret: its key column and the digest column. */
const TABLES = [
  { table: 'api_tokens', key: 'id', digest: 'secret_hash' },
  { table: 'sessions', key: 'id_hash', digest: 'id_hash' },
  { table: 'join_tokens', key: 'id', digest: 'secret_hash' },
  { table: 'federation_tokens', key: 'office_id', digest: 'secret_hash' },
] as const

/** Re-keys the rows an older version wrote, once; the number re-keyed. */
export async function rekeyTokenDigests(store: Db, masterKey: Uint8Array, now: number): Promise<number> {
  if (await store.get('SELECT 1 FROM token_digest_state WHERE id = 1')) return 0
  const key = tokenDigestKey(masterKey)
  const rekeyed = await store.tx(async (t) => {
    const plain: { table: (typeof TABLES)[number]; key: string; digest: string }[] = []
    let keyed = 0
    for (const table of TABLES) {
      for (const r of await t.all<{ k: string; d: string }>(`SELECT ${table.key} AS k, ${table.digest} AS d FROM ${table.table}`)) {
        if (r.d.startsWith(KEYED_PREFIX)) keyed++
        else plain.push({ table, key: r.k, digest: r.d })
      }
    }
    let n = 0
    if (keyed === 0) {
      for (const p of plain) {
        const next = keyedDigest(key, p.digest)
        // Compare-and-set: another Platform re-keying at the same moment changes each row once.
        if (p.table.table === 'federation_tokens') {
          n += await t.run('UPDATE federation_tokens SET secret_hash = ?1, fingerprint = COALESCE(fingerprint, ?2) WHERE office_id = ?3 AND secret_hash = ?4', next, tokenFingerprint(p.key, p.digest), p.key, p.digest)
        } else {
          n += await t.run(`UPDATE ${p.table.table} SET ${p.table.digest} = ?1 WHERE ${p.table.key} = ?2 AND ${p.table.digest} = ?3`, next, p.key, p.digest)
        }
      }
    } else if (plain.length > 0) {
      log.warn(`${plain.length} token or session row(s) in the store hold an unkeyed digest although keyed ones exist: they were not written by muster and authenticate nothing (not re-keyed)`)
    }
    await t.run('INSERT INTO token_digest_state (id, keyed_at) VALUES (1, ?1) ON CONFLICT(id) DO NOTHING', now)
    return n
  })
  if (rekeyed > 0) log.info(`token digests: ${rekeyed} API token, session, join token and office token digest(s) re-keyed under platform/master.key`)
  return rekeyed
}
