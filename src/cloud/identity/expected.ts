// Expected machines (docs/cloud.md): when the Platform creates a machine at a
// cloud that signs who it is, it first records what that cloud will attest —
// provider, account, region, the machine's name, the create's idempotency token
// and its creation window — and fills in the attested id once the create
// answers. One identity join consumes the record; a rebind of the node makes a
// new one for the same machine.
import { randomId } from '../../crypto/tokens.ts'
import { insertExpected, latestExpected, noteAttested, revokeExpected } from '../../store/cloud-expected.ts'
import type { ProvisionRow } from '../../store/cloud-provisions.ts'
import type { Db } from '../../store/db.ts'
import type { CloudProvider, Machine } from '../provider.ts'
import type { ProviderName } from '../../wire/cloud.ts'

/** The providers whose machines join by what their cloud signs: their first-boot data holds no secret. */
export const IDENTITY_CLOUDS: readonly ProviderName[] = ['aws', 'gcp', 'azure']
export const signsIdentity = (p: string): boolean => (IDENTITY_CLOUDS as readonly string[]).includes(p)

/** Records (before the create) what the provision's machine will attest; replaces any open record of the name. */
export async function expectMachine(db: Db, row: ProvisionRow, provider: CloudProvider, now: number, deadline: number): Promise<void> {
  await db.tx(async (t) => {
    await revokeExpected(t, row.name, now)
    await insertExpected(t, {
      id: `exp-${randomId(12)}`,
      provision_id: row.id,
      node_name: row.name,
      provider: row.provider,
      account: provider.identityAccount?.() ?? null,
      region: row.region,
      machine_name: row.name,
      attested_id: null,
      request_id: row.request_id,
      window_start: now,
      window_end: deadline,
      created_at: now,
      expires_at: deadline,
    })
  })
}

/** What the create (or a later look) answered about the machine: its attested id and account, kept once. */
export async function noteMachine(db: Db, provisionId: string, m: Machine): Promise<void> {
  if (m.attestedId || m.account) await noteAttested(db, provisionId, m.attestedId ?? null, m.account ?? null)
}

/** A rebind of a node that joined by its cloud identity: the same machine may join once more, until `until`. */
export async function expectAgain(db: Db, nodeName: string, now: number, until: number): Promise<boolean> {
  const last = await latestExpected(db, nodeName)
  if (!last || last.consumed_at === null) return false
  await revokeExpected(db, nodeName, now)
  await insertExpected(db, { ...last, id: `exp-${randomId(12)}`, window_end: until, created_at: now, expires_at: until })
  return true
}
