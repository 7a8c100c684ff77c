// What every runner of replicas decides before it starts one, the same for an
// Agent and for the Platform's own node (docs/security.md, "Replica
// isolation"): the cgroup subtree each replica gets a cgroup under (with its
// limits), then who replicas run as (a uid per project where the runner can
// switch users; root only when told by name), both recorded for doctor.
import type { DataDir } from '../datadir.ts'
import { log } from '../log.ts'
import { tunable } from '../tunables.ts'
import { Cgroups, type CgroupsFound } from './cgroups.ts'
import { decideIsolation, type Isolation, type ReplicaPlace, type RunAsFor } from './isolation.ts'

export interface Containment {
  cgroups: Cgroups | null
  runAs: RunAsFor
  isolation: Isolation
}

/** Finds the cgroups and decides who replicas run as, for the runner `place` describes; `runAsFlag` is its --run-as. */
export async function containReplicas(dataDir: DataDir, runAsFlag: string | undefined, place: ReplicaPlace): Promise<Containment> {
  const contained: CgroupsFound = tunable('MUSTER_AGENT_CGROUPS') === 'off' ? { cgroups: null, reason: 'MUSTER_AGENT_CGROUPS=off', limitsReason: 'no cgroups' } : Cgroups.find(place.cgroupId)
  if (!contained.cgroups) log.warn(`${place.label}replicas get no cgroup of their own (${contained.reason}): a stop reaches their process group and their project's uid`)
  else if (contained.limitsReason) log.warn(`${place.label}replicas each get a cgroup, but --cpu and --memory are not enforced: ${contained.limitsReason}`)
  const { runAs, isolation } = await decideIsolation(dataDir, runAsFlag, contained, place)
  return { cgroups: contained.cgroups, runAs, isolation }
}
