// Replacing the Platform CA on purpose (before its 10 years are up, or after
// a key compromise), without a re-join, in two host-local steps:
//   1. prepare: a new CA waits in the vault's `ca-next/`; the running Platform
//      re-reads the vault within a minute and names the new pin in every trust
//      answer, so each node learns it at its daily refresh;
//   2. promote (two days later at the earliest, so every running node has
//      refreshed): the new CA becomes the CA (the old one is kept in
//      `ca-previous/`); the running Platform issues its server certificates
//      from it, and nodes, already holding its pin, carry on.
import { generateCa } from '../crypto/ca.ts'
import { parseCertificate } from '../crypto/x509.ts'
import { MusterError } from '../errors.ts'
import type { Vault } from '../context/vault.ts'
import { CA_SLOTS, readCa, type PlatformCa } from './platform-ca.ts'

/** How long a prepared CA waits before it may be promoted: nodes refresh trust daily. */
export const PROMOTE_AFTER_MS = 2 * 86_400_000
const files = (slot: string) => ({ cert: `${slot}/cert.pem`, key: `${slot}/key.pem` })

export interface Prepared {
  current: string
  next: string
  preparedAt: string
  promotableAt: string
}

/** Step 1: makes the next CA. Refuses when one is already prepared. */
export async function prepareNextCa(vault: Vault, now: number): Promise<Prepared> {
  const current = await readCa(vault)
  if (!current) throw new MusterError('not-configured', 'This data directory has no Platform CA yet: start `muster serve` once first.')
  const waiting = await readCa(vault, 'next')
  if (waiting) throw new MusterError('conflict', `A next CA (${waiting.pin}) is already prepared: promote it with \`muster admin ca promote\`.`)
  const fresh = await generateCa(undefined, now)
  const f = files(CA_SLOTS.next)
  if (!(await vault.create(f.key, fresh.keyPem))) throw new MusterError('conflict', 'Another `admin ca prepare` is running.')
  await vault.put(f.cert, fresh.certPem)
  const next = (await readCa(vault, 'next'))!
  return { current: current.pin, next: next.pin, preparedAt: new Date(now).toISOString(), promotableAt: new Date(now + PROMOTE_AFTER_MS).toISOString() }
}

/** When the prepared CA was made (its certificate starts five minutes before). */
function preparedAt(ca: PlatformCa): number {
  return parseCertificate(ca.certPem).notBefore.getTime() + 5 * 60_000
}

/** Step 2: the prepared CA becomes the CA. Refuses before two days have passed unless `force`. */
export async function promoteNextCa(vault: Vault, now: number, force = false): Promise<{ previous: string; current: string }> {
  const current = await readCa(vault)
  const next = await readCa(vault, 'next')
  if (!current || !next) throw new MusterError('not-configured', 'No next CA is prepared: run `muster admin ca prepare` first.')
  const ready = preparedAt(next) + PROMOTE_AFTER_MS
  if (now < ready && !force) {
    throw new MusterError(
      'conflict',
      `The next CA was prepared less than two days ago: nodes learn its pin at their daily trust refresh. Promote after ${new Date(ready).toISOString()}, or add --force (nodes that have not refreshed since the prepare must then join again).`,
    )
  }
  const prev = files(CA_SLOTS.previous)
  await vault.put(prev.key, current.keyPem)
  await vault.put(prev.cert, current.certPem)
  const cur = files(CA_SLOTS.current)
  await vault.put(cur.key, next.keyPem)
  await vault.put(cur.cert, next.certPem)
  const n = files(CA_SLOTS.next)
  await vault.delete(n.cert)
  await vault.delete(n.key)
  return { previous: current.pin, current: next.pin }
}
